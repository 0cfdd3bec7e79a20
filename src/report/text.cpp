#include "report/text.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace infdoctor::report {
namespace {

using nlohmann::json;

void add(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string& out, const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  out += buf;
}

std::string num(const json& v, const char* unit = " ms") {
  if (!v.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%s", v.get<double>(), unit);
  return buf;
}

std::string metric(const checks::CheckResult& c, const std::string& name, const char* unit = " ms") {
  auto it = c.metrics.find(name);
  return it == c.metrics.end() ? "-" : num(it->second, unit);
}

std::string count(const checks::CheckResult& c, const std::string& name) {
  auto it = c.metrics.find(name);
  return it == c.metrics.end() ? "-" : std::to_string(static_cast<long long>(it->second));
}

std::string percent(const checks::CheckResult& c, const std::string& name) {
  auto it = c.metrics.find(name);
  if (it == c.metrics.end()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", it->second * 100);
  return buf;
}

std::string headline(const checks::CheckResult& c) {
  if (c.status != checks::CheckStatus::Ok) return c.reason;
  if (c.id == "dns")
    return "p50 " + metric(c, "p50_ms") + ", max " + metric(c, "max_ms") + ", " + count(c, "failures_count") +
           " failed, " + count(c, "addresses_count") + " addresses";
  if (c.id == "path")
    return "TCP RTT p50 " + metric(c, "tcp_rtt_p50_ms") + ", loss " + percent(c, "tcp_loss_ratio") + ", " +
           count(c, "hops_count") + " hops";
  if (c.id == "transport")
    return "connect " + metric(c, "connect_p50_ms") + ", TLS " + metric(c, "tls_p50_ms") + ", first byte " +
           metric(c, "ttfb_p50_ms") + " (reused " + metric(c, "reused_ttfb_p50_ms") + ")";
  if (c.id == "coldstart") {
    if (c.metrics.count("penalty_ms"))
      return "TTFT +" + metric(c, "penalty_ms") + " after " + metric(c, "threshold_s", " s") + " idle (not after " +
             metric(c, "threshold_low_s", " s") + "); baseline " + metric(c, "baseline_ttft_p50_ms");
    return "no jump after " + count(c, "gaps_count") + " idle gaps; baseline TTFT " + metric(c, "baseline_ttft_p50_ms") +
           ", first request " + metric(c, "first_request_ttft_ms");
  }
  if (c.id == "baseline") {
    std::string h = "TTFT " + metric(c, "ttft_p50_ms") + ", per token " + metric(c, "tpot_p50_ms") + ", total " +
                    metric(c, "total_p50_ms");
    if (c.metrics.count("tpot_ratio"))
      h += "; against the small model x" + metric(c, "ttft_ratio", "") + " TTFT, x" + metric(c, "tpot_ratio", "") +
           " per token";
    return h;
  }
  if (c.id == "sweep")
    return "prefill " + metric(c, "prefill_ms_per_token", " ms/token") + " + " + metric(c, "prefill_overhead_ms") +
           ", decode " + metric(c, "decode_ms_per_token", " ms/token") + ", " + count(c, "stopped_early_count") +
           " stopped early";
  if (c.id == "serialization")
    return "body " + metric(c, "upload_parse_ms_per_mb", " ms/MB") + ", stream vs whole " +
           metric(c, "stream_overhead_ms") + ", " + metric(c, "stream_token_bytes", " bytes/token");
  if (c.id == "concurrency")
    return "throughput scaling " + metric(c, "throughput_scaling_ratio", "") + ", makespan growth " +
           metric(c, "latency_growth_ratio", "") + " (1 = one at a time), knee at " + count(c, "knee_level_count") +
           " streams";
  if (c.id == "soak")
    return "TTFT p50 " + metric(c, "ttft_p50_ms") + ", drift " + metric(c, "ttft_drift_ms") + ", slow " +
           percent(c, "slow_ratio");
  return std::to_string(c.metrics.size()) + " metrics";
}

void coldstart_tables(std::string& out, checks::CheckResult c) {
  if (!c.details.contains("gaps") || c.details["gaps"].empty()) return;
  add(out, "\ncoldstart: TTFT after idle gaps (baseline %s, cold above +%s)\n  %8s %12s %12s\n",
      metric(c, "baseline_ttft_p50_ms").c_str(), num(c.details["margin_ms"]).c_str(), "idle", "TTFT", "excess");
  for (auto& g : c.details["gaps"])
    add(out, "  %6.0f s %12s %12s%s\n", g["gap_s"].get<double>(), num(g["ttft_ms"]).c_str(), num(g["excess_ms"]).c_str(),
        g["cold"].get<bool>() ? "  cold" : "");
}

void concurrency_tables(std::string& out, checks::CheckResult c) {
  if (!c.details.contains("levels") || c.details["levels"].empty()) return;
  add(out, "\nconcurrency: per level\n  %8s %12s %12s %12s %12s %14s\n", "streams", "TTFT p50", "TTFT p90", "total p50",
      "makespan", "tokens/s");
  for (auto& l : c.details["levels"])
    add(out, "  %8d %12s %12s %12s %12s %14.1f\n", l["streams"].get<int>(), num(l["ttft_p50_ms"]).c_str(),
        num(l["ttft_p90_ms"]).c_str(), num(l["total_p50_ms"]).c_str(), num(l["makespan_ms"]).c_str(),
        l["throughput_tokens_per_s"].get<double>());
}

void dns_tables(std::string& out, checks::CheckResult c) {
  if (!c.details.contains("resolvers")) return;
  add(out, "\ndns: per resolver\n  %-24s %7s %10s %10s  %s\n", "resolver", "answers", "p50", "max", "failures");
  for (auto& r : c.details["resolvers"]) {
    std::string failures;
    for (auto it = r["failures"].begin(); it != r["failures"].end(); ++it)
      failures += (failures.empty() ? "" : ", ") + it.key() + " x" + std::to_string(it.value().get<int>());
    add(out, "  %-24s %7d %10s %10s  %s\n", r["resolver"].get<std::string>().c_str(), r["samples_count"].get<int>(),
        num(r["p50_ms"]).c_str(), num(r["max_ms"]).c_str(), failures.empty() ? "none" : failures.c_str());
  }
  std::string addrs;
  for (auto& a : c.details["addresses"]) addrs += (addrs.empty() ? "" : ", ") + a.get<std::string>();
  add(out, "  addresses: %s\n", addrs.empty() ? "none" : addrs.c_str());
}

void path_tables(std::string& out, checks::CheckResult c) {
  if (!c.details.contains("addresses")) return;
  for (auto& a : c.details["addresses"]) {
    auto& tcp = a["tcp"];
    add(out, "\npath: %s port %d\n  TCP connect  p50 %s  p90 %s  max %s  loss %.0f%%\n",
        a["address"].get<std::string>().c_str(), a["port"].get<int>(), num(tcp["p50_ms"]).c_str(),
        num(tcp["p90_ms"]).c_str(), num(tcp["max_ms"]).c_str(), tcp["loss_ratio"].get<double>() * 100);
    if (a.contains("icmp")) {
      auto& i = a["icmp"];
      if (i["status"] == "skipped")
        add(out, "  ICMP echo    skipped: %s\n", i["reason"].get<std::string>().c_str());
      else
        add(out, "  ICMP echo    p50 %s  max %s  loss %.0f%%\n", num(i["p50_ms"]).c_str(), num(i["max_ms"]).c_str(),
            i["loss_ratio"].get<double>() * 100);
    }
    if (!a.contains("hops")) continue;
    auto& h = a["hops"];
    if (h.value("status", "") == "skipped") {
      add(out, "  hops         skipped: %s\n", h["reason"].get<std::string>().c_str());
      continue;
    }
    add(out, "  %-4s %-40s %6s %5s %8s %8s %8s %8s\n", "hop", "host", "loss", "sent", "last", "avg", "best", "worst");
    for (auto& hop : h["table"]) {
      double sum = 0, best = 1e18, worst = -1, last = -1;
      int n = 0, sent = 0;
      for (auto& v : hop["rtt_ms"]) {
        ++sent;
        if (!v.is_number()) continue;
        const double x = v.get<double>();
        sum += x;
        best = std::min(best, x);
        worst = std::max(worst, x);
        last = x;
        ++n;
      }
      std::string host = hop["address"].is_string() ? hop["address"].get<std::string>() : "???";
      if (!hop["note"].get<std::string>().empty()) host += " " + hop["note"].get<std::string>();
      if (n == 0) {
        add(out, "  %-4d %-40s %5.0f%% %5d %8s %8s %8s %8s\n", hop["ttl"].get<int>(), host.c_str(), 100.0, sent, "-", "-",
            "-", "-");
      } else {
        add(out, "  %-4d %-40s %5.0f%% %5d %8.1f %8.1f %8.1f %8.1f\n", hop["ttl"].get<int>(), host.c_str(),
            hop["loss_ratio"].get<double>() * 100, sent, last, sum / n, best, worst);
      }
    }
    if (!h["reached"].get<bool>()) add(out, "  (the destination did not answer within the hop limit)\n");
  }
}

void transport_tables(std::string& out, checks::CheckResult c) {
  if (!c.details.contains("addresses")) return;
  add(out, "\ntransport: per address (ms, medians)\n  %-40s %8s %8s %8s %8s %8s  %s\n", "address", "connect", "TLS",
      "ttfb", "reused", "saves", "TLS, ALPN, chain");
  for (auto& a : c.details["addresses"]) {
    std::string tls = "plain HTTP";
    if (a.contains("tls")) {
      auto& t = a["tls"];
      tls = t["version"].get<std::string>() + ", " +
            (t["alpn"].get<std::string>().empty() ? std::string("no ALPN") : t["alpn"].get<std::string>()) + ", " +
            std::to_string(t["chain_count"].get<int>()) + " certs / " + std::to_string(t["chain_bytes"].get<int>()) +
            " bytes";
    }
    add(out, "  %-40s %8s %8s %8s %8s %8s  %s; keep-alive %.0f%%\n", a["address"].get<std::string>().c_str(),
        num(a["connect_p50_ms"], "").c_str(), num(a["tls_p50_ms"], "").c_str(), num(a["ttfb_p50_ms"], "").c_str(),
        num(a["reused_ttfb_p50_ms"], "").c_str(), num(a["reuse_saves_ms"], "").c_str(), tls.c_str(),
        a["keepalive_ratio"].get<double>() * 100);
  }
}

}  // namespace

std::string render_diagnosis(const std::vector<rules::Finding>& findings) {
  std::string out;
  const bool any_issue = std::any_of(findings.begin(), findings.end(),
                                     [](const rules::Finding& f) { return f.severity != rules::Severity::Info; });
  if (!any_issue) add(out, "DIAGNOSIS: no finding above info; nothing measured explains slowness.\n");
  else add(out, "DIAGNOSIS (ranked by attributed milliseconds)\n");
  int n = 0;
  for (const auto& f : findings) {
    ++n;
    add(out, "\n%2d. [%s] %s\n", n, std::string(rules::severity_name(f.severity)).c_str(), f.title.c_str());
    add(out, "    %s: %.0f ms, %.0f%% of the observed latency, confidence %.2f  (rule %s)\n",
        rules::cause_label(f).c_str(), f.impact_ms, f.share * 100, f.confidence, f.rule.c_str());
    add(out, "    %s\n", f.explanation.c_str());
    if (!f.evidence.empty()) {
      std::string ev;
      for (const auto& [k, v] : f.evidence) ev += (ev.empty() ? "" : ", ") + k + " " + rules::format_metric(k, v);
      add(out, "    evidence: %s\n", ev.c_str());
    }
    for (const auto& q : f.ask_provider) add(out, "    ask the provider: %s\n", q.c_str());
    for (const auto& a : f.actions) add(out, "    you can: %s\n", a.c_str());
  }
  return out;
}

std::string render_text(const run::RunResult& r) {
  std::string out;
  add(out, "infdoctor run  %s  %s\n\n", r.target.base_url.c_str(), r.started_at.c_str());
  if (!r.interrupted_by.empty())
    add(out, "  PARTIAL: the run was interrupted (%s); what follows is what was measured until then\n\n",
        r.interrupted_by.c_str());
  out += render_diagnosis(r.diagnosis);
  add(out, "\n");
  // What the preset's endpoint is known to send, and how often it arrived. Results read back
  // from a file may hold anything here: what is not of the expected type counts as absent.
  if (r.preset.is_object() && r.preset.contains("signals") && r.preset["signals"].is_array() &&
      !r.preset["signals"].empty()) {
    const auto count = [](const json& j, const char* key) -> long long {
      auto it = j.find(key);
      return it != j.end() && it->is_number_integer() ? std::clamp<long long>(it->get<long long>(), 0, 1000000000) : 0;
    };
    const long long n = count(r.preset, "requests");
    std::string seen, missing;
    for (const auto& s : r.preset["signals"]) {
      if (!s.is_object() || !s.contains("signal") || !s["signal"].is_string()) continue;
      const long long k = count(s, "seen_in");
      std::string& list = k > 0 ? seen : missing;
      list += (list.empty() ? "" : ", ") + s["signal"].get<std::string>() + " (" + std::to_string(k) + " of " +
              std::to_string(n) + ")";
    }
    const auto name = r.preset.find("name");
    add(out, "  preset %s: timing signals seen: %s\n",
        name != r.preset.end() && name->is_string() ? name->get<std::string>().c_str() : "?",
        seen.empty() ? "none" : seen.c_str());
    if (!missing.empty() && n > 0)
      add(out, "  not seen: %s; a gateway or proxy on the way may strip them\n", missing.c_str());
    add(out, "\n");
  }
  add(out, "  %-14s %-8s %9s  %s\n", "check", "status", "took", "result");
  for (const auto& c : r.checks) {
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", c.duration_ms / 1000.0);
    add(out, "  %-14s %-8s %9s  %s\n", c.id.c_str(), std::string(checks::status_name(c.status)).c_str(), took,
        headline(c).c_str());
  }
  // The tables read each check's free-form details. Results read back from a file may have been
  // edited or come from another version: a table that cannot read them says so and the rest stands.
  for (const auto& c : r.checks) {
    void (*table)(std::string&, checks::CheckResult) = nullptr;
    if (c.id == "dns") table = dns_tables;
    if (c.id == "path") table = path_tables;
    if (c.id == "transport") table = transport_tables;
    if (c.id == "coldstart") table = coldstart_tables;
    if (c.id == "concurrency") table = concurrency_tables;
    if (!table) continue;
    std::string part;
    try {
      table(part, c);
    } catch (const json::exception& e) {
      part = "\n" + c.id + ": the details of this check are unreadable (" + e.what() + ")\n";
    }
    out += part;
  }
  return out;
}

}  // namespace infdoctor::report
