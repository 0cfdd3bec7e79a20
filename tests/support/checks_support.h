#pragma once
// Runs one check in-process against a target, as `infdoctor run` would.
#include <string>
#include <utility>
#include <vector>

#include "checks/registry.h"

namespace infdoctor::test {

inline checks::CheckResult run_check(const std::string& id, const std::string& base_url,
                                     const std::vector<std::pair<std::string, std::string>>& options,
                                     const std::string& cacert = "", std::vector<std::string> addresses = {},
                                     std::chrono::seconds deadline = std::chrono::seconds(60)) {
  checks::Options o;
  for (const auto& [k, v] : options) o.set(k, v);
  auto target = checks::parse_target(base_url);
  REQUIRE(target.ok());
  api::Endpoint ep;
  ep.base_url = base_url;
  ep.tls.cacert = cacert;
  ep.timeout = std::chrono::seconds(10);
  checks::CheckContext ctx(target.value(), ep);
  if (target->host_is_ip) ctx.set_addresses({target->host});
  if (!addresses.empty()) ctx.set_addresses(addresses);
  ctx.set_deadline(core::SteadyClock::now() + deadline);
  for (const auto& e : checks::registry()) {
    if (e.id != id) continue;
    auto check = e.make(o);
    REQUIRE_MESSAGE(o.errors().empty(), o.errors().front());
    checks::CheckResult r = check->run(ctx);
    return r;
  }
  FAIL("no check " << id);
  return {};
}

inline double metric(const checks::CheckResult& r, const std::string& name) {
  auto it = r.metrics.find(name);
  REQUIRE_MESSAGE(it != r.metrics.end(), "metric " << r.id << "." << name << " missing");
  return it->second;
}

}  // namespace infdoctor::test
