#pragma once
// OpenAI chat-completions flavour: request bodies, non-streamed responses, error bodies, and the
// streamed response as a BodySink that stamps every content event on arrival.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/flavour.h"
#include "core/clock.h"
#include "core/result.h"
#include "http/client.h"
#include "http/sse_parser.h"

namespace infdoctor::api {

// The Accept-Encoding the OpenAI and Anthropic SDKs send (httpx's default in Python, node-fetch's
// in Node): a proxy that compresses answers compresses theirs, and so infdoctor's.
inline constexpr const char* kSdkAcceptEncoding = "gzip, deflate";

struct ChatRequest {
  std::string model;
  std::string prompt;
  // A synthetic prompt's size as the check meant it, in the server's tokens: the run sizes the
  // prompt's words to it once it has learnt the model's tokens per word (run/pacer.h). 0: the
  // prompt goes as written.
  int prompt_tokens_wanted = 0;
  int max_tokens = 64;
  bool stream = true;
  bool include_usage = true;               // stream_options.include_usage
  std::optional<double> temperature = 0.0;
  // OpenAI's newer name of max_tokens, which its reasoning models require (OpenAI flavour only).
  bool max_completion_tokens = false;
  std::size_t pad_bytes = 0;               // JSON whitespace added to the body (same tokens)
  std::string accept_encoding = kSdkAcceptEncoding;  // empty: none sent, the answer uncompressed
  // A connection of its own, opened for it and closed after, never shared with another stream.
  bool own_connection = false;
  // The prompt's first `shared_words` words are a prefix meant to be shared by every request of
  // the same `prefix_key` (a prompt cache's test); 0: the prompt shares nothing (run/pacer.h).
  int shared_words = 0;
  std::uint64_t prefix_key = 0;
  // A body of the user's own (a replay): sent as it is, but streamed with usage asked for, and
  // with `model` when that is not empty; `prompt`, `max_tokens` and `temperature` are not used.
  std::optional<nlohmann::json> body;
  // Within one batch (checks::ModelPort::chat): sent no sooner than this long after the batch
  // begins, and after every request ahead of it of the same `lane` has ended (http::Request).
  std::chrono::microseconds start_after{0};
  int lane = -1;
};

// The request body in the endpoint's flavour (Anthropic: no stream_options, usage comes anyway).
std::string build_chat_body(const ChatRequest& r, Flavour f = Flavour::OpenAI);

// A prompt of about `tokens` tokens for common BPE vocabularies: frequent English words, each one
// token with its leading space, in an order that repeats no phrase (high entropy, so speculative
// decoding that feeds on repeated text is not flattered). Calibrate against the server's usage;
// this is a guess. A shorter prompt is a prefix of a longer one.
std::string synthetic_prompt(int tokens);
// A streamed request of `model` with a synthetic prompt of about `prompt_tokens` tokens.
ChatRequest synthetic_request(const std::string& model, int prompt_tokens, int max_tokens);
// The words synthetic_prompt draws from.
std::span<const std::string_view> prompt_words();

struct Usage {
  std::optional<std::int64_t> prompt_tokens;      // all of the prompt, cached or not
  std::optional<std::int64_t> completion_tokens;
  // Prompt tokens the provider served from its prefix cache: OpenAI's
  // prompt_tokens_details.cached_tokens, Anthropic's cache_read_input_tokens.
  std::optional<std::int64_t> cached_tokens;
  // Of the completion tokens, those the model spent reasoning: OpenAI's
  // completion_tokens_details.reasoning_tokens. Whether they were streamed is the stream's to say.
  std::optional<std::int64_t> reasoning_tokens;
};

struct ApiError {
  std::string message;
  std::string type;
  std::string code;
  std::string param;  // the parameter the error is about, where the server names one
};

// The request parameter a 400 refuses as unsupported, of those a run can do without or rename:
// "max_tokens" (reasoning models want max_completion_tokens) or "temperature" (they take only the
// default); empty for any other error.
std::string refused_parameter(const ApiError& e);
// What every command that sends requests does about such a refusal: the change in words
// ("renamed to max_completion_tokens", "left out: the model takes only its default"), and the
// request changed so. `run` (its pacer) and `probe` both adapt through these.
std::string adaptation_for(const std::string& parameter);
void adapt_request(ChatRequest& r, const std::string& parameter);

// A "model is loading" answer's estimate of the seconds left: Hugging Face's top-level
// `estimated_time`; nothing when the body gives none (or a number out of reason).
std::optional<double> loading_estimate_s(std::string_view body);

// OpenAI-style `{"error": {"message", "type", "code"}}`; also accepts a bare `{"error": "text"}`
// and `{"message": ...}` as some servers send. Nothing when the body is not such an object.
std::optional<ApiError> parse_error_body(std::string_view body);
// An error body as one short line: the API error's message; an HTML page's <title>, else its
// first text; plain text with its whitespace folded. At most `max_chars` characters.
std::string error_body_line(std::string_view body, std::size_t max_chars = 160);

struct ChatResponse {
  std::string id;
  std::string content;
  std::string finish_reason;
  Usage usage;
};
core::Result<ChatResponse> parse_chat_response(std::string_view body, Flavour f = Flavour::OpenAI);

// The streamed response. Content events are those carrying text, reasoning or a tool-call delta:
// a role-only or empty chunk is an event but not a token.
// Anthropic Messages: content_block_delta events carry the tokens, message_start and
// message_delta the usage, message_stop ends the stream (as [DONE] does for OpenAI).
class ChatStream final : public http::BodySink {
 public:
  static constexpr std::size_t kMaxKeptText = 4096;
  explicit ChatStream(Flavour f = Flavour::OpenAI) : flavour_(f) {}

  bool on_body(std::string_view bytes, core::SteadyTime arrived) override;
  // Call once the transfer ended: a truncated final event is recorded as malformed.
  void finish();

  std::optional<core::SteadyTime> first_event_at() const { return first_event_; }
  const std::vector<core::SteadyTime>& content_event_times() const { return content_times_; }
  // The first event carrying reasoning (reasoning_content, reasoning, Anthropic's thinking) and
  // the first carrying the answer (text or a tool call); both are content events.
  std::optional<core::SteadyTime> first_reasoning_at() const { return first_reasoning_; }
  std::optional<core::SteadyTime> first_answer_at() const { return first_answer_; }
  std::size_t event_count() const { return events_; }
  std::size_t malformed_count() const { return malformed_; }
  std::size_t oversized_count() const { return parser_.oversized_count(); }
  bool done_seen() const { return done_; }
  bool truncated() const { return truncated_; }
  const std::optional<ApiError>& stream_error() const { return error_; }
  const Usage& usage() const { return usage_; }
  const std::string& finish_reason() const { return finish_reason_; }
  const std::string& response_id() const { return id_; }
  const std::string& text() const { return text_; }     // first kMaxKeptText bytes of content
  std::size_t text_bytes() const { return text_bytes_; }
  const nlohmann::json& server_timings() const { return timings_; }  // llama.cpp `timings`
  std::int64_t body_bytes() const { return body_bytes_; }
  core::Micros parse_time() const { return parse_time_; }  // infdoctor's own parsing cost

 private:
  void on_event(const http::SseEvent& ev, core::SteadyTime arrived);
  enum class Carried { Nothing, Reasoning, Answer };
  Carried on_anthropic_event(const nlohmann::json& j);
  void on_content(Carried what, core::SteadyTime arrived);
  void add_text(const std::string& s);

  Flavour flavour_;

  http::SseParser parser_;
  std::vector<http::SseEvent> pending_;
  std::optional<core::SteadyTime> first_event_;
  std::vector<core::SteadyTime> content_times_;
  std::optional<core::SteadyTime> first_reasoning_, first_answer_;
  std::size_t events_ = 0;
  std::size_t malformed_ = 0;
  bool done_ = false;
  bool truncated_ = false;
  std::optional<ApiError> error_;
  Usage usage_;
  std::string finish_reason_;
  std::string id_;
  std::string text_;
  std::size_t text_bytes_ = 0;
  nlohmann::json timings_;
  std::int64_t body_bytes_ = 0;
  core::Micros parse_time_{0};
};

}  // namespace infdoctor::api
