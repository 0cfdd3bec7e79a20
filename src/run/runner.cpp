#include "run/runner.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

#include "checks/registry.h"
#include "core/exit_code.h"
#include "core/interrupt.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/version.h"
#include "results/ledger.h"
#include "results/requests.h"
#include "run/books.h"
#include "run/slo.h"
#include "run/wake_watch.h"
#include "results/run_metrics.h"
#include "rules/embedded.h"
#include "stats/series.h"

namespace infdoctor::run {

namespace rm = results::run_metric;

namespace {

results::RunResult begin_run(checks::CheckContext& ctx) {
  results::RunResult out;
  out.target = ctx.target();
  out.target.base_url = core::redact_url(out.target.base_url);
  out.started_at = core::rfc3339_utc(std::chrono::system_clock::now());
  if (ctx.target().host_is_ip) ctx.set_addresses({ctx.target().host});
  return out;
}

// A check held for a later check's idle gaps (RunPlan::idle_endpoint), with its place in the run.
struct Held {
  const checks::Check* check;
  int n;
  std::size_t host;  // the turn of the check whose idle gaps it runs in (idle_host)
  bool in_idle = true;  // false once it did not fit a gap: it runs in full after its host
};

// Runs `check` and returns its result. `run_deadline`: the run's own (RunPlan::run_timeout), or
// nothing. `cap`: the end of the idle gap it runs in, or nothing; `cut` is set when it was still
// running at the cap (its result then says less than a run in full would, and is not kept).
// `held`: the checks waiting for this one's idle gaps, each run inside them while they fit.
checks::CheckResult run_one(const checks::Check& check, const RunPlan& plan, const Side& side, results::RunResult& out,
                            int n, int m, std::optional<core::SteadyTime> run_deadline, std::vector<Held>* held = nullptr,
                            std::optional<core::SteadyTime> cap = std::nullopt, bool* cut = nullptr) {
  checks::CheckContext& ctx = *side.ctx;
  const std::string& id = check.info().id;
  if (side.progress) side.progress->check(n, m, id);
  const auto skip = [&](const std::string& error, const std::string& reason) {
    checks::CheckResult r = checks::CheckResult::start(id);
    r.status = checks::CheckStatus::Skipped;
    r.error = error;
    r.reason = reason;
    return r;
  };
  if (core::interrupted())
    return skip("interrupted", std::string("not started: the run was interrupted (") + core::interrupt_name() + ")");
  if (run_deadline && ctx.clock().now() >= *run_deadline)
    return skip("run_deadline", "not started: the run's deadline of " + std::to_string(plan.run_timeout.count()) +
                                         " s had passed");
  side.pacer->set_current_check(id);
  const auto t0 = ctx.clock().now();
  auto deadline = t0 + plan.check_timeout + check.planned_wait();
  if (run_deadline) deadline = std::min(deadline, *run_deadline);
  const auto own_deadline = deadline;
  if (cap) deadline = std::min(deadline, *cap);
  ctx.set_deadline(deadline);
  // Inside each idle wait, the held checks that still fit run one after another, each ending by
  // the wait's end; then the wait goes on as this check's again.
  bool hosting = false;  // a held check's own waits host nothing
  if (held)
    ctx.set_idle_host([&, held](core::SteadyTime until) {
      if (hosting) return;
      hosting = true;
      bool ran = false;
      for (auto& h : *held) {
        if (!h.in_idle || ctx.clock().now() >= until || core::interrupted()) continue;
        h.in_idle = false;
        bool was_cut = false;
        checks::CheckResult r = run_one(*h.check, plan, side, out, h.n, m, run_deadline, nullptr, until, &was_cut);
        ran = true;
        if (was_cut) continue;  // runs again after this check, in full
        r.details["ran_inside"] = id;
        out.checks.push_back(std::move(r));
        h.check = nullptr;
      }
      std::erase_if(*held, [](const Held& h) { return h.check == nullptr; });
      hosting = false;
      if (!ran) return;
      ctx.set_deadline(deadline);
      side.pacer->set_current_check(id);
      if (side.progress) side.progress->check(n, m, id);
    });
  checks::CheckResult r;
  try {
    r = check.run(ctx);
  } catch (const std::exception& ex) {
    // A check must not throw; if one does, its result says so and the run goes on.
    r = checks::CheckResult::start(id);
    r.fail(core::make_error(core::ErrorCode::Internal, "the check failed unexpectedly", ex.what()));
  }
  if (held) ctx.set_idle_host(nullptr);
  r.id = id;
  r.duration_ms = core::to_ms(core::elapsed_us(t0, ctx.clock().now()));
  if (cut) *cut = cap && *cap < own_deadline && ctx.clock().now() >= *cap;
  return r;
}

void end_run(const RunPlan& plan, const Side& side, results::RunResult& out) {
  const checks::CheckContext& ctx = *side.ctx;
  const Pacer::Tally& tally = side.pacer->tally();
  if (side.progress) side.progress->done();
  out.run_metrics[rm::requests_count] = tally.spent;
  // Failed model requests by kind, for the errors rules.
  const auto& fails = tally.failures;
  auto count = [&](std::initializer_list<const char*> tokens) {
    int n = 0;
    for (const char* t : tokens)
      if (auto it = fails.find(t); it != fails.end()) n += it->second;
    return n;
  };
  int failed = 0;
  for (const auto& [_, n] : fails) failed += n;
  out.run_metrics[rm::failed_count] = failed;
  out.run_metrics[rm::timeout_count] = count({"timeout"});
  out.run_metrics[rm::broken_stream_count] =
      count({"connection_closed", "connection_reset", "malformed_stream", "stream_error", "truncated_stream", "response_too_large"});
  out.run_metrics[rm::server_error_count] = tally.server_errors;
  out.run_metrics[rm::tls_failed_count] = count({"tls_failed"});
  out.run_metrics[rm::tls_verify_off] = ctx.target().scheme == "https" && ctx.endpoint().tls.insecure ? 1 : 0;
  out.run_metrics[rm::rate_limited_count] = tally.rate_limited;
  out.run_metrics[rm::rate_limited_tokens_count] = tally.rate_limited_tokens;
  // A provider that caches prompts is a fact of the endpoint: every prompt of the run was unique,
  // so what it served from cache was the shared chat template or an earlier identical prompt.
  out.run_metrics[rm::cached_prompts_count] = tally.cached_prompts;
  out.run_metrics[rm::retry_wait_ms] = tally.retry_wait_ms;
  out.run_metrics[rm::overloaded_count] = tally.overloaded;
  out.run_metrics[rm::overload_wait_ms] = tally.overload_wait_ms;
  out.run_metrics[rm::model_loading_count] = tally.loading_answers;
  if (tally.loading_wait_max_ms > 0) out.run_metrics[rm::model_loading_wait_max_ms] = tally.loading_wait_max_ms;
  out.run_requests = side.pacer->own_requests();
  for (const auto& [k, v] : results::request_metrics(out.checks, ctx.models().target)) out.run_metrics[k] = v;
  for (const auto& [k, v] : price_workload(plan.workload, out.checks)) out.run_metrics[k] = v;
  // The books of the run's requests, closed against the terms just priced.
  {
    const auto series = results::read_series(out.checks, ctx.models().target);
    const Books books = close_books(results::ledger(out.checks), out.checks, out.run_metrics, series.slow_ids,
                                    ctx.models().target, ctx.models().small);
    for (const auto& [k, v] : books.metrics) out.run_metrics[k] = v;
  }
  // The tokens a minute the reference request needs at its concurrency, back to back: what a
  // tokens-per-minute quota is held against.
  {
    const auto& m = out.run_metrics;
    const auto t = m.find(rm::workload_total_ms), streams = m.find(rm::workload_concurrency_count),
               prompt = m.find(rm::workload_prompt_tokens_count), output = m.find(rm::workload_output_tokens_count);
    if (t != m.end() && t->second > 0 && streams != m.end() && prompt != m.end() && output != m.end())
      out.run_metrics[rm::workload_tokens_per_min_count] =
          streams->second * (prompt->second + output->second) * 60000.0 / t->second;
  }
  if (const EngineScraper* e = side.engine) {
    for (const auto& [k, v] : engine_metrics(e->snapshots())) out.run_metrics[k] = v;
    out.engine = {{"url", e->url()},
                  {"engine", e->snapshots().empty() ? nlohmann::json(nullptr) : nlohmann::json(e->snapshots().front().engine)},
                  {"scrapes_count", e->snapshots().size()},
                  {"failure", core::text_or_null(e->failure())}};
  }
  out.adaptations = side.pacer->adaptations();
  out.finished_at = core::rfc3339_utc(std::chrono::system_clock::now());
  if (core::interrupted()) out.interrupted_by = core::interrupt_name();
  out.unreachable = side.pacer->unreachable();
}

}  // namespace

std::vector<results::RunResult> run_interleaved(const RunPlan& plan, const std::vector<Side>& sides) {
  WakeWatch wakes;  // how late the host wakes the run's threads, while it runs
  std::vector<results::RunResult> out;
  for (const auto& side : sides) out.push_back(begin_run(*side.ctx));
  for (const auto& side : sides)
    if (side.engine) side.engine->scrape(side.ctx->http(), "");
  std::vector<std::optional<core::SteadyTime>> deadlines;
  for (const auto& side : sides)
    deadlines.push_back(plan.run_timeout.count() > 0 ? std::optional(side.ctx->clock().now() + plan.run_timeout) : std::nullopt);
  const int m = static_cast<int>(plan.checks.size());
  std::vector<std::vector<Held>> held(sides.size());  // per side, the checks held for the next idle gaps
  for (std::size_t i = 0; i < sides.size(); ++i) sides[i].ctx->set_earlier_checks(&out[i].checks);
  for (std::size_t turn = 0; turn < plan.checks.size(); ++turn) {
    const checks::Check& check = *plan.checks[turn];
    const int n = static_cast<int>(turn + 1);
    const auto host = idle_host(plan, turn);
    for (std::size_t k = 0; k < sides.size(); ++k) {
      const std::size_t i = (turn + k) % sides.size();  // who goes first rotates from check to check
      // Held for the idle gaps, unless this side's requests need it first (Check::idle_now).
      if (host && check.idle_now(*sides[i].ctx)) {
        held[i].push_back({&check, n, *host});
        continue;
      }
      const bool hosts = !held[i].empty() && held[i].front().host == turn;
      out[i].checks.push_back(run_one(check, plan, sides[i], out[i], n, m, deadlines[i], hosts ? &held[i] : nullptr));
      if (sides[i].engine) sides[i].engine->scrape(sides[i].ctx->http(), check.info().id);
      if (!hosts) continue;
      // What did not run inside the gaps (they were too short, or the check waited none) runs now.
      for (const auto& h : held[i]) out[i].checks.push_back(run_one(*h.check, plan, sides[i], out[i], h.n, m, deadlines[i]));
      held[i].clear();
    }
  }
  // Results in the plan's order, whichever ran inside another's gaps.
  std::map<std::string, std::size_t> turn_of;
  for (std::size_t i = 0; i < plan.checks.size(); ++i) turn_of.emplace(plan.checks[i]->info().id, i);
  for (auto& r : out)
    std::stable_sort(r.checks.begin(), r.checks.end(), [&](const checks::CheckResult& a, const checks::CheckResult& b) {
      const auto at = [&](const std::string& id) {
        const auto it = turn_of.find(id);
        return it == turn_of.end() ? plan.checks.size() : it->second;
      };
      return at(a.id) < at(b.id);
    });
  const stats::Summary late = wakes.stop();
  for (std::size_t i = 0; i < sides.size(); ++i) {
    sides[i].ctx->set_earlier_checks(nullptr);  // the results leave with the return
    end_run(plan, sides[i], out[i]);
    out[i].run_metrics[rm::client_wakes_count] = static_cast<double>(late.count);
    if (late.p50) out[i].run_metrics[rm::client_wake_late_p50_ms] = *late.p50;
    if (late.p99) out[i].run_metrics[rm::client_wake_late_p99_ms] = *late.p99;
    if (late.max) out[i].run_metrics[rm::client_wake_late_max_ms] = *late.max;
  }
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

core::Result<rules::RuleSet> load_rules(const std::string& dir, std::vector<std::string>& warnings) {
  rules::LoadReport report;
  rules::RuleSet set = dir.empty() ? rules::load_texts(rules::embedded_rules(), known_metrics(), report)
                                   : rules::load_dir(dir, known_metrics(), report);
  warnings = report.warnings;
  if (report.errors.empty()) return set;
  return core::make_error(core::ErrorCode::ConfigError,
                          std::to_string(report.errors.size()) + " error(s) in the rules", core::join(report.errors, "\n"));
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
  // The proxy the requests went through is the first intermediary a reader looks at.
  for (const auto& e : results::ledger(r))
    if (!e.s().proxy.empty()) {
      where = "the proxy " + e.s().proxy + (where.empty() ? "" : "; " + where);
      break;
    }
  for (auto& f : r.diagnosis) {
    if (f.scope == "intermediary") f.where = where;
    if (f.cause == "cold_start") f.where = loading;
    if (f.cause == "slow_replica") f.where = replicas;
  }
}

}  // namespace infdoctor::run
