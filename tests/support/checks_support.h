#pragma once
// Runs one check in-process against a target, as `infdoctor run` would.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "checks/registry.h"

namespace infdoctor::test {

struct CheckSetup {
  std::string base_url;
  std::vector<std::pair<std::string, std::string>> options;
  std::string cacert;
  checks::Models models;
  int max_requests = 1000000;
  std::chrono::seconds deadline{120};
};

inline checks::CheckResult run_check(const std::string& id, const CheckSetup& setup,
                                     checks::CheckContext** ctx_out = nullptr) {
  checks::Options o;
  for (const auto& [k, v] : setup.options) o.set(k, v);
  auto target = checks::parse_target(setup.base_url);
  REQUIRE(target.ok());
  api::Endpoint ep;
  ep.base_url = setup.base_url;
  ep.tls.cacert = setup.cacert;
  ep.timeout = std::chrono::seconds(30);
  // The context outlives the call, so a test can ask it what was spent (ctx_out).
  static thread_local std::unique_ptr<checks::CheckContext> ctx;
  ctx = std::make_unique<checks::CheckContext>(target.value(), ep);
  if (target->host_is_ip) ctx->set_addresses({target->host});
  ctx->set_models(setup.models);
  ctx->set_max_requests(setup.max_requests);
  ctx->set_deadline(core::SteadyClock::now() + setup.deadline);
  if (ctx_out) *ctx_out = ctx.get();
  for (const auto& e : checks::registry()) {
    if (e.id != id) continue;
    auto check = e.make(o);
    REQUIRE_MESSAGE(o.errors().empty(), (o.errors().empty() ? std::string() : o.errors().front()));
    checks::CheckResult r = check->run(*ctx);
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
  return run_check(id, CheckSetup{base_url, options, cacert, {}, 1000000, std::chrono::seconds(60)});
}

inline double metric(const checks::CheckResult& r, const std::string& name) {
  auto it = r.metrics.find(name);
  REQUIRE_MESSAGE(it != r.metrics.end(), "metric " << r.id << "." << name << " missing");
  return it->second;
}

}  // namespace infdoctor::test
