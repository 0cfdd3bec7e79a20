#pragma once
// One measured request, as probe prints it and as checks keep it for the evidence bundle.
// Phase definitions (DESIGN.md, "Measuring one request"):
//   dns_ms      libcurl namelookup
//   connect_ms  TCP connect, after DNS
//   tls_ms      TLS handshake, after connect (absent on plain HTTP)
//   request_sent_ms  the request headers (and a small body) written to the socket, from the start
//   ttfb_ms     first response byte, from the request's start (stamped by infdoctor)
//   ttft_ms     first SSE event carrying content, stamped on arrival, from the request's start
//   total_ms    last content event (end-to-end), not the usage chunk or [DONE]
//   tpot_ms     (last content - first content) / (output tokens - 1)
// DNS, connect and TLS are absent on a reused connection: they were not measured.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/openai.h"
#include "core/result.h"
#include "http/client.h"

namespace infdoctor::api {

// Where a request's output token count comes from: the server's usage, or the streamed text's
// bytes at a bytes-per-token ratio calibrated on the same model's answer that did carry usage.
// Without either the count is unknown: an event is not a token (engines send several an event).
inline constexpr const char* kTokensFromUsage = "usage";
inline constexpr const char* kTokensCalibrated = "calibrated";

struct RequestSample {
  std::string started_at;  // RFC 3339 UTC
  double sent_after_ms = 0;  // from its batch's start to its own (a schedule's arrival, a lane's turn)
  // The run's ledger (results/ledger.h): the request's place among the run's model requests (0 the
  // first; -1 outside a run), and what its sending measured: the requests in flight while it was,
  // itself included (http::Response::in_flight), and how long this model had been left idle
  // before it (since the last answer of the same model ended; absent for its first request).
  int seq = -1;
  int in_flight = 1;
  std::optional<double> idle_before_ms;
  std::string model;
  bool ok = false;
  std::string error;          // stable token when !ok
  std::string error_message;  // one line, with the provider's own message for HTTP errors
  std::string failed_phase;
  // A limit the answer stated, which is a fact about the endpoint and not a failure of it:
  // "body_size" (413) or "context_length" (400 context_length_exceeded). Empty otherwise.
  std::string limit;
  // A 400 refusing a parameter the run can rename or do without (api::refused_parameter):
  // "max_tokens" or "temperature". The pacer adapts and sends the request again.
  std::string refused_parameter;
  // A 503 whose body says the model is loading (Hugging Face's endpoints, KServe, scale-to-zero
  // gateways): the model is starting, not failing. The pacer waits it out and sends the request
  // again; the body's estimated_time (seconds), when it gives one, is kept.
  bool model_loading = false;
  // A 503 that says the provider is overloaded (OpenAI's "overloaded", "capacity"), or Anthropic's
  // 529 overloaded_error: a pool shedding load, not this account's quota (429) nor a model loading.
  bool overloaded = false;
  // A 429's quota, as its words or its headers name it: "tokens" (tokens per minute: OpenAI's TPM,
  // Anthropic's input or output tokens) or "requests" (requests per minute); empty when neither.
  std::string quota;
  std::optional<double> loading_estimate_s;
  // On the answer that came after such waits: the time from the first try's start to this try's
  // start, and how many "loading" answers came before it. The cold start the request paid.
  std::optional<double> loading_wait_ms;
  int loading_answers = 0;
  std::string loading_said;  // the first of those answers' message
  long http_status = 0;
  std::string http_version;
  std::string request_id;
  std::string trace_id;  // the W3C trace id this request's traceparent carried
  std::string remote_ip;
  std::string local_ip;  // the client's own address on the connection
  bool connection_reused = false;
  // The proxy the request went through (its URL without credentials; empty: direct), and on a new
  // connection through its tunnel, the tunnel's setup: from the TCP connect to the proxy to its
  // answer to CONNECT. connect_ms is then the connect to the proxy, tls_ms the handshake with the
  // server through the tunnel.
  std::string proxy;
  std::optional<double> tunnel_ms;
  std::optional<double> dns_ms, connect_ms, tls_ms, request_sent_ms, server_wait_ms, ttfb_ms, first_event_ms, ttft_ms,
      total_ms, transfer_ms, tpot_ms, output_tokens_per_s, events_per_token;
  // What the server says it spent on the request, from its own headers: openai-processing-ms, else
  // Server-Timing's `total`, else its longest span. A second source beside the client's clock.
  std::optional<double> server_processing_ms;
  std::optional<std::int64_t> prompt_tokens, output_tokens;
  std::optional<std::int64_t> cached_tokens;  // prompt tokens the provider served from its cache
  // A reasoning model's: of the output tokens, those it spent reasoning (usage); the first event
  // of its reasoning and of its answer; and the reasoning tokens usage counts that never arrived
  // (hidden reasoning: OpenAI's reasoning models stream only the answer).
  std::optional<std::int64_t> reasoning_tokens;
  std::optional<double> first_reasoning_ms, first_answer_ms;
  std::int64_t hidden_reasoning_tokens = 0;
  bool tokens_from_usage = false;
  std::string output_tokens_source;  // kTokensFromUsage, kTokensCalibrated, or empty: unknown
  std::string prompt_tokens_source;  // the same for prompt_tokens
  std::int64_t content_bytes = 0;    // bytes of the answer's text as it came
  int prompt_words = 0;              // a synthetic prompt's words as sent (0: not synthetic); repro.sh sends as many
  // What the check asked (api::ChatRequest), before the run sized the prompt's words or adapted a
  // parameter: a synthetic prompt's tokens (0: not synthetic), max_tokens (0: a body of the
  // user's own, which asks its own), streamed or not, the Accept-Encoding sent (empty: none) and
  // the body's padding. Answers that agree on all of them, to the same model, are answers to the
  // same request (api::same_request).
  int asked_prompt_tokens = 0;
  int asked_max_tokens = 0;
  bool asked_stream = true;
  std::string asked_accept_encoding;
  std::int64_t asked_pad_bytes = 0;
  std::size_t events = 0, content_events = 0, malformed_events = 0;
  std::size_t content_arrivals = 0;  // distinct moments content arrived: fewer than events when clumped
  std::vector<double> itl_ms;  // gaps between consecutive content events
  // The connection's TCP counters over this request (http/tcp_info.h): segments this end sent
  // again and segments that arrived past a hole, from before the request to after its last byte;
  // the smoothed round trip at the end.
  std::optional<std::int64_t> tcp_retransmits, tcp_out_of_order;
  std::optional<std::int64_t> tcp_loss_before_first_byte;  // of both, those before the first response byte
  std::optional<double> tcp_rtt_ms, tcp_rttvar_ms;
  // The gaps of a stream that arrived as generated, against the connection's loss counters. A
  // network stall is a gap across which they rose: the kernel held what came after a lost segment
  // until the peer sent it again (about a round trip, or a retransmission timeout). A stall is a
  // gap of kStallMinMs or more and kStallOverMedian times the median gap without such a sign: the
  // server's. Each costs its gap less the median gap.
  std::size_t stalls = 0, network_stalls = 0;
  double stall_ms = 0, network_stall_ms = 0;
  std::string finish_reason;
  std::int64_t bytes_sent = 0, bytes_received = 0;
  std::map<std::string, std::string> headers;  // the kept identifying and timing headers
  nlohmann::json server_timings;               // llama.cpp `timings` and the like, as sent
  std::map<std::string, double> server_timing_ms;  // the server-timing header: each metric's dur
  double client_parse_ms = 0;                  // infdoctor's own SSE and JSON parsing time
  std::optional<double> client_start_lag_ms;   // infdoctor's hand-off to libcurl's transfer start
};

// Records in `s` what `asked` asked (RequestSample::asked_*).
void record_asked(RequestSample& s, const ChatRequest& asked);
// Whether `s` answered a request like `r` but for max_tokens: the same model, a synthetic prompt of
// as many tokens asked (none shared with other requests, not a body of the user's own), the same
// streaming, Accept-Encoding and padding. Its first token and pace are readings of `r`'s.
bool same_prompt(const RequestSample& s, const ChatRequest& r);
// The same, and the same max_tokens: an answer to the same request.
bool same_request(const RequestSample& s, const ChatRequest& r);

// A request that the check's own deadline cut short (error "check_deadline"): a limit of the run,
// not of the endpoint. Like a stated limit, it is neither a failure nor a success.
inline constexpr const char* kCheckDeadline = "check_deadline";
// Whether a sample is a failure of the endpoint: not ok, and neither a stated limit nor cut short
// by the check's deadline.
inline bool is_failure(const RequestSample& s) { return !s.ok && s.limit.empty() && s.error != kCheckDeadline; }

// Whether the events of a stream arrived as they were sent: at least 0.3 separate arrivals per
// content event. Below that, something between held the stream and released several events in
// one clump (the buffering rules' bar), and its time per token times the clumps, not the decode.
// Per event, not per token: an engine that puts several tokens in one event (vLLM's
// --stream-interval, speculative decoding, Anthropic's deltas) sends each event as it is made.
inline constexpr double kClumpedBelowArrivalsPerEvent = 0.3;
// A stall: at least Linux's shortest retransmission timeout (TCP_RTO_MIN, 200 ms), the least a
// lost segment that no later one reveals costs, and four times the stream's median gap.
inline constexpr double kStallMinMs = 200;
inline constexpr double kStallOverMedian = 4;
bool arrived_as_generated(const RequestSample& s);
// Distinct moments content arrived, per content event: 1 for a stream passed on as sent.
std::optional<double> arrivals_per_event(const RequestSample& s);
// A clumped stream's own account of its clumps (nothing for a stream that arrived as generated
// or in a single clump). The last clump leaves when the stream ends, so from the first arrival to
// the last the clumps carry the tokens generated after the first clump: that span over those
// tokens is the generation time per token, and the first clump's other tokens were generated
// that long apart before it left with them: the first token's wait. A stream held whole left
// when it ended: from its first response byte (its start, when the headers were held too) to
// then, the model was generating; an upper bound, with the prefill in it.
struct Clumps {
  double generation_ms_per_token = 0;
  double first_token_wait_ms = 0;
};
std::optional<Clumps> clumps(const RequestSample& s);
// The output tokens that arrived: the count (usage's, or calibrated) less the hidden reasoning
// tokens; nothing when the count is unknown. Time per token and arrivals per token are over these.
std::optional<double> arrived_tokens(const RequestSample& s);
// The model ended the answer itself before `max_tokens`: its finish reason says so (OpenAI's
// "stop", Anthropic's "end_turn" or "stop_sequence"), or, where the answer gave none, the
// server's own count of output tokens is under max_tokens. A count estimated from the text is
// not enough to say so: it can fall a token short of a capped answer.
bool ended_by_itself(const RequestSample& s, double max_tokens);
// Gives a sample whose stream carried no usage its output token count from `source` (calibrated
// text), and what follows from it: time per token, tokens per second, events per token.
void count_output_tokens(RequestSample& s, double tokens, const std::string& source);
// The answer's text bytes per output token, on a sample whose count came from usage and whose
// text came whole; nothing otherwise. What count_output_tokens' calibration is made of.
std::optional<double> bytes_per_token(const RequestSample& s);
// Distinct moments content arrived, per token that arrived: 1 for a stream sent as generated, far
// under it for one held and released in clumps. Nothing without usage (the tokens are not known)
// or without a token.
std::optional<double> arrivals_per_token(const RequestSample& s);

// Builds the sample of a streamed request (stream != nullptr) or of a non-streamed one.
RequestSample make_sample(const http::Response& resp, const ChatStream* stream, const std::string& model,
                          Flavour flavour = Flavour::OpenAI);

nlohmann::json to_json(const RequestSample& s);
// A Server-Timing header (W3C): "db;dur=53, app;desc=\"x\";dur=47.2" -> {db: 53, app: 47.2}.
// Metrics without a dur are left out; a malformed one does not stop the others.
std::map<std::string, double> parse_server_timing(std::string_view header);
// One line for a log (--verbose): "HTTP/2 200, first token 212 ms, 1.40 s, 120+64 tokens" or the
// failure ("timeout in first_token: ...").
std::string one_line(const RequestSample& s);
// A sample as to_json wrote it (results.json, samples.jsonl); a field of the wrong type is an error.
core::Result<RequestSample> sample_from_json(const nlohmann::json& j);

}  // namespace infdoctor::api
