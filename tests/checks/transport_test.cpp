// The transport check on loopback against the fake provider, plain and TLS.
#include <doctest/doctest.h>

#include "fake/dns_server.h"
#include "run/runner.h"
#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("transport: TLS 1.3, certificate chain, keep-alive and what reuse saves") {
  auto server = test::start_fake(R"({"models": {"m": {}}})", /*tls=*/true);
  const auto c = test::run_check("transport", server->base_url(), {{"transport.samples", "4"}}, test::ca_pem());
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "samples_count") == 4);
  CHECK(test::metric(c, "tls_p50_ms") > 0);
  CHECK(test::metric(c, "tls13_ratio") == 1);
  CHECK(test::metric(c, "cert_chain_count") == 1);
  CHECK(test::metric(c, "cert_chain_bytes") > 200);
  CHECK(test::metric(c, "keepalive_ratio") == 1);
  CHECK(test::metric(c, "reuse_saves_ms") > 0);  // no TLS handshake on a reused connection
  const auto& row = c.details["addresses"][0];
  CHECK(row["http_status"] == 200);
  CHECK(row["tls"]["version"] == "TLSv1.3");
}

TEST_CASE("transport: plain HTTP has no TLS numbers") {
  auto server = test::start_fake(R"({"models": {"m": {}}})");
  const auto c = test::run_check("transport", server->base_url(), {{"transport.samples", "2"}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(c.metrics.count("tls_p50_ms") == 0);
  CHECK(c.metrics.count("connect_p50_ms") == 1);
}

TEST_CASE("transport: failures are the check's status with their reason") {
  SUBCASE("TLS verification fails without the CA") {
    auto server = test::start_fake(R"({"models": {"m": {}}})", /*tls=*/true);
    const auto c = test::run_check("transport", server->base_url(), {{"transport.samples", "2"}});
    CHECK(c.status == checks::CheckStatus::Error);
    CHECK(c.error == "tls_failed");
    CHECK(c.reason.rfind("tls: ", 0) == 0);
  }
  SUBCASE("refused port") {
    std::uint16_t port;
    {
      auto server = test::start_fake(R"({"models": {"m": {}}})");
      port = server->port();
    }
    const auto c = test::run_check("transport", "http://127.0.0.1:" + std::to_string(port) + "/v1",
                                   {{"transport.samples", "2"}});
    CHECK(c.status == checks::CheckStatus::Error);
    CHECK(c.error == "connect_failed");
    CHECK(c.reason.rfind("connect: ", 0) == 0);
  }
}

TEST_CASE("transport: with one address it runs inside the cold-start check's idle gap, with two before the first model request") {
  // The host resolves (a DNS responder on loopback) to the fake's address alone, or to it and
  // 127.0.0.2, where nothing listens: then the transport check must have left an address that
  // never answers before the run's first model request, and runs in its turn.
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 30}}})");
  const int port = std::stoi(server->base_url().substr(server->base_url().rfind(':') + 1));
  for (const bool two : {false, true}) {
    CAPTURE(two);
    std::vector<std::string> a = {"127.0.0.1"};
    if (two) a.push_back("127.0.0.2");
    fake::DnsResponder dns("127.0.0.1", 0, {{"api.lab.test", fake::DnsName{fake::DnsMode::Answer, a, {}, 60}}}, 0);
    run::RunPlan plan;
    plan.check_ids = {"dns", "transport", "coldstart"};
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"dns.resolvers", dns.address()}, {"dns.system", "0"}, {"dns.samples", "1"}, {"transport.samples", "2"},
             {"coldstart.idle_gaps", "0,2"}, {"coldstart.baseline_samples", "1"}})
      plan.options.set(k, v);
    REQUIRE(run::prepare(plan).ok());
    const std::string url = "http://api.lab.test:" + std::to_string(port) + "/v1";
    auto target = checks::parse_target(url);
    REQUIRE(target.ok());
    api::Endpoint ep;
    ep.base_url = url;
    run::Pacer pacer(core::real_clock(), 100);
    checks::Ports ports;
    ports.model = &pacer;
    checks::CheckContext ctx(target.value(), ep, std::move(ports));
    ctx.set_models({"Qwen2.5-7B-Instruct", ""});
    const auto result = run::run_checks(plan, {&ctx, &pacer});
    REQUIRE(result.checks.size() == 3);
    const auto& transport = result.checks[1];
    const auto& coldstart = result.checks[2];
    REQUIRE(transport.id == "transport");
    REQUIRE(coldstart.id == "coldstart");
    CHECK(coldstart.status == checks::CheckStatus::Ok);
    CHECK(test::metric(transport, "addresses_count") == static_cast<double>(a.size()));
    CHECK(transport.details.contains("ran_inside") == !two);
    if (!two) CHECK(transport.details["ran_inside"] == "coldstart");
  }
}

}  // namespace infdoctor
