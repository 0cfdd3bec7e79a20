// The dns check against a DNS responder on loopback with planted delays and failures.
#include <doctest/doctest.h>

#include "run/runner.h"
#include "support/checks_support.h"
#include "fake/dns_server.h"

namespace infdoctor {
namespace {

using fake::DnsMode;
using fake::DnsName;

std::map<std::string, DnsName> zone() {
  return {{"api.lab.test", DnsName{DnsMode::Answer, {"198.51.100.2", "198.51.100.3"}, {"2001:db8::2"}, 300}},
          {"gone.lab.test", DnsName{DnsMode::Nxdomain, {}, {}, 60}},
          {"broken.lab.test", DnsName{DnsMode::Servfail, {}, {}, 60}},
          {"closed.lab.test", DnsName{DnsMode::Refused, {}, {}, 60}},
          {"lossy.lab.test", DnsName{DnsMode::DropFirst, {"198.51.100.2"}, {}, 60}},
          {"dead.lab.test", DnsName{DnsMode::DropAll, {}, {}, 60}}};
}

checks::CheckResult run_dns(const fake::DnsResponder& r, const std::string& host, int samples = 3,
                        const std::string& timeout_ms = "2000") {
  return test::run_check("dns", "https://" + host + "/v1",
                         {{"dns.resolvers", r.address()}, {"dns.system", "0"}, {"dns.samples", std::to_string(samples)},
                          {"dns.timeout_ms", timeout_ms}});
}

}  // namespace

TEST_CASE("dns: a resolver delaying 150 ms measures 150 ms, with every address and TTL") {
  fake::DnsResponder r("127.0.0.1", 0, zone(), 150);
  const auto c = run_dns(r, "api.lab.test");
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(std::abs(test::metric(c, "p50_ms") - 150.0) < 10.0);
  CHECK(test::metric(c, "samples_count") == 6);  // 3 samples x (A, AAAA)
  CHECK(test::metric(c, "failures_count") == 0);
  CHECK(test::metric(c, "addresses_count") == 3);
  CHECK(test::metric(c, "min_ttl_s") == 300);
  CHECK(c.details["addresses"] == nlohmann::json({"198.51.100.2", "198.51.100.3", "2001:db8::2"}));
  CHECK(c.samples.size() == 6);
}

TEST_CASE("dns: NXDOMAIN, SERVFAIL and REFUSED are reported as such") {
  fake::DnsResponder r("127.0.0.1", 0, zone(), 0);
  struct Case {
    const char* host;
    const char* token;
    const char* metric;
  };
  const Case cases[] = {{"gone.lab.test", "dns_nxdomain", "nxdomain_count"},
                        {"broken.lab.test", "dns_servfail", "servfail_count"},
                        {"closed.lab.test", "dns_refused", "refused_count"}};
  for (const auto& k : cases) {
    SUBCASE(k.host) {
      const auto c = run_dns(r, k.host, 2);
      CHECK(c.status == checks::CheckStatus::Error);
      CHECK(c.error == k.token);
      CHECK(test::metric(c, k.metric) == 4);
      CHECK(test::metric(c, "failures_count") == 4);
    }
  }
}

TEST_CASE("dns: a dropped first query is retried and counted, and its time includes the wait") {
  fake::DnsResponder r("127.0.0.1", 0, zone(), 0);
  const auto c = run_dns(r, "lossy.lab.test", 2, "300");
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "retries_count") == 1);
  CHECK(test::metric(c, "max_ms") >= 290.0);
  CHECK(test::metric(c, "failures_count") == 0);
}

TEST_CASE("dns: a resolver that never answers times out within its deadline") {
  fake::DnsResponder r("127.0.0.1", 0, zone(), 0);
  const auto t0 = core::SteadyClock::now();
  const auto c = run_dns(r, "dead.lab.test", 1, "200");
  const double took = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now()));
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.error == "dns_timeout");
  CHECK(test::metric(c, "timeouts_count") == 2);
  // Two families; c-ares doubles the wait for the second try: 2 x (200 + 400) ms, and slack.
  CHECK(took < 2 * (200 + 400) + 500);
}

TEST_CASE("dns: the run goes on after a failed lookup") {
  fake::DnsResponder r("127.0.0.1", 0, zone(), 0);
  run::RunPlan plan;
  plan.check_ids = {"dns", "path", "transport"};
  plan.options.set("dns.resolvers", r.address());
  plan.options.set("dns.system", "0");
  plan.options.set("dns.samples", "1");
  REQUIRE(run::prepare(plan).ok());
  auto target = checks::parse_target("https://gone.lab.test/v1");
  REQUIRE(target.ok());
  api::Endpoint ep;
  ep.base_url = "https://gone.lab.test/v1";
  run::Pacer pacer(core::real_clock(), 100);
  checks::Ports ports;
  ports.model = &pacer;
  checks::CheckContext ctx(target.value(), ep, std::move(ports));
  const auto result = run::run_checks(plan, {&ctx, &pacer});
  REQUIRE(result.checks.size() == 3);
  CHECK(result.checks[0].error == "dns_nxdomain");
  CHECK(result.checks[1].status == checks::CheckStatus::Skipped);
  CHECK(result.checks[2].status == checks::CheckStatus::Skipped);
  CHECK(result.checks[1].reason.find("did not resolve") != std::string::npos);
}

TEST_CASE("dns: an IP address needs no lookup") {
  const auto c = test::run_check("dns", "http://127.0.0.1:9/v1", {{"dns.system", "0"}});
  CHECK(c.status == checks::CheckStatus::Skipped);
}

TEST_CASE("dns: a bad resolver is a configuration error") {
  const auto c = test::run_check("dns", "https://api.lab.test/v1", {{"dns.resolvers", "not-an-ip"}, {"dns.system", "0"}});
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.error == "config_error");
}

}  // namespace infdoctor
