#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("concurrency: slots=1 serves requests one after another") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 4, "slots": 1}}})");
  const auto c = test::run_check("concurrency", {server->base_url(),
                                                 {{"concurrency.levels", "1,2,4,8"}, {"concurrency.max_tokens", "8"}},
                                                 "",
                                                 {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "latency_growth_ratio") > 0.8);       // makespan grows with the streams
  CHECK(test::metric(c, "throughput_scaling_ratio") < 0.25);  // throughput does not
  CHECK(test::metric(c, "knee_level_count") == 1);
  CHECK(test::metric(c, "ttft_growth_ratio") > 2);
}

TEST_CASE("concurrency: slots=16 lets throughput grow with concurrency") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 4, "slots": 16}}})");
  const auto c = test::run_check("concurrency", {server->base_url(),
                                                 {{"concurrency.levels", "1,2,4,8,16"}, {"concurrency.max_tokens", "8"}},
                                                 "",
                                                 {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "throughput_scaling_ratio") > 0.7);
  CHECK(test::metric(c, "latency_growth_ratio") < 0.2);
  CHECK(test::metric(c, "knee_level_count") == 16);
  CHECK(c.details["levels"].size() == 5);
}

}  // namespace infdoctor
