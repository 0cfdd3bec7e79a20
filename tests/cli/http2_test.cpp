// `infdoctor run` over HTTP/2 through a real nghttpx in front of the fake provider: streams
// multiplexed on one connection against streams on connections of their own.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/fronts.h"
#include "support/results.h"

namespace infdoctor {
namespace {

nlohmann::json run_json(const std::string& base_url, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--base-url", base_url, "--model", "big", "--quick", "--checks", "concurrency"};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::run_results(args);
}

using test::finding;
using test::rules_fired;

int count_over(const nlohmann::json& samples, const std::string& version, bool own_connections) {
  int n = 0;
  for (const auto& s : samples)
    if (s["http_version"] == version && s["label"].value("own_connections", false) == own_connections) ++n;
  return n;
}

}  // namespace

TEST_CASE("HTTP/2 through nghttpx forwarding two streams of a connection at once: a limit per connection at the intermediary, not the server's slots") {
  // The engine batches every stream; the gateway forwards two streams of one client connection at a time.
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10}}})");
  test::Nghttpx front(test::address_of(*server), {"--backend-connections-per-frontend=2"});
  const auto j = run_json(front.base_url(), {"--cacert", test::ca_pem()});
  CAPTURE(rules_fired(j));
  const auto& c = j["checks"]["concurrency"];
  const auto& m = c["metrics"];
  MESSAGE("shared connection: mean wait " << m["queue_wait_mean_at_max_ms"] << " ms, p90 "
                                         << m["queue_wait_p90_services_ratio"] << " requests; own connections: mean "
                                         << m["separate_queue_wait_mean_at_max_ms"] << " ms, p90 "
                                         << m["separate_queue_wait_p90_services_ratio"]);
  CHECK(m["multiplexed_ratio"].get<double>() == 1.0);
  // --quick: levels 1, 2, 4, 8 shared a connection (15 streams), then 8 more each on its own.
  CHECK(count_over(c["samples"], "2", false) == 15);
  CHECK(count_over(c["samples"], "2", true) == 8);
  CHECK(c["details"]["own_connections"]["streams"] == 8);
  CHECK(m["queue_wait_p90_services_ratio"].get<double>() >= 0.5);
  CHECK(m["separate_queue_wait_p90_services_ratio"].get<double>() < 0.25);
  const auto* f = finding(j, "queueing.connection_streams");
  REQUIRE(f != nullptr);
  CHECK((*f)["scope"] == "intermediary");
  CHECK((*f)["where"].get<std::string>().find("server nghttpx") != std::string::npos);
  // Two at a time, 190 ms each: of eight streams two wait 0, two 190, two 380, two 570 ms.
  CHECK((*f)["impact_ms"].get<double>() == doctest::Approx(285).epsilon(0.2));
  CHECK(finding(j, "queueing.slots") == nullptr);
}

TEST_CASE("HTTP/2 through nghttpx to a server with two slots: separate connections wait as long, so it is the server's queue") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10, "slots": 2}}})");
  test::Nghttpx front(test::address_of(*server), {"--backend-connections-per-frontend=0"});
  const auto j = run_json(front.base_url(), {"--cacert", test::ca_pem()});
  CAPTURE(rules_fired(j));
  const auto& m = j["checks"]["concurrency"]["metrics"];
  MESSAGE("two slots: shared connection p90 " << m["queue_wait_p90_services_ratio"] << ", own connections p90 "
                                              << m["separate_queue_wait_p90_services_ratio"] << " requests");
  CHECK(m["multiplexed_ratio"].get<double>() == 1.0);
  CHECK(m["separate_queue_wait_p90_services_ratio"].get<double>() >= 0.5);
  const auto* f = finding(j, "queueing.slots");
  REQUIRE(f != nullptr);
  CHECK((*f)["scope"] == "target_model");
  CHECK(finding(j, "queueing.connection_streams") == nullptr);
}

TEST_CASE("HTTP/1.1: every stream has its own connection already, so no pass on separate connections is sent") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10}}})");
  const auto j = run_json(server->base_url(), {});
  const auto& c = j["checks"]["concurrency"];
  CHECK(c["metrics"]["multiplexed_ratio"].get<double>() == 0.0);
  CHECK_FALSE(c["metrics"].contains("separate_queue_wait_mean_at_max_ms"));
  CHECK_FALSE(c["details"].contains("own_connections"));
  CHECK(count_over(c["samples"], "1.1", false) == 15);
  CHECK(server->served().size() == 15);
}

}  // namespace infdoctor
