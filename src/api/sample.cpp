#include "api/sample.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/clock.h"
#include "core/json_text.h"
#include "core/strings.h"

namespace infdoctor::api {
namespace {

std::optional<double> ms(const std::optional<core::Micros>& us) {
  if (!us) return std::nullopt;
  return core::to_ms(*us);
}

std::string request_id_of(const http::Response& r) {
  for (const char* name : {"x-request-id", "request-id", "x-amzn-requestid", "apim-request-id", "cf-ray"})
    if (auto v = r.header(name)) return *v;
  return {};
}

// The quota a 429 names. Its words first: OpenAI's "on tokens per min (TPM)" and "requests per
// min (RPM)", Anthropic's "input tokens per minute" and the like. Else its headers: the budget
// that is spent (x-ratelimit-remaining-tokens: 0; anthropic-ratelimit-*-tokens-remaining: 0).
std::string quota_named(const std::string& said_lower, const http::Response& r) {
  for (const char* w : {"tokens per min", "(tpm)", "token rate limit", "tokens per day", "(tpd)"})
    if (said_lower.find(w) != std::string::npos) return "tokens";
  for (const char* w : {"requests per min", "(rpm)", "requests per day", "(rpd)"})
    if (said_lower.find(w) != std::string::npos) return "requests";
  const auto spent = [&](const char* name) {
    const auto v = r.header(name);
    return v && !v->empty() && std::strtod(v->c_str(), nullptr) <= 0 && (*v)[0] >= '0' && (*v)[0] <= '9';
  };
  for (const char* name : {"x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining",
                           "anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-output-tokens-remaining"})
    if (spent(name)) return "tokens";
  for (const char* name : {"x-ratelimit-remaining-requests", "anthropic-ratelimit-requests-remaining"})
    if (spent(name)) return "requests";
  return {};
}

// The stalls of a stream (RequestSample::stalls), each held against the connection's loss counters
// at its two ends: the last mark at or before each, else the counters at the first byte.
void read_stalls(RequestSample& s, const http::Response& r, const std::vector<core::SteadyTime>& times) {
  if (s.itl_ms.size() < 3 || static_cast<double>(s.content_arrivals) / static_cast<double>(times.size()) <
                                 kClumpedBelowArrivalsPerEvent)
    return;
  std::vector<double> gaps = s.itl_ms;
  std::nth_element(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(gaps.size() / 2), gaps.end());
  const double median = gaps[gaps.size() / 2];
  const double bar = std::max(kStallMinMs, kStallOverMedian * median);
  const auto signals_at = [&](core::SteadyTime at) -> std::optional<std::uint32_t> {
    std::optional<std::uint32_t> v;
    if (r.tcp_first_byte) v = r.tcp_first_byte->loss_signals();
    for (const auto& m : r.tcp_marks)
      if (m.at <= at) v = m.counters.loss_signals();
    return v;
  };
  for (std::size_t i = 1; i < times.size(); ++i) {
    const double gap = s.itl_ms[i - 1];
    const auto before = signals_at(times[i - 1]), after = signals_at(times[i]);
    if (before && after && *after > *before) {
      ++s.network_stalls;
      s.network_stall_ms += std::max(0.0, gap - median);
    } else if (gap >= bar) {
      ++s.stalls;
      s.stall_ms += gap - median;
    }
  }
}

// What the server says it spent: OpenAI's openai-processing-ms; else Server-Timing's `total`,
// else its longest span (spans may nest, and the outermost is at least the longest).
std::optional<double> server_processing_ms(const http::Response& r, const std::map<std::string, double>& timing) {
  if (auto v = r.header("openai-processing-ms")) {
    char* end = nullptr;
    const double ms = std::strtod(v->c_str(), &end);
    if (end != v->c_str() && std::isfinite(ms) && ms >= 0) return ms;
  }
  if (auto it = timing.find("total"); it != timing.end()) return it->second;
  std::optional<double> longest;
  for (const auto& [_, ms] : timing) longest = std::max(longest.value_or(0.0), ms);
  return longest;
}

// Time per token, tokens per second and events per token, from the arrived tokens and the
// content events' span; left unmeasured while the count is unknown.
void derive_from_tokens(RequestSample& s) {
  const double tokens = arrived_tokens(s).value_or(0);
  if (tokens > 0 && s.content_events > 0) s.events_per_token = static_cast<double>(s.content_events) / tokens;
  if (tokens > 1 && s.content_events > 1 && s.ttft_ms && s.total_ms) {
    const double gen_ms = *s.total_ms - *s.ttft_ms;
    s.tpot_ms = gen_ms / (tokens - 1);
    if (gen_ms > 0) s.output_tokens_per_s = (tokens - 1) / (gen_ms / 1000.0);
  }
}

void fail(RequestSample& s, core::ErrorCode code, std::string message, std::string phase) {
  s.ok = false;
  s.error = std::string(core::error_info(code).token);
  s.error_message = std::move(message);
  s.failed_phase = std::move(phase);
}

}  // namespace

RequestSample make_sample(const http::Response& r, const ChatStream* stream, const std::string& model,
                          Flavour flavour) {
  RequestSample s;
  s.started_at = core::rfc3339_utc(r.started_wall);
  s.sent_after_ms = std::chrono::duration<double, std::milli>(r.sent_after).count();
  s.model = model;
  s.http_status = r.http_status;
  s.http_version = r.http_version;
  s.remote_ip = r.remote_ip;
  s.local_ip = r.local_ip;
  s.request_id = request_id_of(r);
  s.connection_reused = r.connection_reused;
  s.bytes_sent = r.bytes_sent;
  s.bytes_received = r.bytes_received;
  for (const auto& [k, v] : r.headers) s.headers[k] = v;
  if (auto st = r.header("server-timing")) s.server_timing_ms = parse_server_timing(*st);
  s.server_processing_ms = server_processing_ms(r, s.server_timing_ms);
  s.in_flight = r.in_flight;
  s.dns_ms = ms(r.dns_phase());
  s.connect_ms = ms(r.connect_phase());
  s.tunnel_ms = ms(r.tunnel_phase());
  s.tls_ms = ms(r.tls_phase());
  s.ttfb_ms = ms(r.ttfb());
  s.request_sent_ms = ms(r.request_out_at);
  s.server_wait_ms = ms(r.server_wait());
  s.transfer_ms = ms(r.times.total);
  s.client_start_lag_ms = ms(r.start_lag);
  s.ok = true;

  if (!r.status.ok()) {
    fail(s, r.status.error().code, r.status.error().message + ": " + r.status.error().detail, r.failed_phase);
  } else if (r.http_status < 200 || r.http_status >= 300) {
    std::string msg = "HTTP " + std::to_string(r.http_status);
    if (const std::string line = error_body_line(r.body); !line.empty()) msg += ": " + line;
    if (auto ra = r.header("retry-after")) msg += " (retry-after " + *ra + ")";
    fail(s, core::ErrorCode::HttpStatus, std::move(msg), "http");
    const auto api_error = parse_error_body(r.body);
    const std::string said = api_error ? core::lower(api_error->message + " " + api_error->code) : std::string();
    if (r.http_status == 413) s.limit = "body_size";
    else if (r.http_status == 400 && (said.find("context_length") != std::string::npos ||
                                      said.find("context length") != std::string::npos))
      s.limit = "context_length";
    else if (r.http_status == 400 && api_error)
      s.refused_parameter = refused_parameter(*api_error);
    else if (r.http_status == 503 && said.find("loading") != std::string::npos) {
      s.model_loading = true;
      s.loading_estimate_s = loading_estimate_s(r.body);
    } else if (r.http_status == 529 || (r.http_status == 503 && (said.find("overload") != std::string::npos ||
                                                                  said.find("capacity") != std::string::npos)))
      s.overloaded = true;
    else if (r.http_status == 429)
      s.quota = quota_named(said, r);
  }

  if (r.tcp_end) {
    s.tcp_rtt_ms = r.tcp_end->rtt_ms;
    s.tcp_rttvar_ms = r.tcp_end->rttvar_ms;
    // Counters that went down belong to another connection: nothing is known then.
    if (r.tcp_before && r.tcp_end->retransmits >= r.tcp_before->retransmits &&
        r.tcp_end->out_of_order >= r.tcp_before->out_of_order) {
      s.tcp_retransmits = static_cast<std::int64_t>(r.tcp_end->retransmits) - r.tcp_before->retransmits;
      s.tcp_out_of_order = static_cast<std::int64_t>(r.tcp_end->out_of_order) - r.tcp_before->out_of_order;
      if (r.tcp_first_byte)
        s.tcp_loss_before_first_byte =
            static_cast<std::int64_t>(r.tcp_first_byte->loss_signals()) - static_cast<std::int64_t>(r.tcp_before->loss_signals());
    }
  }

  if (stream == nullptr) {
    if (s.ok) {
      auto parsed = parse_chat_response(r.body, flavour);
      if (!parsed.ok()) {
        fail(s, parsed.error().code, parsed.error().message, "receive");
      } else {
        s.prompt_tokens = parsed->usage.prompt_tokens;
        if (s.prompt_tokens) s.prompt_tokens_source = kTokensFromUsage;
        s.cached_tokens = parsed->usage.cached_tokens;
        s.output_tokens = parsed->usage.completion_tokens;
        s.tokens_from_usage = s.output_tokens.has_value();
        if (s.tokens_from_usage) s.output_tokens_source = kTokensFromUsage;
        s.content_bytes = static_cast<std::int64_t>(parsed->content.size());
        s.finish_reason = parsed->finish_reason;
        s.total_ms = s.transfer_ms;
      }
    }
    return s;
  }

  s.events = stream->event_count();
  s.content_events = stream->content_event_times().size();
  s.malformed_events = stream->malformed_count();
  s.finish_reason = stream->finish_reason();
  s.server_timings = stream->server_timings();
  s.client_parse_ms = core::to_ms(stream->parse_time());
  s.prompt_tokens = stream->usage().prompt_tokens;
  if (s.prompt_tokens) s.prompt_tokens_source = kTokensFromUsage;
  s.cached_tokens = stream->usage().cached_tokens;
  // llama.cpp's server says in its timings how many prompt tokens its slot's cache served
  // (cache_n), where usage has no cached_tokens.
  if (!stream->usage().cached_tokens && s.server_timings.is_object())
    if (const auto it = s.server_timings.find("cache_n"); it != s.server_timings.end() && it->is_number_integer())
      s.cached_tokens = it->get<std::int64_t>();
  s.output_tokens = stream->usage().completion_tokens;
  s.tokens_from_usage = s.output_tokens.has_value();
  if (s.tokens_from_usage) s.output_tokens_source = kTokensFromUsage;
  s.content_bytes = static_cast<std::int64_t>(stream->text_bytes());
  s.reasoning_tokens = stream->usage().reasoning_tokens;
  if (s.reasoning_tokens && *s.reasoning_tokens > 0 && !stream->first_reasoning_at())
    s.hidden_reasoning_tokens = *s.reasoning_tokens;
  if (s.request_id.empty()) s.request_id = stream->response_id();
  if (auto first = stream->first_event_at()) s.first_event_ms = core::to_ms(core::elapsed_us(r.started, *first));
  if (auto t = stream->first_reasoning_at()) s.first_reasoning_ms = core::to_ms(core::elapsed_us(r.started, *t));
  if (auto t = stream->first_answer_at()) s.first_answer_ms = core::to_ms(core::elapsed_us(r.started, *t));
  const auto& times = stream->content_event_times();
  if (!times.empty()) {
    s.ttft_ms = core::to_ms(core::elapsed_us(r.started, times.front()));
    s.total_ms = core::to_ms(core::elapsed_us(r.started, times.back()));
    s.content_arrivals = 1;
    for (std::size_t i = 1; i < times.size(); ++i) {
      s.itl_ms.push_back(core::to_ms(core::elapsed_us(times[i - 1], times[i])));
      if (times[i] != times[i - 1]) ++s.content_arrivals;
    }
    read_stalls(s, r, times);
    // Without usage the count is unknown here: the run calibrates the text's bytes per token on
    // an answer that carried usage (count_output_tokens), never an event for a token.
    derive_from_tokens(s);
  }
  if (!s.ok) return s;
  if (auto e = stream->stream_error()) {
    fail(s, core::ErrorCode::StreamError, "error event mid-stream: " + e->message, "receive");
  } else if (stream->oversized_count() > 0) {
    fail(s, core::ErrorCode::ResponseTooLarge, "an SSE event exceeded the size cap", "receive");
  } else if (stream->malformed_count() > 0) {
    fail(s, core::ErrorCode::MalformedStream,
         std::to_string(stream->malformed_count()) + " SSE event(s) were not valid JSON or were cut off", "receive");
  } else if (stream->event_count() == 0) {
    fail(s, core::ErrorCode::MalformedStream,
         "no SSE events in the response (content-type " + r.header("content-type").value_or("none") + ")", "receive");
  } else if (!stream->done_seen() && stream->finish_reason().empty()) {
    // An answer ends with its terminator or at least says why it stopped; a stream with neither
    // was cut short (a proxy's timeout, a server that gave up), whatever it held until then.
    fail(s, core::ErrorCode::TruncatedStream,
         std::string("the stream ended without ") + (flavour == Flavour::Anthropic ? "message_stop" : "[DONE]") +
             " and without a finish reason: cut short after " + std::to_string(s.content_events) + " content events",
         "receive");
  }
  return s;
}

bool arrived_as_generated(const RequestSample& s) {
  const auto ratio = arrivals_per_event(s);
  return ratio && *ratio >= kClumpedBelowArrivalsPerEvent;
}

std::optional<double> arrivals_per_event(const RequestSample& s) {
  if (s.content_events == 0) return std::nullopt;
  return static_cast<double>(s.content_arrivals) / static_cast<double>(s.content_events);
}

std::optional<Clumps> clumps(const RequestSample& s) {
  const auto tokens = arrived_tokens(s);
  if (arrived_as_generated(s) || !tokens || *tokens < 2 || !s.ttft_ms || !s.total_ms) return std::nullopt;
  if (s.content_arrivals == 1) {
    // Held whole: it left when it ended, so from the first response byte (the headers, which
    // engines send when they take the request) the model was generating; from the request's start
    // when the headers were held with it. An upper bound, with the prompt's prefill in it.
    const double from = s.ttfb_ms && *s.ttfb_ms < *s.ttft_ms ? *s.ttfb_ms : 0.0;
    Clumps c;
    c.generation_ms_per_token = (*s.ttft_ms - from) / *tokens;
    c.first_token_wait_ms = (*tokens - 1) * c.generation_ms_per_token;
    return c;
  }
  std::size_t first_events = 1;  // the events that arrived with the first, in the same read
  while (first_events - 1 < s.itl_ms.size() && s.itl_ms[first_events - 1] == 0) ++first_events;
  const double tokens_per_event = *tokens / static_cast<double>(s.content_events);
  const double first_tokens = static_cast<double>(first_events) * tokens_per_event;
  if (*tokens - first_tokens < 1) return std::nullopt;
  Clumps c;
  c.generation_ms_per_token = (*s.total_ms - *s.ttft_ms) / (*tokens - first_tokens);
  c.first_token_wait_ms = std::max(0.0, first_tokens - 1) * c.generation_ms_per_token;
  return c;
}

std::optional<double> arrivals_per_token(const RequestSample& s) {
  const auto tokens = arrived_tokens(s);
  if (!s.output_tokens || !tokens || *tokens <= 0) return std::nullopt;
  return static_cast<double>(s.content_arrivals) / *tokens;
}

std::optional<double> arrived_tokens(const RequestSample& s) {
  if (!s.output_tokens) return std::nullopt;
  return static_cast<double>(std::max<std::int64_t>(0, *s.output_tokens - s.hidden_reasoning_tokens));
}

bool ended_by_itself(const RequestSample& s, double max_tokens) {
  if (!s.finish_reason.empty())
    return s.finish_reason == "stop" || s.finish_reason == "end_turn" || s.finish_reason == "stop_sequence";
  return s.output_tokens && s.output_tokens_source == kTokensFromUsage && static_cast<double>(*s.output_tokens) < max_tokens;
}

void count_output_tokens(RequestSample& s, double tokens, const std::string& source) {
  s.output_tokens = std::max<std::int64_t>(0, std::llround(tokens));
  s.output_tokens_source = source;
  s.tpot_ms.reset();
  s.output_tokens_per_s.reset();
  s.events_per_token.reset();
  derive_from_tokens(s);
}

void record_asked(RequestSample& s, const ChatRequest& asked) {
  const bool synthetic = asked.prompt_tokens_wanted > 0 && asked.shared_words == 0 && !asked.body;
  s.asked_prompt_tokens = synthetic ? asked.prompt_tokens_wanted : 0;
  s.asked_max_tokens = asked.body ? 0 : asked.max_tokens;  // a body of the user's own asks its own
  s.asked_stream = asked.stream;
  s.asked_accept_encoding = asked.accept_encoding;
  s.asked_pad_bytes = static_cast<std::int64_t>(asked.pad_bytes);
}

bool same_prompt(const RequestSample& s, const ChatRequest& r) {
  RequestSample like;
  record_asked(like, r);
  return like.asked_prompt_tokens > 0 && s.model == r.model && s.asked_prompt_tokens == like.asked_prompt_tokens &&
         s.asked_stream == like.asked_stream && s.asked_accept_encoding == like.asked_accept_encoding &&
         s.asked_pad_bytes == like.asked_pad_bytes;
}

bool same_request(const RequestSample& s, const ChatRequest& r) {
  return same_prompt(s, r) && s.asked_max_tokens == r.max_tokens;
}

std::optional<double> bytes_per_token(const RequestSample& s) {
  // The answer's text only: reasoning tokens are counted in usage but their text is not in it.
  if (!s.ok || s.output_tokens_source != kTokensFromUsage || !s.output_tokens || s.content_bytes <= 0 ||
      s.reasoning_tokens.value_or(0) > 0)
    return std::nullopt;
  const double tokens = static_cast<double>(*s.output_tokens);
  if (tokens < 1) return std::nullopt;
  return static_cast<double>(s.content_bytes) / tokens;
}

namespace {

// Every field of a sample with its name in results.json and samples.jsonl: the one list both
// directions read. `f(name, member)` is called for each, in this order.
template <class Sample, class F>
void visit_fields(Sample& s, F&& f) {
  f("started_at", s.started_at);
  f("seq", s.seq);
  f("in_flight_count", s.in_flight);
  f("idle_before_ms", s.idle_before_ms);
  f("model", s.model);
  f("ok", s.ok);
  f("error", s.error);
  f("error_message", s.error_message);
  f("failed_phase", s.failed_phase);
  f("limit", s.limit);
  f("refused_parameter", s.refused_parameter);
  f("model_loading", s.model_loading);
  f("overloaded", s.overloaded);
  f("quota", s.quota);
  f("loading_estimate_s", s.loading_estimate_s);
  f("loading_wait_ms", s.loading_wait_ms);
  f("loading_answers_count", s.loading_answers);
  f("loading_said", s.loading_said);
  f("http_status", s.http_status);
  f("http_version", s.http_version);
  f("request_id", s.request_id);
  f("trace_id", s.trace_id);
  f("remote_ip", s.remote_ip);
  f("local_ip", s.local_ip);
  f("connection_reused", s.connection_reused);
  f("proxy", s.proxy);
  f("dns_ms", s.dns_ms);
  f("connect_ms", s.connect_ms);
  f("tunnel_ms", s.tunnel_ms);
  f("tls_ms", s.tls_ms);
  f("request_sent_ms", s.request_sent_ms);
  f("server_wait_ms", s.server_wait_ms);
  f("ttfb_ms", s.ttfb_ms);
  f("first_event_ms", s.first_event_ms);
  f("ttft_ms", s.ttft_ms);
  f("total_ms", s.total_ms);
  f("transfer_ms", s.transfer_ms);
  f("tpot_ms", s.tpot_ms);
  f("output_tokens_per_s", s.output_tokens_per_s);
  f("events_per_token", s.events_per_token);
  f("prompt_tokens", s.prompt_tokens);
  f("output_tokens", s.output_tokens);
  f("cached_tokens", s.cached_tokens);
  f("reasoning_tokens", s.reasoning_tokens);
  f("hidden_reasoning_tokens", s.hidden_reasoning_tokens);
  f("first_reasoning_ms", s.first_reasoning_ms);
  f("first_answer_ms", s.first_answer_ms);
  f("tokens_from_usage", s.tokens_from_usage);
  f("output_tokens_source", s.output_tokens_source);
  f("prompt_tokens_source", s.prompt_tokens_source);
  f("content_bytes", s.content_bytes);
  f("prompt_words_count", s.prompt_words);
  f("asked_prompt_tokens_count", s.asked_prompt_tokens);
  f("asked_max_tokens_count", s.asked_max_tokens);
  f("asked_stream", s.asked_stream);
  f("asked_accept_encoding", s.asked_accept_encoding);
  f("asked_pad_bytes", s.asked_pad_bytes);
  f("server_processing_ms", s.server_processing_ms);
  f("events_count", s.events);
  f("content_events_count", s.content_events);
  f("content_arrivals_count", s.content_arrivals);
  f("malformed_events_count", s.malformed_events);
  f("itl_ms", s.itl_ms);
  f("tcp_retransmits_count", s.tcp_retransmits);
  f("tcp_out_of_order_count", s.tcp_out_of_order);
  f("tcp_loss_before_first_byte_count", s.tcp_loss_before_first_byte);
  f("tcp_rtt_ms", s.tcp_rtt_ms);
  f("tcp_rttvar_ms", s.tcp_rttvar_ms);
  f("stalls_count", s.stalls);
  f("network_stalls_count", s.network_stalls);
  f("stall_ms", s.stall_ms);
  f("network_stall_ms", s.network_stall_ms);
  f("finish_reason", s.finish_reason);
  f("bytes_sent", s.bytes_sent);
  f("bytes_received", s.bytes_received);
  f("headers", s.headers);
  f("server_timings", s.server_timings);
  f("server_timing_ms", s.server_timing_ms);
  f("client_parse_ms", s.client_parse_ms);
  f("client_start_lag_ms", s.client_start_lag_ms);
}

template <class T>
nlohmann::json value_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
template <class T>
nlohmann::json value_json(const T& v) {
  return nlohmann::json(v);
}
// Unmeasured is null, not "": no request id, no peer address, no status line.
nlohmann::json value_json(const std::string& v) { return core::text_or_null(v); }

// Reads one field; null or absent leaves the default. A value of the wrong type throws
// nlohmann's type_error, which sample_from_json turns into its error.
template <class T>
void read_value(const nlohmann::json& j, std::optional<T>& v) {
  v = core::get_checked<T>(j);
}
template <class T>
void read_value(const nlohmann::json& j, T& v) {
  v = core::get_checked<T>(j);
}

}  // namespace

std::map<std::string, double> parse_server_timing(std::string_view header) {
  std::map<std::string, double> out;
  const auto trim = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  };
  std::size_t start = 0;
  while (start <= header.size()) {
    // One metric runs to the next comma outside quotes.
    std::size_t end = start;
    for (bool quoted = false; end < header.size() && (quoted || header[end] != ','); ++end)
      if (header[end] == '"') quoted = !quoted;
    const std::string_view metric = header.substr(start, end - start);
    std::size_t semi = metric.find(';');
    const std::string name(trim(metric.substr(0, semi)));
    while (!name.empty() && semi != std::string_view::npos) {
      const std::size_t next = metric.find(';', semi + 1);
      const std::string_view param = trim(metric.substr(semi + 1, next == std::string_view::npos ? next : next - semi - 1));
      if (param.size() > 4 && core::lower(param.substr(0, 4)) == "dur=") {
        const std::string value(trim(param.substr(4)));
        char* stop = nullptr;
        const double d = std::strtod(value.c_str(), &stop);
        if (stop && *stop == '\0' && std::isfinite(d) && d >= 0) out[name] = d;
      }
      semi = next;
    }
    start = end + 1;
  }
  return out;
}

std::string one_line(const RequestSample& s) {
  char buf[160];
  if (!s.ok) {
    std::string line = s.error + (s.failed_phase.empty() ? "" : " in " + s.failed_phase);
    if (s.http_status > 0) line += " (HTTP " + std::to_string(s.http_status) + ")";
    return line + (s.error_message.empty() ? "" : ": " + s.error_message);
  }
  std::snprintf(buf, sizeof buf, "HTTP/%s %ld, first token %.0f ms, %.2f s, %lld+%lld tokens%s",
                s.http_version.empty() ? "?" : s.http_version.c_str(), s.http_status, s.ttft_ms.value_or(0),
                s.total_ms.value_or(0) / 1000.0, static_cast<long long>(s.prompt_tokens.value_or(0)),
                static_cast<long long>(s.output_tokens.value_or(0)), s.connection_reused ? "" : ", new connection");
  return buf;
}

nlohmann::json to_json(const RequestSample& s) {
  nlohmann::json j = nlohmann::json::object();
  visit_fields(s, [&](const char* name, const auto& v) { j[name] = value_json(v); });
  if (s.ok)  // what failed is unmeasured, not empty, on a request that did not fail
    for (const char* name : {"error", "error_message", "failed_phase"}) j[name] = nullptr;
  if (s.http_status <= 0) j["http_status"] = nullptr;  // no answer came
  return j;
}

core::Result<RequestSample> sample_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return core::make_error(core::ErrorCode::ConfigError, "a request sample is not an object");
  RequestSample s;
  try {
    visit_fields(s, [&](const char* name, auto& v) {
      if (auto it = j.find(name); it != j.end() && !it->is_null()) read_value(*it, v);
    });
  } catch (const nlohmann::json::exception& e) {
    return core::make_error(core::ErrorCode::ConfigError, "a request sample is malformed", e.what());
  }
  return s;
}

}  // namespace infdoctor::api
