#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("coldstart: planted 1500 ms after 3 s idle is found between the gaps that bracket 3 s") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 60, "cold_start": {"idle_s": 3, "penalty_ms": 1500}}}})");
  const auto c = test::run_check("coldstart", {server->base_url(), {{"coldstart.idle_gaps", "0,1,2,4,5"}}, "", {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "threshold_low_s") == 2);
  CHECK(test::metric(c, "threshold_s") == 4);
  CHECK(test::metric(c, "penalty_ms") == doctest::Approx(1500).epsilon(0.10));
  CHECK(test::metric(c, "cold_gaps_count") == 2);
  CHECK(test::metric(c, "baseline_ttft_p50_ms") == doctest::Approx(60).epsilon(0.2));
}

TEST_CASE("coldstart: no cold start planted, none reported") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 60, "jitter_ms": 5}}})");
  const auto c = test::run_check("coldstart", {server->base_url(), {{"coldstart.idle_gaps", "0,1,2"}}, "", {"m", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(test::metric(c, "cold_gaps_count") == 0);
  CHECK(c.metrics.count("penalty_ms") == 0);
  CHECK(c.metrics.count("threshold_s") == 0);
}

TEST_CASE("coldstart: the first request of the run pays a start-up penalty") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 50, "cold_start": {"at_start": true, "penalty_ms": 800}}}})");
  const auto c = test::run_check("coldstart", {server->base_url(), {{"coldstart.idle_gaps", "0"}}, "", {"m", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(test::metric(c, "first_request_penalty_ms") == doctest::Approx(800).epsilon(0.10));
}

TEST_CASE("coldstart: a 429 with Retry-After: 2 delays the next request by at least 2 s") {
  auto server = test::start_fake(R"({"models": {"m": {"faults": [{"kind": "429", "first": 1, "retry_after_s": 2}]}}})");
  checks::CheckContext* ctx = nullptr;
  const auto c = test::run_check("coldstart", {server->base_url(), {{"coldstart.idle_gaps", "0"},
                                                                    {"coldstart.baseline_samples", "2"}}, "", {"m", ""}},
                                 &ctx);
  const auto served = server->served();
  REQUIRE(served.size() >= 2);
  CHECK(served[0].status == 429);
  CHECK(served[1].arrived - served[0].arrived >= std::chrono::seconds(2));
  CHECK(ctx->rate_limited_count() == 1);
  CHECK(c.status == checks::CheckStatus::Ok);
}

}  // namespace infdoctor
