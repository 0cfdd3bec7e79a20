#include <doctest/doctest.h>

#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

// The concurrency check at `levels` against a model that serves `slots` sequences at once. A
// request takes 180 ms alone: the tens of milliseconds over which a loaded machine spreads the
// start of sixteen connections stay small beside it, so the streams of a level overlap.
checks::CheckResult concurrency_with_slots(int slots, const std::string& levels, double batch_penalty = 0) {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 20, "slots": )" +
                                 std::to_string(slots) + R"(, "batch_decode_penalty": )" + std::to_string(batch_penalty) +
                                 "}}}");
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

TEST_CASE("concurrency: k slots of continuous batching, k drawn from 2..4, are found as k, and the streams beyond wait") {
  std::mt19937 rng(20261204);
  for (int draw = 0; draw < 3; ++draw) {
    const int k = std::uniform_int_distribution<int>(2, 4)(rng);
    const double penalty = std::uniform_real_distribution<double>(0, 0.1)(rng);
    CAPTURE(k);
    CAPTURE(penalty);
    const auto c = concurrency_with_slots(k, "1,2,4,8,16", penalty);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    // k sequences at once, each 1 + penalty (k - 1) times slower per token.
    const double expected = k / (1 + penalty * (k - 1));
    CHECK(test::metric(c, "parallelism_count") == doctest::Approx(expected).epsilon(0.25));
    CHECK(test::metric(c, "queue_wait_p90_services_ratio") >= 1.0);  // 16 streams, k <= 4: waits of whole requests
  }
}

TEST_CASE("concurrency: continuous batching with many slots makes nobody wait for one") {
  const auto c = concurrency_with_slots(64, "1,2,4,8,16", 0.05);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "parallelism_count") == doctest::Approx(16 / (1 + 0.05 * 15)).epsilon(0.2));
  CHECK(test::metric(c, "queue_wait_p90_services_ratio") < 0.5);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("concurrency: a level most of whose streams are refused stops the check, and the error says they were rate limited") {
  // A bucket of 3 requests refilled slowly: the levels of 1 and 2 fit, the level of 4 meets 429s.
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 5,
                                     "bucket_size": 3, "bucket_per_s": 0.01}}})");
  const auto c = test::run_check("concurrency", {server->base_url(),
                                                 {{"concurrency.levels", "1,2,4,8"}, {"concurrency.max_tokens", "8"}},
                                                 "",
                                                 {"m", ""}});
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.reason.find("stopped at 4 streams") != std::string::npos);
  CHECK(c.reason.find("refused with 429: rate limited") != std::string::npos);
  CHECK(test::metric(c, "rate_limited_count") >= 3);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("concurrency: one stream is the run's earlier answer to the same request alone, read and not sent again") {
  // The baseline's answers to the target at 32 prompt tokens and 32 output tokens are the request
  // the level of one stream sends: the newest is read as that level. At 64 output tokens they are
  // another request, and the level is sent.
  const double decode = std::uniform_real_distribution<double>(10, 20)(test::rng());
  CAPTURE(decode);
  auto server = test::start_fake(R"({"models": {"Llama-3.1-70B-Instruct": {"overhead_ms": 60, "decode_ms_per_token": )" +
                                 std::to_string(decode) + R"(, "slots": 64}}})");
  const checks::Models models{"Llama-3.1-70B-Instruct", ""};
  const auto baseline = [&](const std::string& max_tokens) {
    const auto b = test::run_check("baseline", test::CheckSetup{server->base_url(),
                                                                {{"baseline.samples", "3"}, {"baseline.prompt_tokens", "32"},
                                                                 {"baseline.max_tokens", max_tokens}},
                                                                "",
                                                                models});
    REQUIRE_MESSAGE(b.status == checks::CheckStatus::Ok, b.reason);
    return b;
  };
  const auto concurrency_after = [&](const checks::CheckResult& before) {
    test::CheckSetup setup{server->base_url(), {{"concurrency.levels", "1,4"}}, "", models};
    setup.earlier = {before};
    const auto c = test::run_check("concurrency", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    return c;
  };
  const auto sent_alone = [](const checks::CheckResult& c) {
    int n = 0;
    for (const auto& [s, label] : c.requests) n += label.value("streams", 0) == 1 ? 1 : 0;
    return n;
  };
  SUBCASE("the same request: read, the level's numbers are the answer's") {
    const auto b = baseline("32");
    const auto c = concurrency_after(b);
    CHECK(sent_alone(c) == 0);
    CHECK(c.requests.size() == 4);
    const auto& newest = b.requests.back().sample;
    REQUIRE(c.details.contains("one_stream_read"));
    CHECK(c.details["one_stream_read"]["answers"][0]["check"] == "baseline");
    CHECK(c.details["one_stream_read"]["answers"][0]["seq"] == newest.seq);
    CHECK(test::metric(c, "ttft_p50_at_1_ms") == doctest::Approx(*checks::server_ttft_ms(newest)));
    CHECK(test::metric(c, "total_p50_at_1_ms") == doctest::Approx(*checks::server_total_ms(newest)));
    // A batching server: four streams take about one's time, whichever sent the one.
    CHECK(test::metric(c, "parallelism_count") > 2.5);
  }
  SUBCASE("another request (64 output tokens): the level is sent") {
    const auto c = concurrency_after(baseline("64"));
    CHECK(sent_alone(c) == 1);
    CHECK_FALSE(c.details.contains("one_stream_read"));
  }
}

}  // namespace infdoctor
