#include "run/runner.h"

#include <algorithm>

#include "checks/registry.h"
#include "core/redact.h"

namespace infdoctor::run {
namespace {

std::vector<const checks::CheckEntry*> selected(const RunPlan& plan) {
  std::vector<const checks::CheckEntry*> out;
  for (const auto& e : checks::registry()) {
    if (plan.check_ids.empty() ||
        std::find(plan.check_ids.begin(), plan.check_ids.end(), e.id) != plan.check_ids.end())
      out.push_back(&e);
  }
  return out;
}

}  // namespace

core::Status validate(const RunPlan& plan) {
  std::vector<std::string> problems;
  for (const auto& id : plan.check_ids) {
    const auto& reg = checks::registry();
    if (std::none_of(reg.begin(), reg.end(), [&](const checks::CheckEntry& e) { return e.id == id; })) {
      std::string known;
      for (const auto& e : reg) known += (known.empty() ? "" : ", ") + e.id;
      problems.push_back("unknown check '" + id + "' (known: " + known + ")");
    }
  }
  // Options of unknown checks are typos, not silently ignored settings.
  for (const auto& key : plan.options.keys()) {
    const std::string check = key.substr(0, key.find('.'));
    const auto& reg = checks::registry();
    if (key.find('.') == std::string::npos ||
        std::none_of(reg.begin(), reg.end(), [&](const checks::CheckEntry& e) { return e.id == check; }))
      problems.push_back("option '" + key + "' names no check (write CHECK.NAME=VALUE)");
  }
  // Every check's constructor reads and checks its options, selected or not: a bad value is a
  // mistake either way.
  for (const auto& e : checks::registry()) (void)e.make(plan.options);
  for (const auto& err : plan.options.errors()) problems.push_back(err);
  if (problems.empty()) return {};
  std::string detail;
  for (const auto& p : problems) detail += (detail.empty() ? "" : "\n") + p;
  return core::make_error(core::ErrorCode::ConfigError, "invalid configuration", detail);
}

RunResult run_checks(const RunPlan& plan, checks::CheckContext& ctx) {
  RunResult out;
  out.target = ctx.target();
  out.target.base_url = core::redact_url(out.target.base_url);
  out.started_at = core::rfc3339_utc(std::chrono::system_clock::now());
  if (ctx.target().host_is_ip) ctx.set_addresses({ctx.target().host});
  for (const auto* e : selected(plan)) {
    auto check = e->make(plan.options);
    const auto t0 = core::SteadyClock::now();
    ctx.set_deadline(t0 + plan.check_timeout);
    checks::CheckResult r;
    try {
      r = check->run(ctx);
    } catch (const std::exception& ex) {
      // A check must not throw; if one does, its result says so and the run goes on.
      r = checks::CheckResult::start(e->id);
      r.fail(core::make_error(core::ErrorCode::Internal, "the check failed unexpectedly", ex.what()));
    }
    r.id = e->id;
    r.duration_ms = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now()));
    out.checks.push_back(std::move(r));
  }
  ctx.progress("");
  out.finished_at = core::rfc3339_utc(std::chrono::system_clock::now());
  return out;
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json checks = nlohmann::json::object();
  for (const auto& c : r.checks) checks[c.id] = checks::to_json(c);
  return {{"schema", "infdoctor.results/1"},
          {"target",
           {{"base_url", r.target.base_url},
            {"scheme", r.target.scheme},
            {"host", r.target.host},
            {"port", r.target.port}}},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"checks", checks}};
}

}  // namespace infdoctor::run
