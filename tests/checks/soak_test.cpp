#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("soak: off unless asked") {
  const auto c = test::run_check("soak", {"http://127.0.0.1:9/v1", {}, "", {"m", ""}});
  CHECK(c.status == checks::CheckStatus::Skipped);
  CHECK(c.reason.find("--soak-minutes") != std::string::npos);
}

TEST_CASE("soak: steady load for a few seconds, steady numbers") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "decode_ms_per_token": 3}}})");
  const auto c = test::run_check("soak", {server->base_url(),
                                          {{"soak.minutes", "0.05"}, {"soak.interval_ms", "200"}, {"soak.max_tokens", "4"}},
                                          "",
                                          {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "samples_count") >= 12);
  CHECK(test::metric(c, "samples_count") <= 16);
  CHECK(test::metric(c, "ttft_p50_ms") == doctest::Approx(30).epsilon(0.2));
  CHECK(std::abs(test::metric(c, "ttft_drift_ms")) < 5);
  CHECK(test::metric(c, "slow_ratio") == 0);
}

}  // namespace infdoctor
