#pragma once
// The fake provider's scenario: per model, the delays and faults it plants. Loaded from JSON;
// an unknown key or a bad value is an error naming its path in the file.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace infdoctor::fake {

// A fault the server plants on some requests of a model:
//   429, 503          the request is refused with that status (and Retry-After when given); the
//                     503 says the server is overloaded, in OpenAI's words
//   529               Anthropic's overloaded_error (and Retry-After when given)
//   endless_headers   header lines trickle out and never end
//   close_mid_stream  the connection is closed after `after_tokens` tokens
//   reset             the same, with a TCP reset
//   stall             the stream pauses `stall_ms` after `after_tokens` tokens
//   error_event       an error object arrives as a data event and the stream ends
//   garbage           `bytes` of binary junk instead of events, then the stream ends
//   invalid_json      a data event that is not JSON, then the stream goes on
//   huge_event        one content event of `bytes` bytes
struct FaultRule {
  std::string kind;
  int every = 0;           // every Nth request of the model (1 = all)
  int first = 0;           // the first N requests of the model
  double retry_after_s = -1;  // 429/503: Retry-After header; <0 = none
  int after_tokens = 0;    // mid-stream faults: after this many tokens
  double stall_ms = 0;     // stall: how long
  double bytes = 65536;    // garbage, huge_event: how many bytes
};
const std::vector<std::string>& fault_kinds();

struct ModelSpec {
  double overhead_ms = 0;            // fixed time before the first token
  double prefill_ms_per_token = 0;   // per prompt token
  // Prefill that grows faster than linearly (attention's quadratic term, KV-cache pressure): each
  // prompt token costs this much more per 1,000 tokens of prompt, so the prefill of P tokens is
  // (prefill_ms_per_token + this x P / 1000) x P.
  double prefill_growth_ms_per_1k_tokens = 0;
  // Prefix caching, as vLLM's and SGLang's block caches and llama.cpp's cache_prompt do: the
  // longest prefix (in whole blocks of this many tokens) shared with an earlier prompt to this
  // model costs no prefill and is reported as usage.prompt_tokens_details.cached_tokens
  // (Anthropic: cache_read_input_tokens). 0 = off.
  int prefix_cache_block_tokens = 0;
  // How long a cached block outlives its last use, idle, in seconds (hosted APIs evict a prefix
  // after minutes without a hit); 0 = never evicted.
  double prefix_cache_ttl_s = 0;
  // The context window: a prompt plus max_tokens beyond it is refused with 400
  // context_length_exceeded, in OpenAI's words. 0 = no limit.
  int context_tokens = 0;
  double decode_ms_per_token = 0;    // per output token after the first
  double jitter_ms = 0;              // uniform +-jitter added to the first-token time
  std::optional<int> output_tokens;  // the model stops here if max_tokens is larger
  double cold_idle_s = 0;            // idle time after which the next request is cold (0 = never)
  double cold_penalty_ms = 0;
  bool cold_at_start = false;        // the first request of the server's life is cold
  // Scale-to-zero behind a gateway that answers while the model loads (Hugging Face's endpoints,
  // KServe): a cold request starts a load of this many seconds, and until it ends every request
  // is refused with 503 {"error": "Model M is currently loading", "estimated_time": seconds left}.
  // Once loaded, the model serves warm. 0 = a cold request waits out cold_penalty_ms instead.
  double cold_loading_s = 0;
  int slots = 0;                     // requests served at once; the rest wait FIFO (0 = no limit)
  double parse_ms_per_kb = 0;        // cost of reading the request body
  int tokens_per_event = 1;          // tokens carried by one SSE event
  double flush_interval_ms = 0;      // a buffering proxy: events leave on this grid
  bool timing_headers = false;       // x-queue-time, server-timing, openai-processing-ms
  bool role_chunk = true;            // a role-only first chunk, sent with the headers
  // The model's tokenizer against the prompt's words: tokens a word (1: each word one token, as
  // common English words are in the vocabularies providers serve) and the chat template's tokens.
  double prompt_tokens_per_word = 1;
  int template_tokens = 0;
  // A stream without usage even when stream_options.include_usage asks for it, as several servers
  // and gateways send it; a whole answer carries usage all the same.
  bool stream_usage = true;
  // SSE comment lines (": keep-alive") this often, from the headers on, before the first token too.
  double comment_every_ms = 0;
  // Connection: close on every answer (a gateway that does not keep connections): each request
  // opens a new connection, through a proxy a new tunnel.
  bool close_connections = false;
  // Instead of words, each content event carries "ARRIVED/SENT;": the steady-clock microseconds at
  // which the request arrived and the event was written, so a benchmark can tell the fake's own
  // scheduling from the error of the client that timed it (both share CLOCK_MONOTONIC).
  bool stamp_tokens = false;
  // What real engines do under a healthy load, and what they do when they are not healthy:
  // Decode that slows as the context grows (each token's attention reads every earlier token's
  // keys and values): every output token costs this much more per 1,000 prompt tokens.
  double decode_ms_per_1k_context = 0;
  // The answer's own tokens as context: each output token costs this much more per 1,000 tokens
  // generated before it in the same answer, so a long answer's pace slows as it goes.
  double decode_ms_per_1k_output = 0;
  // Continuous batching: with `slots` sequences, each sequence decoding beside n-1 others spends
  // (1 + batch_decode_penalty x (n-1)) times as long per token (0: batching is free).
  double batch_decode_penalty = 0;
  // A heavy tail: this fraction of requests (drawn from the seed) runs tail_factor times slower,
  // to the first token and per token.
  double tail_fraction = 0;
  double tail_factor = 1;
  // Periodic slowdowns: for slow_for_s out of every slow_every_s (at a phase drawn from the seed),
  // the model runs slow_factor times slower, as on a GPU shared with bursty tenants: every token
  // made inside a window, so a request that a window begins or ends in changes speed mid-stream.
  double slow_every_s = 0;
  double slow_for_s = 0;
  double slow_factor = 1;
  // An L7 balancer over `replicas` copies of the model, each request sent to one drawn at random
  // (from the seed); the first runs slow_replica_factor times slower, to the first token and per
  // token (a throttled or older GPU). The slowness follows the request, not the clock. With
  // replica_header, each answer names its replica ("replica-1" ...), as x-served-by does.
  int replicas = 0;
  double slow_replica_factor = 1;
  std::string replica_header;
  // A token bucket of requests: bucket_size at once, refilled at bucket_per_s; a request finding
  // it empty is refused with 429, Retry-After and retry-after-ms saying when a token is back.
  // Steady traffic under the rate never meets it; a burst does. 0 = no bucket.
  double bucket_size = 0;
  double bucket_per_s = 0;
  // A quota of tokens per minute, as OpenAI's TPM: a bucket of tokens_per_min refilled at
  // tokens_per_min / 60 a second; each request takes its prompt tokens plus max_tokens. A request
  // that does not fit is refused with 429 "on tokens per min (TPM)", in OpenAI's words, with
  // Retry-After; every answer carries x-ratelimit-limit-tokens and x-ratelimit-remaining-tokens.
  double tokens_per_min = 0;
  // Reasoning: the model thinks this many tokens, at its decode speed, before its answer; usage
  // counts them in completion_tokens (completion_tokens_details.reasoning_tokens). Hidden, as
  // OpenAI's reasoning models do, unless reasoning_visible streams them first as reasoning_content
  // deltas (vLLM's and SGLang's reasoning parsers; Anthropic's thinking_delta).
  int reasoning_tokens = 0;
  bool reasoning_visible = false;
  // Scale-to-zero is cold_start with a long idle_s (60 s and more) and a penalty of seconds.
  // Parameters the model refuses with 400, in OpenAI's words for its reasoning models:
  // "max_tokens" (it wants max_completion_tokens) and "temperature" (only the default).
  std::vector<std::string> rejects;
  // Response headers sent with every answer, as a gateway in front adds them
  // (x-litellm-overhead-duration-ms, cf-aig-cache-status, ...).
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<FaultRule> faults;
};

struct Scenario {
  std::map<std::string, ModelSpec> models;
  int default_max_tokens = 16;
  double max_body_bytes = 0;  // a larger request body is refused with 413, as a gateway's limit (0: none)
  std::string api_key;  // when set, requests must carry it as a bearer token
  double tls_handshake_delay_ms = 0;  // a slow TLS terminator: wait before answering ClientHello
  std::uint64_t seed = 1;
};

core::Result<Scenario> parse_scenario(const std::string& json_text, const std::string& origin);
core::Result<Scenario> load_scenario(const std::string& path);

}  // namespace infdoctor::fake
