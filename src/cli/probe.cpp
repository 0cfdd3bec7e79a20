// infdoctor probe: one streamed chat request, shown as a phase breakdown in the manner of
// httpstat, or as one JSON object (DESIGN.md, "Machine-readable output").
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "core/redact.h"
#include "stats/summary.h"

namespace infdoctor::cli {
namespace {

struct ProbeOptions {
  EndpointFlags endpoint;
  std::string model;
  std::string prompt;
  int prompt_tokens = 0;
  int max_tokens = 64;
  bool json = false;
};

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

nlohmann::json probe_json(const api::RequestSample& s) {
  const auto itl = stats::summarize(s.itl_ms);
  auto opt = [](const auto& v) -> nlohmann::json {
    if (v) return *v;
    return nullptr;
  };
  nlohmann::json j = {
      {"schema", "infdoctor.probe/1"},
      {"ok", s.ok},
      {"http_status", s.http_status},
      {"request_id", s.request_id},
      {"remote_ip", s.remote_ip},
      {"dns_ms", opt(s.dns_ms)},
      {"connect_ms", opt(s.connect_ms)},
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

void print_human(const api::RequestSample& s, const std::string& url) {
  std::printf("POST %s\n", url.c_str());
  std::printf("model %s  HTTP/%s %ld  %s  request id %s\n\n", s.model.c_str(),
              s.http_version.empty() ? "?" : s.http_version.c_str(), s.http_status,
              s.remote_ip.empty() ? "-" : s.remote_ip.c_str(), s.request_id.empty() ? "-" : s.request_id.c_str());
  // Each column is the time spent in that phase; the row below gives the running total.
  const std::optional<double> connect_end = s.dns_ms && s.connect_ms ? std::optional(*s.dns_ms + *s.connect_ms)
                                                                      : std::nullopt;
  const std::optional<double> tls_end = connect_end && s.tls_ms ? std::optional(*connect_end + *s.tls_ms)
                                                                 : std::nullopt;
  const std::optional<double> cols[6] = {s.dns_ms,
                                         s.connect_ms,
                                         s.tls_ms,
                                         s.server_wait_ms,
                                         minus(s.ttft_ms, s.ttfb_ms),
                                         minus(s.total_ms, s.ttft_ms)};
  const char* names[6] = {"DNS lookup", "TCP connect", "TLS handshake", "Server wait", "First token", "Generation"};
  const std::optional<double> cum[6] = {s.dns_ms, connect_end, tls_end, s.ttfb_ms, s.ttft_ms, s.total_ms};
  const char* cum_names[6] = {"dns", "connect", "tls", "ttfb", "ttft", "total"};
  // Cells are 14 wide and three apart, so the header, the bar and the running totals line up.
  std::printf(" ");
  for (const char* n : names) std::printf("  %14s ", n);
  std::printf("\n[");
  for (int i = 0; i < 6; ++i) std::printf("  %14s %s", fmt_ms(cols[i]).c_str(), i < 5 ? "|" : "]");
  std::printf("\n ");
  for (int i = 0; i < 6; ++i) std::printf("  %14s ", (std::string(cum_names[i]) + " " + fmt_ms(cum[i])).c_str());
  std::printf("\n  (phase times above the line; running totals from the request's start below it)\n\n");
  if (s.connection_reused) std::printf("connection   reused: DNS, connect and TLS not measured\n");
  const auto itl = stats::summarize(s.itl_ms);
  std::printf("tokens       %s output%s, %s prompt; %s events per token; finish %s\n",
              s.output_tokens ? std::to_string(*s.output_tokens).c_str() : "?",
              s.tokens_from_usage ? " (server usage)" : " (no usage: counted events)",
              s.prompt_tokens ? std::to_string(*s.prompt_tokens).c_str() : "?",
              s.events_per_token ? (std::to_string(*s.events_per_token).substr(0, 4)).c_str() : "-",
              s.finish_reason.empty() ? "-" : s.finish_reason.c_str());
  std::printf("inter-token  p50 %s  p90 %s  p99 %s  (%zu gaps)\n", fmt_ms(itl.p50).c_str(), fmt_ms(itl.p90).c_str(),
              fmt_ms(itl.p99).c_str(), s.itl_ms.size());
  if (s.output_tokens_per_s)
    std::printf("speed        %.1f output tokens/s after the first token (time per output token %s)\n",
                *s.output_tokens_per_s, fmt_ms(s.tpot_ms).c_str());
  for (const auto& [k, v] : s.headers) {
    if (k == "content-type" || k == "server" || k == "x-request-id" || k == "request-id") continue;
    std::printf("header       %s\n", core::scrub(core::redact_header_line(k + ": " + v)).c_str());
  }
  if (!s.server_timings.is_null())
    std::printf("server body  timings %s\n", core::scrub(s.server_timings.dump()).c_str());
  std::printf("overhead     infdoctor parsed the stream in %.2f ms\n", s.client_parse_ms);
}

int run_probe(const ProbeOptions& o) {
  auto ep = make_endpoint(o.endpoint);
  if (!ep.ok()) {
    std::cerr << "infdoctor: error: " << ep.error().message << '\n';
    return kExitCouldNotRun;
  }
  api::ChatRequest chat;
  chat.model = o.model;
  chat.prompt = o.prompt_tokens > 0 ? api::synthetic_prompt(o.prompt_tokens)
                                    : (o.prompt.empty() ? std::string("Say hello.") : o.prompt);
  chat.max_tokens = o.max_tokens;
  http::Client client;
  const api::RequestSample s = api::run_chat(client, *ep, chat, /*fresh_connection=*/true);
  const std::string url = core::redact_url(ep->url(ep->chat_path()));
  if (o.json) {
    std::cout << core::scrub(probe_json(s).dump(2)) << '\n';
  } else if (s.ok) {
    print_human(s, url);
  }
  if (!s.ok) {
    std::string line = s.failed_phase + ": " + s.error_message;
    if (!s.request_id.empty()) line += " (request id " + s.request_id + ")";
    std::cerr << "infdoctor: error: " << core::scrub(line) << '\n';
    return kExitCouldNotRun;
  }
  return kExitOk;
}

}  // namespace

void add_probe_command(CLI::App& app, std::function<int()>& chosen) {
  auto opts = std::make_shared<ProbeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "probe",
      "Send one streamed chat request and show where its time went: DNS, connect, TLS, server wait, first token,\n"
      "generation; inter-token latency percentiles, output tokens per second, the request id.\n"
      "Example: OPENAI_API_KEY=... infdoctor probe --base-url https://api.example.com/v1 --model my-model");
  add_endpoint_flags(*cmd, opts->endpoint);
  cmd->add_option("--model,-m", opts->model, "model to ask")->required();
  auto* prompt = cmd->add_option("--prompt", opts->prompt, "prompt text (default: a short greeting)");
  cmd->add_option("--prompt-tokens", opts->prompt_tokens, "use a synthetic prompt of about N tokens instead")
      ->check(CLI::Range(1, 10000000))
      ->excludes(prompt);
  cmd->add_option("--max-tokens", opts->max_tokens, "max_tokens of the request")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  cmd->add_flag("--json", opts->json, "print one JSON object instead of the table");
  cmd->callback([opts, &chosen] { chosen = [opts] { return run_probe(*opts); }; });
}

}  // namespace infdoctor::cli
