#include "api/sample.h"

#include "core/clock.h"

namespace infdoctor::api {
namespace {

std::optional<double> ms(const std::optional<core::Micros>& us) {
  if (!us) return std::nullopt;
  return core::to_ms(*us);
}

std::optional<double> diff_ms(const std::optional<core::Micros>& later, const std::optional<core::Micros>& earlier) {
  if (!later || !earlier || *later < *earlier) return std::nullopt;
  return core::to_ms(*later - *earlier);
}

std::string request_id_of(const http::Response& r) {
  for (const char* name : {"x-request-id", "request-id", "x-amzn-requestid", "apim-request-id", "cf-ray"})
    if (auto v = r.header(name)) return *v;
  return {};
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
  s.model = model;
  s.http_status = r.http_status;
  s.http_version = r.http_version;
  s.remote_ip = r.remote_ip;
  s.request_id = request_id_of(r);
  s.connection_reused = r.connection_reused;
  s.bytes_sent = r.bytes_sent;
  s.bytes_received = r.bytes_received;
  for (const auto& [k, v] : r.headers) s.headers[k] = v;
  if (!r.connection_reused) {
    s.dns_ms = ms(r.times.namelookup);
    s.connect_ms = diff_ms(r.times.connect, r.times.namelookup);
    if (r.is_tls) s.tls_ms = diff_ms(r.times.appconnect, r.times.connect);
  }
  s.ttfb_ms = ms(r.ttfb());
  s.request_sent_ms = ms(r.request_out_at);
  // From the request leaving, on our own clock; libcurl's pretransfer counts from its own start,
  // which on a reused connection lies after the time a transfer waited behind its siblings.
  s.server_wait_ms = r.request_out_at ? diff_ms(r.ttfb(), r.request_out_at) : diff_ms(r.ttfb(), r.times.pretransfer);
  s.transfer_ms = ms(r.times.total);
  s.client_start_lag_ms = ms(r.start_lag);
  s.ok = true;

  if (!r.status.ok()) {
    fail(s, r.status.error().code, r.status.error().message + ": " + r.status.error().detail, r.failed_phase);
  } else if (r.http_status < 200 || r.http_status >= 300) {
    std::string msg = "HTTP " + std::to_string(r.http_status);
    if (auto e = parse_error_body(r.body); e && !e->message.empty()) {
      msg += ": " + e->message;
    } else if (!r.body.empty()) {
      msg += ": " + r.body.substr(0, 200);
    }
    if (auto ra = r.header("retry-after")) msg += " (retry-after " + *ra + ")";
    fail(s, core::ErrorCode::HttpStatus, std::move(msg), "http");
  }

  if (stream == nullptr) {
    if (s.ok) {
      auto parsed = parse_chat_response(r.body, flavour);
      if (!parsed.ok()) {
        fail(s, parsed.error().code, parsed.error().message, "receive");
      } else {
        s.prompt_tokens = parsed->usage.prompt_tokens;
        s.output_tokens = parsed->usage.completion_tokens;
        s.tokens_from_usage = s.output_tokens.has_value();
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
  s.output_tokens = stream->usage().completion_tokens;
  s.tokens_from_usage = s.output_tokens.has_value();
  if (s.request_id.empty()) s.request_id = stream->response_id();
  if (auto first = stream->first_event_at()) s.first_event_ms = core::to_ms(core::elapsed_us(r.started, *first));
  const auto& times = stream->content_event_times();
  if (!times.empty()) {
    s.ttft_ms = core::to_ms(core::elapsed_us(r.started, times.front()));
    s.total_ms = core::to_ms(core::elapsed_us(r.started, times.back()));
    s.content_arrivals = 1;
    for (std::size_t i = 1; i < times.size(); ++i) {
      s.itl_ms.push_back(core::to_ms(core::elapsed_us(times[i - 1], times[i])));
      if (times[i] != times[i - 1]) ++s.content_arrivals;
    }
    // Without usage every content event is taken as one token, and the sample says so.
    const double tokens = s.output_tokens ? static_cast<double>(*s.output_tokens) : static_cast<double>(times.size());
    if (tokens > 0) s.events_per_token = static_cast<double>(times.size()) / tokens;
    if (tokens > 1 && times.size() > 1) {
      const double gen_ms = core::to_ms(core::elapsed_us(times.front(), times.back()));
      s.tpot_ms = gen_ms / (tokens - 1);
      if (gen_ms > 0) s.output_tokens_per_s = (tokens - 1) / (gen_ms / 1000.0);
    }
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
  }
  return s;
}

nlohmann::json to_json(const RequestSample& s) {
  auto opt = [](const auto& v) -> nlohmann::json {
    if (v) return *v;
    return nullptr;
  };
  nlohmann::json j = {
      {"started_at", s.started_at},
      {"model", s.model},
      {"ok", s.ok},
      {"error", s.ok ? nlohmann::json(nullptr) : nlohmann::json(s.error)},
      {"error_message", s.ok ? nlohmann::json(nullptr) : nlohmann::json(s.error_message)},
      {"failed_phase", s.ok ? nlohmann::json(nullptr) : nlohmann::json(s.failed_phase)},
      {"http_status", s.http_status},
      {"http_version", s.http_version},
      {"request_id", s.request_id},
      {"remote_ip", s.remote_ip},
      {"connection_reused", s.connection_reused},
      {"dns_ms", opt(s.dns_ms)},
      {"connect_ms", opt(s.connect_ms)},
      {"tls_ms", opt(s.tls_ms)},
      {"request_sent_ms", opt(s.request_sent_ms)},
      {"server_wait_ms", opt(s.server_wait_ms)},
      {"ttfb_ms", opt(s.ttfb_ms)},
      {"first_event_ms", opt(s.first_event_ms)},
      {"ttft_ms", opt(s.ttft_ms)},
      {"total_ms", opt(s.total_ms)},
      {"transfer_ms", opt(s.transfer_ms)},
      {"tpot_ms", opt(s.tpot_ms)},
      {"output_tokens_per_s", opt(s.output_tokens_per_s)},
      {"events_per_token", opt(s.events_per_token)},
      {"prompt_tokens", opt(s.prompt_tokens)},
      {"output_tokens", opt(s.output_tokens)},
      {"tokens_from_usage", s.tokens_from_usage},
      {"events_count", s.events},
      {"content_events_count", s.content_events},
      {"content_arrivals_count", s.content_arrivals},
      {"malformed_events_count", s.malformed_events},
      {"itl_ms", s.itl_ms},
      {"finish_reason", s.finish_reason},
      {"bytes_sent", s.bytes_sent},
      {"bytes_received", s.bytes_received},
      {"headers", s.headers},
      {"server_timings", s.server_timings},
      {"client_parse_ms", s.client_parse_ms},
      {"client_start_lag_ms", opt(s.client_start_lag_ms)},
  };
  return j;
}

}  // namespace infdoctor::api
