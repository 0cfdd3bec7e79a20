#include "report/describe.h"

#include <algorithm>
#include <optional>

#include "api/chat.h"
#include "core/strings.h"
#include "results/ledger.h"
#include "results/run_metrics.h"

namespace infdoctor::report {

namespace rm = results::run_metric;

std::string describe_workload(const std::map<std::string, double>& m) {
  const auto get = [&](const char* name) -> std::optional<double> {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  const auto prompt = get(rm::workload_prompt_tokens_count), output = get(rm::workload_output_tokens_count),
             streams = get(rm::workload_concurrency_count);
  if (!prompt || !output || !streams) return {};
  std::string out;
  core::appendf(out, "Priced on %s of %.0f prompt and %.0f output tokens at %.0f stream%s",
                get(rm::workload_from_body_count) ? "your own request (--body)" : "a reference request", *prompt, *output,
                *streams, *streams == 1 ? "" : "s");
  std::string terms;
  // A connection's setup is a term when the requests open connections (a server or proxy that
  // does not keep them); otherwise it rounds to nothing and is not printed.
  if (auto v = get(rm::workload_setup_ms); v && *v >= 0.5) core::appendf(terms, "connection setup %.0f ms", *v);
  for (const auto& [name, label] : {std::pair{rm::workload_network_ms, "network"}, {rm::workload_overhead_ms, "overhead"},
                                    {rm::workload_prefill_ms, "prefill"}, {rm::workload_decode_ms, "decode"}})
    if (auto v = get(name)) core::appendf(terms, "%s%s %.0f ms", terms.empty() ? "" : " + ", label, *v);
  if (auto total = get(rm::workload_total_ms)) core::appendf(out, ": %s = %.0f ms alone", terms.c_str(), *total);
  if (auto queue = get(rm::workload_queue_ms)) core::appendf(out, ", and %.0f ms waiting for a slot", *queue);
  out += " (--workload changes it).";
  if (auto explained = get(rm::explained_ratio); explained && get(rm::books_requests_count))
    core::appendf(out, " The measured terms explain %.0f %% of the time the run's %s took.", *explained * 100,
                  core::count_of(*get(rm::books_requests_count), "priced request").c_str());
  return out;
}

std::string describe_adaptations(const std::vector<results::Adaptation>& adaptations) {
  std::string out;
  for (const auto& a : adaptations)
    out += "Adapted to the endpoint: " + a.parameter + " " + a.change + " (it said: " + a.provider_said + ").\n";
  return out;
}

std::string describe_requests(const results::RunResult& r) {
  std::map<std::string, int> versions;
  for (const auto& c : r.checks)
    for (const auto& ls : c.requests)
      if (!ls.sample.http_version.empty()) ++versions[ls.sample.http_version];
  if (versions.empty()) return {};
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [v, n] : versions) by_count.emplace_back(n, v);
  std::sort(by_count.rbegin(), by_count.rend());
  int total = 0;
  std::vector<std::string> parts;
  for (const auto& [n, v] : by_count) {
    total += n;
    parts.push_back(std::to_string(n) + " over HTTP/" + v);
  }
  // "answered over HTTP/2" when all were; else "answered 41 over HTTP/2 and 2 over HTTP/1.1".
  const std::string answered = by_count.size() == 1 ? "over HTTP/" + by_count.front().second : core::join(parts, " and ");
  // A check that also sent requests without it labels them so (accept_encoding "").
  std::string without;
  for (const auto& c : r.checks)
    for (const auto& ls : c.requests)
      if (without.empty() && ls.label.is_object() && ls.label.contains("accept_encoding") &&
          ls.label["accept_encoding"] == "")
        without = c.id;
  std::string out = (total == 1 ? std::string("The model request went") : core::count_of(total, "model request") + " went") +
                    " out with Accept-Encoding: " + std::string(api::kSdkAcceptEncoding) +
                    ", as the OpenAI and Anthropic SDKs send it" +
                    (without.empty() ? "" : " (the " + without + " check also streamed without it)") + ", and " +
                    (total == 1 ? "was" : "were") + " answered " + answered + ".\n";
  // Where the run's numbers rest on something a server may not send: the route, and the tokens.
  std::string proxy;
  int via = 0, tunnels = 0, calibrated = 0, unknown = 0;
  for (const auto& e : results::ledger(r)) {
    const api::RequestSample& s = e.s();
    if (!s.proxy.empty()) {
      ++via;
      proxy = s.proxy;
    }
    tunnels += s.tunnel_ms.has_value();
    calibrated += s.ok && s.output_tokens_source == api::kTokensCalibrated;
    unknown += s.ok && s.content_events > 0 && !s.output_tokens;
  }
  if (via > 0)
    out += core::count_of(via, "model request") + " went through the proxy " + proxy + ", " +
           (tunnels > 0 ? core::count_of(tunnels, "new tunnel") + " opened (CONNECT)" : std::string("none opening a tunnel")) +
           "; the path and transport checks measured the route to it.\n";
  if (calibrated > 0) {
    const auto it = r.run_metrics.find(rm::bytes_per_token_ratio);
    out += "The streams of " + core::count_of(calibrated, "model request") +
           " carried no usage: their output tokens were counted from their text, at the bytes per token of a whole answer of the same model that carried usage" +
           (it != r.run_metrics.end() ? core::fmt(" (%.1f for the target model)", it->second) : std::string()) + ".\n";
  }
  if (unknown > 0)
    out += core::count_of(unknown, "model request") +
           " carried no usage and could not be calibrated: their output tokens are not counted, and no time per token is read from them.\n";
  return out;
}

std::string describe_engine(const nlohmann::json& engine, const std::map<std::string, double>& m) {
  if (!engine.is_object()) return {};
  const std::string url = engine.value("url", std::string());
  const int scrapes = engine.value("scrapes_count", 0);
  std::string out;
  if (scrapes > 0) {
    auto get = [&](const char* name) -> std::optional<double> {
      auto it = m.find(name);
      return it == m.end() ? std::nullopt : std::optional<double>(it->second);
    };
    std::vector<std::string> parts;
    if (auto v = get(rm::engine_queue_time_mean_ms)) parts.push_back(core::fmt("queued %.0f ms on average", *v));
    if (auto v = get(rm::engine_ttft_mean_ms)) parts.push_back(core::fmt("first token %.0f ms after arrival on average", *v));
    // Scrapes come between checks, when this run's own requests are done: a count there is others'.
    if (auto v = get(rm::engine_waiting_max_count); v && *v > 0) parts.push_back(core::fmt("%.0f waiting between checks", *v));
    if (auto v = get(rm::engine_running_max_count); v && *v > 0) parts.push_back(core::fmt("%.0f running between checks", *v));
    if (auto v = get(rm::engine_kv_cache_usage_max_ratio)) parts.push_back(core::fmt("KV cache at most %.0f %% used", *v * 100));
    if (auto v = get(rm::engine_preemptions_count)) parts.push_back(core::fmt("%.0f preemptions", *v));
    if (auto v = get(rm::engine_prefix_cache_hit_ratio))
      parts.push_back(core::fmt("prefix cache hits %.0f %% of prompt tokens", *v * 100));
    if (auto v = get(rm::engine_spec_acceptance_ratio))
      parts.push_back(core::fmt("speculative decoding accepted %.0f %% of ", *v * 100) +
                      core::count_of(get(rm::engine_spec_draft_tokens_count).value_or(0), "draft token"));
    out = engine.value("engine", std::string("The engine")) + "'s own /metrics (" + std::to_string(scrapes) +
          " scrapes, before and after each check): " + core::join(parts, ", ") + ".\n";
  }
  if (engine.contains("failure") && engine["failure"].is_string())
    out += "The engine's /metrics at " + url + " could not be read" + (scrapes > 0 ? " after that" : "") + ": " +
           engine["failure"].get<std::string>() + ".\n";
  return out;
}

}  // namespace infdoctor::report
