// The transport check on loopback against the fake provider, plain and TLS.
#include <doctest/doctest.h>

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

}  // namespace infdoctor
