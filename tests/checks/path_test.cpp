// The path check on loopback: answers, refusals and deadlines. Round trips over a real delay are
// in network_lab_test.cpp.
#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("path: TCP ping and hops to a listening port") {
  auto server = test::start_fake(R"({"models": {"m": {}}})");
  const auto c = test::run_check("path", server->base_url(),
                                 {{"path.samples", "5"}, {"path.interval_ms", "0"}, {"path.max_hops", "3"}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "tcp_rtt_samples_count") == 5);
  CHECK(test::metric(c, "tcp_loss_ratio") == 0);
  CHECK(test::metric(c, "tcp_rtt_p50_ms") < 5.0);
  CHECK(test::metric(c, "hops_count") == 1);  // loopback: the destination is the first hop
  const auto& hops = c.details["addresses"][0]["hops"];
  CHECK(hops["reached"] == true);
  CHECK(hops["table"][0]["address"] == "127.0.0.1");
}

TEST_CASE("path: a refused port still measures the round trip, and says it was refused") {
  std::uint16_t port;
  {
    auto server = test::start_fake(R"({"models": {"m": {}}})");
    port = server->port();
  }
  const auto c = test::run_check("path", "http://127.0.0.1:" + std::to_string(port) + "/v1",
                                 {{"path.samples", "3"}, {"path.interval_ms", "0"}, {"path.trace", "off"}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(test::metric(c, "tcp_rtt_samples_count") == 3);
  CHECK(c.details["addresses"][0]["tcp"]["failures"]["connect_refused"] == 3);
}

TEST_CASE("path: bad settings are configuration errors before anything runs") {
  checks::Options o;
  o.set("path.trace", "icmp");
  o.set("path.samples", "-3");
  const auto problems = checks::setting_problems(o);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "path.samples: '-3' is not a whole number in [1, 1000]");
  CHECK(problems[1] == "path.trace: 'icmp' is not one of udp, tcp, off");
}

}  // namespace infdoctor
