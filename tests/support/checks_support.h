#pragma once
// Runs one check in-process against a target, as `infdoctor run` would.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "checks/registry.h"
#include "run/pacer.h"
#include "run/runner.h"

namespace infdoctor::test {

struct CheckSetup {
  std::string base_url;
  std::vector<std::pair<std::string, std::string>> options;
  std::string cacert;
  checks::Models models;
  int max_requests = 1000000;
  std::chrono::seconds deadline{120};
  // Ports a test plugs in instead of the real ones: a fake clock, a scripted model. Without a
  // model port, requests go through a pacer of the run's kind.
  checks::Ports ports = {};
  std::chrono::milliseconds request_timeout{30000};  // each request's (--timeout)
  // The results of checks that ran before it in the run (CheckContext::earlier_checks).
  std::vector<checks::CheckResult> earlier = {};
};

inline checks::CheckResult run_check(const std::string& id, const CheckSetup& setup,
                                     run::Pacer** pacer_out = nullptr) {
  checks::Options o;
  for (const auto& [k, v] : setup.options) o.set(k, v);
  auto target = checks::parse_target(setup.base_url);
  REQUIRE(target.ok());
  api::Endpoint ep;
  ep.base_url = setup.base_url;
  ep.tls.cacert = setup.cacert;
  ep.timeout = setup.request_timeout;
  // The pacer outlives the call, so a test can ask it what was spent (pacer_out).
  checks::Ports ports = setup.ports;
  core::Clock& clock = ports.clock ? *ports.clock : core::real_clock();
  static thread_local std::unique_ptr<run::Pacer> pacer;
  pacer = std::make_unique<run::Pacer>(clock, setup.max_requests);
  if (!ports.model) ports.model = pacer.get();
  checks::CheckContext ctx(target.value(), ep, std::move(ports));
  if (target->host_is_ip) ctx.set_addresses({target->host});
  ctx.set_models(setup.models);
  ctx.set_earlier_checks(&setup.earlier);
  ctx.set_deadline(clock.now() + setup.deadline);
  if (pacer_out) *pacer_out = pacer.get();
  for (const auto& e : checks::registry()) {
    if (e.id != id) continue;
    const auto problems = checks::setting_problems(o);
    REQUIRE_MESSAGE(problems.empty(), (problems.empty() ? std::string() : problems.front()));
    auto check = e.make(o);
    checks::CheckResult r = check->run(ctx);
    // A check emits only what it declares: rules, compare, history and the reports read the
    // declaration, so an undeclared metric is one nobody can name.
    const auto& declared = check->info().metrics;
    for (const auto& [name, _] : r.metrics) {
      const std::string full = id + "." + name;
      CHECK_MESSAGE(std::any_of(declared.begin(), declared.end(), [&](const checks::MetricInfo& m) { return m.name == full; }),
                    "check " << id << " emits " << full << " but does not declare it");
    }
    return r;
  }
  FAIL("no check " << id);
  return {};
}

inline checks::CheckResult run_check(const std::string& id, const std::string& base_url,
                                     const std::vector<std::pair<std::string, std::string>>& options,
                                     const std::string& cacert = "") {
  return run_check(id, CheckSetup{base_url, options, cacert, {}, 1000000, std::chrono::seconds(60), {}});
}

// The check as a run runs it (run::run_checks): the runner, not the test, sets its deadline from
// `check_timeout` and the check's own plan. Needs a model port (and a clock port to be quick).
inline checks::CheckResult run_in_a_run(const std::string& id, const CheckSetup& setup, std::chrono::seconds check_timeout) {
  run::RunPlan plan;
  plan.check_ids = {id};
  for (const auto& [k, v] : setup.options) plan.options.set(k, v);
  plan.check_timeout = check_timeout;
  REQUIRE(run::prepare(plan).ok());
  auto target = checks::parse_target(setup.base_url);
  REQUIRE(target.ok());
  api::Endpoint ep;
  ep.base_url = setup.base_url;
  core::Clock& clock = setup.ports.clock ? *setup.ports.clock : core::real_clock();
  run::Pacer pacer(clock, setup.max_requests);
  checks::CheckContext ctx(target.value(), ep, setup.ports);
  if (target->host_is_ip) ctx.set_addresses({target->host});
  ctx.set_models(setup.models);
  auto result = run::run_checks(plan, {&ctx, &pacer});
  REQUIRE(result.checks.size() == 1);
  return std::move(result.checks[0]);
}

inline double metric(const checks::CheckResult& r, const std::string& name) {
  auto it = r.metrics.find(name);
  REQUIRE_MESSAGE(it != r.metrics.end(), "metric " << r.id << "." << name << " missing");
  return it->second;
}

}  // namespace infdoctor::test
