#include "report/probe.h"

#include <cstdio>
#include <optional>

#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "stats/summary.h"

namespace infdoctor::report {
namespace {

std::string fmt_ms(const std::optional<double>& v) {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", *v);
  return buf;
}

std::optional<double> minus(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b) return std::nullopt;
  return *a - *b;
}

}  // namespace

nlohmann::json probe_json(const api::RequestSample& s) {
  const auto itl = stats::summarize(s.itl_ms);
  auto opt = [](const auto& v) -> nlohmann::json {
    if (v) return *v;
    return nullptr;
  };
  nlohmann::json j = {
      {"schema", "infdoctor.probe/1"},
      {"ok", s.ok},
      {"error", core::text_or_null(s.ok ? "" : s.error)},
      {"error_message", core::text_or_null(s.ok ? "" : s.error_message)},
      {"failed_phase", core::text_or_null(s.ok ? "" : s.failed_phase)},
      {"http_status", s.http_status > 0 ? nlohmann::json(s.http_status) : nlohmann::json(nullptr)},
      {"http_version", core::text_or_null(s.http_version)},
      {"request_id", core::text_or_null(s.request_id)},
      {"remote_ip", core::text_or_null(s.remote_ip)},
      {"dns_ms", opt(s.dns_ms)},
      {"connect_ms", opt(s.connect_ms)},
      {"tunnel_ms", opt(s.tunnel_ms)},
      {"tls_ms", opt(s.tls_ms)},
      {"ttfb_ms", opt(s.ttfb_ms)},
      {"ttft_ms", opt(s.ttft_ms)},
      {"total_ms", opt(s.total_ms)},
      {"itl_p50_ms", opt(itl.p50)},
      {"itl_p90_ms", opt(itl.p90)},
      {"itl_p99_ms", opt(itl.p99)},
      {"output_tokens", opt(s.output_tokens)},
      {"prompt_tokens", opt(s.prompt_tokens)},
      {"output_tokens_per_s", opt(s.output_tokens_per_s)},
  };
  j["sample"] = api::to_json(s);
  return j;
}

std::string render_probe(const api::RequestSample& s, const std::string& url) {
  std::string out;
  core::appendf(out, "POST %s\n", url.c_str());
  core::appendf(out, "model %s  HTTP/%s %ld  %s  request id %s\n\n", s.model.c_str(),
              s.http_version.empty() ? "?" : s.http_version.c_str(), s.http_status,
              s.remote_ip.empty() ? "-" : s.remote_ip.c_str(), s.request_id.empty() ? "-" : s.request_id.c_str());
  // Each column is the time spent in that phase; the row below gives the running total. Through a
  // proxy's tunnel the connect column holds the connect to the proxy and its answer to CONNECT.
  const std::optional<double> connect = s.connect_ms ? std::optional(*s.connect_ms + s.tunnel_ms.value_or(0)) : std::nullopt;
  const std::optional<double> connect_end = s.dns_ms && connect ? std::optional(*s.dns_ms + *connect) : std::nullopt;
  const std::optional<double> tls_end = connect_end && s.tls_ms ? std::optional(*connect_end + *s.tls_ms)
                                                                 : std::nullopt;
  const std::optional<double> cols[6] = {s.dns_ms,
                                         connect,
                                         s.tls_ms,
                                         s.server_wait_ms,
                                         minus(s.ttft_ms, s.ttfb_ms),
                                         minus(s.total_ms, s.ttft_ms)};
  const char* names[6] = {"DNS lookup", s.tunnel_ms ? "Proxy tunnel" : "TCP connect", "TLS handshake", "Server wait",
                          "First token", "Generation"};
  const std::optional<double> cum[6] = {s.dns_ms, connect_end, tls_end, s.ttfb_ms, s.ttft_ms, s.total_ms};
  const char* cum_names[6] = {"dns", "connect", "tls", "ttfb", "ttft", "total"};
  // Cells are 14 wide and three apart, so the header, the bar and the running totals line up.
  core::appendf(out, " ");
  for (const char* n : names) core::appendf(out, "  %14s ", n);
  core::appendf(out, "\n[");
  for (int i = 0; i < 6; ++i) core::appendf(out, "  %14s %s", fmt_ms(cols[i]).c_str(), i < 5 ? "|" : "]");
  core::appendf(out, "\n ");
  for (int i = 0; i < 6; ++i) core::appendf(out, "  %14s ", (std::string(cum_names[i]) + " " + fmt_ms(cum[i])).c_str());
  core::appendf(out, "\n  (phase times above the line; running totals from the request's start below it)\n\n");
  if (s.connection_reused) core::appendf(out, "connection   reused: DNS, connect and TLS not measured\n");
  if (!s.proxy.empty()) {
    core::appendf(out, "proxy        %s", s.proxy.c_str());
    if (s.tunnel_ms && s.connect_ms)
      core::appendf(out, ": connect to it %.1f ms, its tunnel (CONNECT) %.1f ms", *s.connect_ms, *s.tunnel_ms);
    out += "\n";
  }
  const auto itl = stats::summarize(s.itl_ms);
  const std::string source = s.output_tokens_source == api::kTokensFromUsage    ? " (server usage)"
                             : s.output_tokens_source == api::kTokensCalibrated ? " (calibrated from the text)"
                                                                                 : " (no usage in the stream: " +
                                                                                       std::to_string(s.content_events) +
                                                                                       " content events, tokens not counted)";
  core::appendf(out, "tokens       %s output%s, %s prompt; %s events per token; finish %s\n",
              s.output_tokens ? std::to_string(*s.output_tokens).c_str() : "?", source.c_str(),
              s.prompt_tokens ? std::to_string(*s.prompt_tokens).c_str() : "?",
              s.events_per_token ? (std::to_string(*s.events_per_token).substr(0, 4)).c_str() : "-",
              s.finish_reason.empty() ? "-" : s.finish_reason.c_str());
  // A reasoning model's thinking on a line of its own: how many tokens, whether they came, and
  // when the answer's first token did.
  if (s.reasoning_tokens && *s.reasoning_tokens > 0) {
    std::string line = std::to_string(*s.reasoning_tokens) + " tokens" +
                       (s.hidden_reasoning_tokens > 0 ? " (hidden: counted in usage, not streamed)" : " (streamed)");
    if (s.first_answer_ms)
      line += "; first answer token at " + fmt_ms(s.first_answer_ms) +
              (s.first_reasoning_ms ? ", " + fmt_ms(*s.first_answer_ms - *s.first_reasoning_ms) + " after the first reasoning token"
                                    : "");
    core::appendf(out, "reasoning    %s\n", line.c_str());
  }
  core::appendf(out, "inter-token  p50 %s  p90 %s  p99 %s  (%zu gaps)\n", fmt_ms(itl.p50).c_str(), fmt_ms(itl.p90).c_str(),
              fmt_ms(itl.p99).c_str(), s.itl_ms.size());
  if (s.output_tokens_per_s)
    core::appendf(out, "speed        %.1f output tokens/s after the first token (time per output token %s)\n",
                *s.output_tokens_per_s, fmt_ms(s.tpot_ms).c_str());
  for (const auto& [k, v] : s.headers) {
    if (k == "content-type" || k == "server" || k == "x-request-id" || k == "request-id") continue;
    core::appendf(out, "header       %s\n", core::scrub(core::redact_header_line(k + ": " + v)).c_str());
  }
  if (!s.server_timings.is_null())
    core::appendf(out, "server body  timings %s\n", core::scrub(s.server_timings.dump()).c_str());
  core::appendf(out, "overhead     infdoctor parsed the stream in %.2f ms\n", s.client_parse_ms);
  return out;
}

}  // namespace infdoctor::report
