#include <doctest/doctest.h>

#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/scripted_model.h"

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

TEST_CASE("soak: a drift drawn at random over ten minutes is measured as that drift, on a fake clock") {
  std::mt19937 rng(7);
  for (int draw = 0; draw < 8; ++draw) {
    const double base_ms = std::uniform_real_distribution<double>(40, 400)(rng);
    const double drift_ms = std::uniform_real_distribution<double>(-0.5 * base_ms, 20 * base_ms)(rng);
    CAPTURE(base_ms);
    CAPTURE(drift_ms);
    test::FakeClock clock;
    const auto t0 = clock.now();
    test::ScriptedModel model(clock, [&](const api::ChatRequest&, core::SteadyTime now) {
      const double at_s = core::to_ms(core::elapsed_us(t0, now)) / 1000.0;
      const double ttft = base_ms + drift_ms * at_s / 600.0;
      return test::answered(ttft, ttft + 30);
    });
    test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"soak.minutes", "10"}, {"soak.interval_ms", "5000"}}, "", {"m", ""}};
    setup.deadline = std::chrono::seconds(900);
    setup.ports.model = &model;
    setup.ports.clock = &clock;
    const auto c = test::run_check("soak", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "samples_count") == 120);
    CHECK(test::metric(c, "duration_s") == doctest::Approx(600).epsilon(0.01));
    CHECK(test::metric(c, "ttft_drift_ms") == doctest::Approx(drift_ms).epsilon(0.02));
  }
}

TEST_CASE("soak: --soak-minutes means what it says: ten minutes under the run's 120 s check deadline") {
  test::FakeClock clock;
  test::ScriptedModel model(clock, [](const api::ChatRequest&, core::SteadyTime) { return test::answered(80, 110); });
  test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"soak.minutes", "10"}, {"soak.interval_ms", "5000"}}, "", {"m", ""}};
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  const auto c = test::run_in_a_run("soak", setup, std::chrono::seconds(120));
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "duration_s") == doctest::Approx(600).epsilon(0.01));
  CHECK(test::metric(c, "samples_count") == 120);
}

}  // namespace infdoctor
