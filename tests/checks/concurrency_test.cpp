#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

// The concurrency check at `levels` against a model that serves `slots` sequences at once.
checks::CheckResult concurrency_with_slots(int slots, const std::string& levels) {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 4, "slots": )" +
                                 std::to_string(slots) + "}}}");
  return test::run_check("concurrency", {server->base_url(),
                                         {{"concurrency.levels", levels}, {"concurrency.max_tokens", "8"}},
                                         "",
                                         {"m", ""}});
}

}  // namespace

TEST_CASE("concurrency: slots=1 serves requests one after another") {
  const auto c = concurrency_with_slots(1, "1,2,4,8");
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "latency_growth_ratio") > 0.8);       // makespan grows with the streams
  CHECK(test::metric(c, "throughput_scaling_ratio") < 0.25);  // throughput does not
  CHECK(test::metric(c, "knee_level_count") == 1);
  CHECK(test::metric(c, "ttft_growth_ratio") > 2);
}

TEST_CASE("concurrency: slots=16 lets throughput grow with concurrency") {
  const auto c = concurrency_with_slots(16, "1,2,4,8,16");
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "throughput_scaling_ratio") > 0.7);
  CHECK(test::metric(c, "latency_growth_ratio") < 0.2);
  CHECK_FALSE(c.metrics.count("knee_level_count"));  // still scaling at 16: no knee to name
  CHECK(c.details["levels"].size() == 5);
}

}  // namespace infdoctor
