#include <doctest/doctest.h>

#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/seed.h"

namespace infdoctor {

TEST_CASE("baseline: small model 10 ms per token, target 60 ms: the ratio comes out at 6") {
  auto server = test::start_fake(R"({"models": {
      "small": {"overhead_ms": 30, "decode_ms_per_token": 10},
      "big": {"overhead_ms": 90, "decode_ms_per_token": 60}}})");
  const auto c = test::run_check("baseline", {server->base_url(), {{"baseline.samples", "3"}, {"baseline.max_tokens", "24"}},
                                              "", {"big", "small"}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "tpot_ratio") == doctest::Approx(6.0).epsilon(0.10));
  CHECK(test::metric(c, "tpot_p50_ms") == doctest::Approx(60.0).epsilon(0.05));
  CHECK(test::metric(c, "small_tpot_p50_ms") == doctest::Approx(10.0).epsilon(0.10));
  CHECK(test::metric(c, "ttft_ratio") == doctest::Approx(3.0).epsilon(0.15));
  CHECK(test::metric(c, "samples_count") == 3);
  CHECK(test::metric(c, "small_samples_count") == 3);
  CHECK(test::metric(c, "ttft_p50_ci_low_ms") <= test::metric(c, "ttft_p50_ms"));
  CHECK(test::metric(c, "ttft_p50_ci_high_ms") >= test::metric(c, "ttft_p50_ms"));
  CHECK(c.requests.size() == 6);
}

TEST_CASE("baseline: sizes in the names give target over small, a 70B beside an 8B is 8.75, and a healthy pair is explained") {
  // Healthy serving: time per token in proportion to the active parameters' bytes read (a 70B at
  // 8.75 times an 8B's), as on one fleet. Drawn at random so that no single planted value passes.
  const struct {
    const char* target;
    const char* small;
    double size_ratio;
  } pairs[] = {{"Llama-3.1-70B-Instruct", "Llama-3.1-8B-Instruct", 70.0 / 8},
               {"Qwen2.5-72B-Instruct", "Qwen2.5-7B-Instruct", 72.0 / 7},
               {"Llama-3.1-405B-Instruct", "Llama-3.1-8B-Instruct", 405.0 / 8},
               {"Qwen3-30B-A3B", "Qwen2.5-1.5B-Instruct", 3.0 / 1.5}};
  std::mt19937 rng(test::seed());
  for (const auto& p : pairs) {
    CAPTURE(p.target);
    const double small_tpot = std::uniform_real_distribution<double>(2.0, 5.0)(rng);
    const double target_tpot = small_tpot * p.size_ratio;
    auto server = test::start_fake(std::string(R"({"models": {")") + p.small + R"(": {"overhead_ms": 20, "decode_ms_per_token": )" +
                                   std::to_string(small_tpot) + R"(}, ")" + p.target +
                                   R"(": {"overhead_ms": 30, "decode_ms_per_token": )" + std::to_string(target_tpot) + "}}}");
    const auto c = test::run_check("baseline", {server->base_url(), {{"baseline.samples", "2"}, {"baseline.max_tokens", "12"}},
                                                "", {p.target, p.small}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "size_ratio") == doctest::Approx(p.size_ratio).epsilon(0.001));
    CHECK(test::metric(c, "expected_tpot_ratio") == doctest::Approx(p.size_ratio).epsilon(0.001));
    // As the sizes explain: model.target_slow's bar (twice) is far away.
    CHECK(test::metric(c, "unexplained_tpot_ratio") < 1.5);
  }
}

TEST_CASE("a request cut short by the check's own deadline is the run's limit, not the endpoint's failure") {
  // A 3 s first token under a 1 s check deadline: the request ends at the deadline.
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 3000}}})");
  test::CheckSetup setup{server->base_url(), {{"baseline.samples", "1"}}, "", {"big", ""}};
  setup.deadline = std::chrono::seconds(1);
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("baseline", setup, &pacer);
  REQUIRE(c.requests.size() == 1);
  const auto& s = c.requests[0].sample;
  CHECK_FALSE(s.ok);
  CHECK(s.error == api::kCheckDeadline);
  CHECK(s.error_message.find("--check-timeout") != std::string::npos);
  CHECK_FALSE(api::is_failure(s));
  CHECK(test::metric(c, "failures_count") == 0);
  REQUIRE(pacer != nullptr);
  CHECK(pacer->tally().failures.empty());
}

TEST_CASE("baseline: without a small model there are no ratios, and it says why") {
  auto server = test::start_fake(R"({"models": {"big": {"decode_ms_per_token": 5}}})");
  const auto c = test::run_check("baseline", {server->base_url(), {{"baseline.samples", "2"}}, "", {"big", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(c.metrics.count("tpot_ratio") == 0);
  CHECK(c.details["small_model"].get<std::string>().find("not given") != std::string::npos);
}

TEST_CASE("baseline: a model that keeps failing stops the check after three tries") {
  auto server = test::start_fake(R"({"models": {"big": {"faults": [{"kind": "503", "every": 1}]}}})");
  const auto c = test::run_check("baseline", {server->base_url(), {{"baseline.samples", "10"}}, "", {"big", ""}});
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.reason.find("stopped after 3 failed requests in a row") != std::string::npos);
  CHECK(server->served().size() == 3);
}

TEST_CASE("baseline: no --model, no requests") {
  const auto c = test::run_check("baseline", {"http://127.0.0.1:9/v1", {}, "", {}});
  CHECK(c.status == checks::CheckStatus::Skipped);
}

}  // namespace infdoctor
