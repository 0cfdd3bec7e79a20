#include "run/runner.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <utility>

#include "checks/registry.h"
#include "core/exit_code.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/version.h"
#include "history/history.h"
#include "results/requests.h"
#include "rules/embedded.h"
#include "stats/fit.h"
#include "stats/series.h"

namespace infdoctor::run {
namespace {

results::RunResult begin_run(checks::CheckContext& ctx) {
  results::RunResult out;
  out.target = ctx.target();
  out.target.base_url = core::redact_url(out.target.base_url);
  out.started_at = core::rfc3339_utc(std::chrono::system_clock::now());
  if (ctx.target().host_is_ip) ctx.set_addresses({ctx.target().host});
  return out;
}

// `run_deadline`: the run's own (RunPlan::run_timeout), or nothing.
void run_one(const checks::CheckEntry& e, const RunPlan& plan, const Side& side, results::RunResult& out, int n, int m,
             std::optional<core::SteadyTime> run_deadline) {
  checks::CheckContext& ctx = *side.ctx;
  if (side.progress) side.progress->check(n, m, e.id);
  const auto skip = [&](const std::string& error, const std::string& reason) {
    checks::CheckResult r = checks::CheckResult::start(e.id);
    r.status = checks::CheckStatus::Skipped;
    r.error = error;
    r.reason = reason;
    out.checks.push_back(std::move(r));
  };
  if (core::interrupted())
    return skip("interrupted", std::string("not started: the run was interrupted (") + core::interrupt_name() + ")");
  if (run_deadline && ctx.clock().now() >= *run_deadline)
    return skip("run_deadline", "not started: the run's deadline of " + std::to_string(plan.run_timeout.count()) +
                                         " s had passed");
  auto check = e.make(plan.options);
  side.pacer->set_current_check(e.id);
  const auto t0 = ctx.clock().now();
  auto deadline = t0 + plan.check_timeout + check->planned_wait();
  if (run_deadline) deadline = std::min(deadline, *run_deadline);
  ctx.set_deadline(deadline);
  checks::CheckResult r;
  try {
    r = check->run(ctx);
  } catch (const std::exception& ex) {
    // A check must not throw; if one does, its result says so and the run goes on.
    r = checks::CheckResult::start(e.id);
    r.fail(core::make_error(core::ErrorCode::Internal, "the check failed unexpectedly", ex.what()));
  }
  r.id = e.id;
  r.duration_ms = core::to_ms(core::elapsed_us(t0, ctx.clock().now()));
  out.checks.push_back(std::move(r));
}


// The run's own tail of time to first token: every request of a shape sent three times or more
// (the same check, model, prompt tokens and body size, one stream at a time) against the median of
// its shape. The run's first model request and the requests sent after a deliberate idle gap are
// left out: they are what the tail is held against (coldstart.first_request_beyond_tail).
std::map<std::string, double> ttft_tail_metrics(const std::vector<checks::CheckResult>& checks) {
  std::map<std::string, std::vector<double>> shapes;
  bool first = true;
  for (const auto& c : checks)
    for (const auto& [s, label] : c.requests) {
      const bool run_first = std::exchange(first, false);
      if (run_first || !s.ok) continue;
      if (label.is_object() && (label.value("streams", 1) > 1 || label.contains("gap_s") || label.value("phase", "") == "first"))
        continue;
      const auto t = checks::server_ttft_ms(s);
      if (!t || !s.prompt_tokens) continue;
      shapes[c.id + "|" + s.model + "|" + std::to_string(*s.prompt_tokens) + "|" + std::to_string(s.bytes_sent / 256)]
          .push_back(*t);
    }
  std::vector<double> ratios;
  for (const auto& [_, ttfts] : shapes) {
    if (ttfts.size() < 3) continue;
    const double med = *stats::median(ttfts);
    if (med <= 0) continue;
    for (const double t : ttfts) ratios.push_back(t / med);
  }
  std::map<std::string, double> m;
  m["run.ttft_tail_samples_count"] = static_cast<double>(ratios.size());
  if (!ratios.empty()) m["run.ttft_worst_ratio"] = *std::max_element(ratios.begin(), ratios.end());
  return m;
}

// The share of the run's model requests answered "overloaded", over all of them, over those sent
// one at a time and over the concurrency check's parallel ones: capacity that sheds load as
// concurrency grows shows more of it in the parallel share.
std::map<std::string, double> overload_metrics(const std::vector<checks::CheckResult>& checks) {
  int all = 0, shed = 0, parallel = 0, parallel_shed = 0;
  for (const auto& c : checks)
    for (const auto& [s, label] : c.requests) {
      if (!s.ok && !api::is_failure(s)) continue;  // a stated limit or the run's own deadline
      const bool many = label.is_object() && label.value("streams", 1) > 1;
      ++all;
      parallel += many;
      shed += s.overloaded;
      parallel_shed += many && s.overloaded;
    }
  std::map<std::string, double> m;
  if (all > 0) m["run.overloaded_share_ratio"] = static_cast<double>(shed) / all;
  if (parallel > 0) m["run.overloaded_parallel_share_ratio"] = static_cast<double>(parallel_shed) / parallel;
  if (all > parallel) m["run.overloaded_sequential_share_ratio"] = static_cast<double>(shed - parallel_shed) / (all - parallel);
  return m;
}

// The path's loss as the run's own connections saw it (http/tcp_info.h): retransmissions and
// out-of-order arrivals, connects that waited out a lost SYN (Linux's first SYN timeout is 1 s),
// and the streams' gaps: the network's (the loss counters rose across them) and the server's
// stalls (api::RequestSample::stalls). Each gap is about one segment: the share of gaps the
// network held is the path's loss as the stream met it.
std::map<std::string, double> loss_metrics(const std::vector<checks::CheckResult>& checks) {
  double retransmits = 0, out_of_order = 0, with_loss = 0, measured = 0, slow_connects = 0, connects = 0;
  double streams = 0, gaps = 0, stalls = 0, network_stalls = 0, stall_ms = 0, network_stall_ms = 0;
  std::vector<double> rtts;
  for (const auto& c : checks)
    for (const auto& labelled : c.requests) {
      const api::RequestSample& s = labelled.sample;
      if (s.connect_ms) {
        ++connects;
        if (*s.connect_ms >= 1000) ++slow_connects;
      }
      if (s.tcp_rtt_ms && *s.tcp_rtt_ms > 0) rtts.push_back(*s.tcp_rtt_ms);
      if (s.tcp_retransmits && s.tcp_out_of_order) {
        ++measured;
        retransmits += static_cast<double>(*s.tcp_retransmits);
        out_of_order += static_cast<double>(*s.tcp_out_of_order);
        with_loss += *s.tcp_retransmits + *s.tcp_out_of_order > 0;
      }
      if (s.ok && s.itl_ms.size() >= 3 && api::arrived_as_generated(s)) {
        ++streams;
        gaps += static_cast<double>(s.itl_ms.size());
        stalls += static_cast<double>(s.stalls);
        network_stalls += static_cast<double>(s.network_stalls);
        stall_ms += s.stall_ms;
        network_stall_ms += s.network_stall_ms;
      }
    }
  std::map<std::string, double> m;
  if (measured > 0) {
    m["run.tcp_measured_count"] = measured;
    m["run.tcp_retransmits_count"] = retransmits;
    m["run.tcp_out_of_order_count"] = out_of_order;
    m["run.tcp_loss_requests_ratio"] = with_loss / measured;
  }
  if (connects > 0) m["run.slow_connects_count"] = slow_connects;
  if (auto v = stats::median(rtts)) m["run.tcp_rtt_p50_ms"] = *v;
  if (streams > 0) {
    m["run.stall_streams_count"] = streams;
    m["run.stalls_count"] = stalls;
    m["run.network_stalls_count"] = network_stalls;
    m["run.network_stall_per_stream_ms"] = network_stall_ms / streams;
    m["run.server_stall_per_stream_ms"] = stall_ms / streams;
    if (gaps > 0) m["run.loss_gap_ratio"] = network_stalls / gaps;
  }
  return m;
}

// What gateways say of themselves in their response headers, over the run's model requests.
std::map<std::string, double> gateway_metrics(const std::vector<checks::CheckResult>& checks) {
  std::vector<double> overhead, utilization, remaining, limit;
  int cache_hits = 0;
  const auto number = [](const std::string& v) -> std::optional<double> {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || !std::isfinite(x)) return std::nullopt;
    return x;
  };
  for (const auto& c : checks)
    for (const auto& labelled : c.requests) {
      const api::RequestSample& s = labelled.sample;  // a lambda may not capture a structured binding (C++17)
      const auto h = [&](const char* name) -> const std::string* {
        auto it = s.headers.find(name);
        return it == s.headers.end() ? nullptr : &it->second;
      };
      if (auto* v = h("x-litellm-overhead-duration-ms"))
        if (auto x = number(*v)) overhead.push_back(*x);
      if (auto* v = h("cf-aig-cache-status"); v && core::lower(*v) == "hit") ++cache_hits;
      if (auto* v = h("azure-openai-deployment-utilization"))  // a percentage, "12.5%"
        if (auto x = number(*v)) utilization.push_back(*x / 100.0);
      for (const char* name : {"x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"})
        if (auto* v = h(name))
          if (auto x = number(*v)) remaining.push_back(*x);
      for (const char* name : {"x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"})
        if (auto* v = h(name))
          if (auto x = number(*v); x && *x > 0) limit.push_back(*x);
    }
  std::map<std::string, double> m;
  if (auto v = stats::median(overhead)) m["run.gateway_overhead_p50_ms"] = *v;
  m["run.gateway_cache_hits_count"] = cache_hits;
  if (!utilization.empty()) m["run.deployment_utilization_max_ratio"] = *std::max_element(utilization.begin(), utilization.end());
  if (!remaining.empty()) m["run.ratelimit_remaining_tokens_min_count"] = *std::min_element(remaining.begin(), remaining.end());
  if (!limit.empty()) m["run.ratelimit_limit_tokens_count"] = *std::min_element(limit.begin(), limit.end());
  return m;
}

void end_run(const RunPlan& plan, const Side& side, results::RunResult& out) {
  const checks::CheckContext& ctx = *side.ctx;
  const Pacer& pacer = *side.pacer;
  if (side.progress) side.progress->done();
  out.run_metrics["run.requests_count"] = pacer.requests_spent();
  // Failed model requests by kind, for the errors rules.
  const auto& fails = pacer.failures_by_token();
  auto count = [&](std::initializer_list<const char*> tokens) {
    int n = 0;
    for (const char* t : tokens)
      if (auto it = fails.find(t); it != fails.end()) n += it->second;
    return n;
  };
  int failed = 0;
  for (const auto& [_, n] : fails) failed += n;
  out.run_metrics["run.failed_count"] = failed;
  out.run_metrics["run.timeout_count"] = count({"timeout"});
  out.run_metrics["run.broken_stream_count"] =
      count({"connection_closed", "connection_reset", "malformed_stream", "stream_error", "truncated_stream", "response_too_large"});
  out.run_metrics["run.server_error_count"] = pacer.server_error_count();
  out.run_metrics["run.tls_failed_count"] = count({"tls_failed"});
  out.run_metrics["run.tls_verify_off"] = ctx.target().scheme == "https" && ctx.endpoint().tls.insecure ? 1 : 0;
  out.run_metrics["run.rate_limited_count"] = pacer.rate_limited_count();
  out.run_metrics["run.rate_limited_tokens_count"] = pacer.rate_limited_tokens_count();
  // A provider that caches prompts is a fact of the endpoint: every prompt of the run was unique,
  // so what it served from cache was the shared chat template or an earlier identical prompt.
  out.run_metrics["run.cached_prompts_count"] = pacer.cached_prompt_count();
  out.run_metrics["run.retry_wait_ms"] = pacer.retry_wait_ms();
  out.run_metrics["run.overloaded_count"] = pacer.overloaded_count();
  out.run_metrics["run.overload_wait_ms"] = pacer.overload_wait_ms();
  for (const auto& [k, v] : overload_metrics(out.checks)) out.run_metrics[k] = v;
  out.run_metrics["run.model_loading_count"] = pacer.loading_answers();
  if (pacer.loading_wait_max_ms() > 0) out.run_metrics["run.model_loading_wait_max_ms"] = pacer.loading_wait_max_ms();
  const auto series = results::read_series(out.checks, ctx.models().target);
  out.run_metrics["run.series_samples_count"] = static_cast<double>(series.samples);
  if (series.samples > 0) out.run_metrics["run.series_span_s"] = series.span_s;
  if (series.slow_share) {
    out.run_metrics["run.slow_share_ratio"] = *series.slow_share;
    out.run_metrics["run.slow_share_low_ratio"] = *series.slow_share_low;
    out.run_metrics["run.slow_episodes_count"] = static_cast<double>(series.episodes);
  }
  if (series.slow_share && series.slow_excess_ms_per_token)
    out.run_metrics["run.slow_tpot_excess_ms_per_token"] = *series.slow_excess_ms_per_token;
  if (series.slow_share && series.period_s) out.run_metrics["run.slow_period_s"] = *series.period_s;
  if (series.slow_share && series.slow_factor) out.run_metrics["run.slow_factor_ratio"] = *series.slow_factor;
  if (series.runs_expected) {
    out.run_metrics["run.slow_runs_count"] = static_cast<double>(series.runs);
    out.run_metrics["run.slow_runs_expected_count"] = *series.runs_expected;
    out.run_metrics["run.slow_runs_sd_count"] = *series.runs_sd;
  }
  if (series.slow_share) out.run_metrics["run.replicas_count"] = static_cast<double>(series.replicas.size());
  if (series.slow_share && series.worst_replica_share) {
    out.run_metrics["run.slow_replica_share_ratio"] = *series.worst_replica_share;
    out.run_metrics["run.slow_elsewhere_share_low_ratio"] = *series.elsewhere_share_low;
  }
  for (const auto& [k, v] : price_workload(plan.workload, out.checks)) out.run_metrics[k] = v;
  // The tokens a minute the reference request needs at its concurrency, back to back: what a
  // tokens-per-minute quota is held against.
  {
    const auto& m = out.run_metrics;
    const auto t = m.find("run.workload_total_ms"), streams = m.find("run.workload_concurrency_count"),
               prompt = m.find("run.workload_prompt_tokens_count"), output = m.find("run.workload_output_tokens_count");
    if (t != m.end() && t->second > 0 && streams != m.end() && prompt != m.end() && output != m.end())
      out.run_metrics["run.workload_tokens_per_min_count"] =
          streams->second * (prompt->second + output->second) * 60000.0 / t->second;
  }
  for (const auto& [k, v] : gateway_metrics(out.checks)) out.run_metrics[k] = v;
  for (const auto& [k, v] : loss_metrics(out.checks)) out.run_metrics[k] = v;
  for (const auto& [k, v] : ttft_tail_metrics(out.checks)) out.run_metrics[k] = v;
  if (const EngineScraper* e = side.engine) {
    for (const auto& [k, v] : engine_metrics(e->snapshots())) out.run_metrics[k] = v;
    out.engine = {{"url", e->url()},
                  {"engine", e->snapshots().empty() ? nlohmann::json(nullptr) : nlohmann::json(e->snapshots().front().engine)},
                  {"scrapes_count", e->snapshots().size()},
                  {"failure", core::text_or_null(e->failure())}};
  }
  out.adaptations = pacer.adaptations();
  out.finished_at = core::rfc3339_utc(std::chrono::system_clock::now());
  if (core::interrupted()) out.interrupted_by = core::interrupt_name();
  out.unreachable = pacer.unreachable();
}

}  // namespace

std::vector<results::RunResult> run_interleaved(const RunPlan& plan, const std::vector<Side>& sides) {
  std::vector<results::RunResult> out;
  for (const auto& side : sides) out.push_back(begin_run(*side.ctx));
  for (const auto& side : sides)
    if (side.engine) side.engine->scrape(side.ctx->http(), "");
  std::vector<std::optional<core::SteadyTime>> deadlines;
  for (const auto& side : sides)
    deadlines.push_back(plan.run_timeout.count() > 0 ? std::optional(side.ctx->clock().now() + plan.run_timeout) : std::nullopt);
  std::size_t turn = 0;
  const auto chosen = selected(plan);
  for (const auto* e : chosen) {
    for (std::size_t k = 0; k < sides.size(); ++k) {
      const std::size_t i = (turn + k) % sides.size();  // who goes first rotates from check to check
      run_one(*e, plan, sides[i], out[i], static_cast<int>(turn + 1), static_cast<int>(chosen.size()), deadlines[i]);
      if (sides[i].engine) sides[i].engine->scrape(sides[i].ctx->http(), e->id);
    }
    ++turn;
  }
  for (std::size_t i = 0; i < sides.size(); ++i) end_run(plan, sides[i], out[i]);
  return out;
}

results::RunResult run_checks(const RunPlan& plan, const Side& side) {
  return std::move(run_interleaved(plan, {side}).front());
}

nlohmann::json preset_signals(const api::Preset& preset, const results::RunResult& r) {
  int requests = 0;
  std::vector<int> seen(preset.signals.size(), 0);
  for (const auto& c : r.checks) {
    for (const auto& [s, _] : c.requests) {
      if (!s.ok) continue;
      ++requests;
      for (std::size_t i = 0; i < preset.signals.size(); ++i) {
        const std::string& sig = preset.signals[i];
        bool has = false;
        if (sig == "timings") {
          has = s.server_timings.is_object() && !s.server_timings.empty();
        } else if (!sig.empty() && sig.back() == '*') {
          const std::string prefix = sig.substr(0, sig.size() - 1);
          for (const auto& [k, _v] : s.headers) has = has || k.rfind(prefix, 0) == 0;
        } else {
          has = s.headers.count(sig) > 0;
        }
        if (has) ++seen[i];
      }
    }
  }
  nlohmann::json signals = nlohmann::json::array();
  for (std::size_t i = 0; i < preset.signals.size(); ++i)
    signals.push_back({{"signal", preset.signals[i]}, {"seen_in", seen[i]}});
  return {{"name", preset.name}, {"flavour", api::flavour_name(preset.flavour)}, {"requests", requests}, {"signals", signals}};
}

std::vector<std::string> known_metrics() {
  std::vector<std::string> out;
  for (const auto& m : checks::all_metrics()) out.push_back(m.name);
  for (const auto& m : history::history_metric_names()) out.push_back(m);
  return out;
}

core::Result<rules::RuleSet> load_rules(const std::string& dir, std::vector<std::string>& warnings) {
  rules::LoadReport report;
  rules::RuleSet set = dir.empty() ? rules::load_texts(rules::embedded_rules(), known_metrics(), report)
                                   : rules::load_dir(dir, known_metrics(), report);
  warnings = report.warnings;
  if (report.errors.empty()) return set;
  return core::make_error(core::ErrorCode::ConfigError,
                          std::to_string(report.errors.size()) + " error(s) in the rules", core::join(report.errors, "\n"));
}

namespace {
std::string short_slo_names(const std::vector<checks::MetricInfo>& declared) {
  std::vector<std::string> names;
  for (const auto& m : declared)
    if (m.tags.slo) names.push_back(m.tags.slo);
  return core::join(names);
}
}  // namespace

core::Result<std::vector<Slo>> parse_slos(const std::string& text) {
  std::vector<Slo> out;
  const auto known = known_metrics();
  const auto declared = checks::all_metrics();
  for (const auto& item : core::split(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return core::make_error(core::ErrorCode::InvalidArgument, "--slo wants NAME=LIMIT, got '" + item + "'");
    std::string name = item.substr(0, eq);
    for (const auto& m : declared)
      if (m.tags.slo && name == m.tags.slo) name = m.name;
    if (std::find(known.begin(), known.end(), name) == known.end())
      return core::make_error(core::ErrorCode::InvalidArgument, "--slo: unknown metric '" + item.substr(0, eq) + "'",
                              "short names: " + short_slo_names(declared) + "; or any metric's full name (checks/README.md)");
    char* end = nullptr;
    const std::string v = item.substr(eq + 1);
    const double limit = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(limit >= 0))
      return core::make_error(core::ErrorCode::InvalidArgument,
                              "--slo: '" + v + "' is not a limit (a number, 0 or more, in the metric's unit)");
    out.push_back(Slo{name, limit});
  }
  return out;
}

std::vector<rules::Finding> check_slos(const std::vector<Slo>& slos, const std::map<std::string, double>& metrics,
                                       std::vector<std::string>& unmeasured) {
  std::vector<rules::Finding> out;
  for (const auto& s : slos) {
    auto it = metrics.find(s.metric);
    if (it == metrics.end()) {
      unmeasured.push_back(s.metric);
      continue;
    }
    if (it->second <= s.limit) continue;
    rules::Finding f;
    f.rule = "slo." + s.metric;
    f.severity = rules::Severity::Warning;
    const bool ms = s.metric.size() > 3 && s.metric.compare(s.metric.size() - 3, 3, "_ms") == 0;
    f.impact_ms = ms ? it->second - s.limit : 0;
    f.confidence = 1.0;
    f.title = "Your limit on " + s.metric + " is exceeded";
    f.explanation = s.metric + " is " + rules::format_metric(s.metric, it->second) + " against the limit of " +
                    rules::format_metric(s.metric, s.limit) + ".";
    f.evidence[s.metric] = it->second;
    out.push_back(std::move(f));
  }
  return out;
}

void rank(std::vector<rules::Finding>& findings) { rules::sort_findings(findings); }

namespace {
// What a provider needs to find a slow replica: the replicas the answers named, with how many of
// their requests were slow, and request ids on each side.
std::string replica_places(const stats::SeriesReading& series) {
  constexpr std::size_t kIds = 5;
  std::string out;
  for (const auto& [name, c] : series.replicas)
    out += (out.empty() ? "" : "; ") + name + ": " + std::to_string(c.slow) + " of " + std::to_string(c.requests) + " slow";
  const auto ids = [&](const char* label, const std::vector<std::string>& v) {
    if (v.empty()) return;
    std::vector<std::string> first(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(kIds, v.size())));
    out += (out.empty() ? "" : "; ") + std::string(label) + " request ids " + core::join(first, ", ") +
           (v.size() > kIds ? " and " + std::to_string(v.size() - kIds) + " more" : "");
  };
  ids("slow", series.slow_ids);
  ids("usual", series.usual_ids);
  return out;
}
}  // namespace

void name_places(results::RunResult& r) {
  constexpr std::size_t kPerHeader = 2;
  std::string where;
  for (const char* name : {"server", "via", "content-encoding"}) {
    std::vector<std::string> seen;
    for (const auto& c : r.checks)
      for (const auto& ls : c.requests)
        if (auto it = ls.sample.headers.find(name); it != ls.sample.headers.end() && seen.size() < kPerHeader &&
                                                     std::find(seen.begin(), seen.end(), it->second) == seen.end())
          seen.push_back(it->second);
    if (seen.empty()) continue;
    where += (where.empty() ? "" : "; ") + std::string(name) + " " + core::join(seen, ", ");
  }
  // A model that answered 503 "loading" before it served: its own words name the cold start.
  std::string loading;
  for (const auto& c : r.checks)
    for (const auto& ls : c.requests)
      if (loading.empty() && !ls.sample.loading_said.empty())
        loading = "it answered " + std::to_string(ls.sample.loading_answers) + " time" + (ls.sample.loading_answers == 1 ? "" : "s") +
                  " first: " + ls.sample.loading_said;
  const std::string replicas = replica_places(results::read_series(r.checks, r.models.target));
  for (auto& f : r.diagnosis) {
    if (f.scope == "intermediary") f.where = where;
    if (f.cause == "cold_start") f.where = loading;
    if (f.cause == "slow_replica") f.where = replicas;
  }
}

}  // namespace infdoctor::run
