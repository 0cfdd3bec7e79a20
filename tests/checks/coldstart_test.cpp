#include <doctest/doctest.h>

#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/scripted_model.h"

namespace infdoctor {

TEST_CASE("coldstart: a penalty and an idle threshold drawn at random are found between the gaps that bracket the threshold") {
  // On a fake clock: the 455 s of idle gaps take no wall time, so magnitudes can be drawn freely.
  const std::vector<double> gaps = {5, 30, 120, 300};
  std::mt19937 rng(20261203);
  for (int draw = 0; draw < 24; ++draw) {
    const double base_ms = std::uniform_real_distribution<double>(30, 600)(rng);
    const double penalty_ms = std::uniform_real_distribution<double>(std::max(40.0, 0.4 * base_ms), 20000)(rng);
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, gaps.size() - 1)(rng);
    const double lower = k == 0 ? 0.5 : gaps[k - 1];
    const double idle_s = std::uniform_real_distribution<double>(lower + 0.1, gaps[k] - 0.1)(rng);
    CAPTURE(draw);
    CAPTURE(base_ms);
    CAPTURE(penalty_ms);
    CAPTURE(idle_s);

    test::FakeClock clock;
    core::SteadyTime last_end = clock.now();
    std::uniform_real_distribution<double> jitter(-0.03, 0.03);  // 3 % of the base either way
    test::ScriptedModel model(clock, [&](const api::ChatRequest&, core::SteadyTime now) {
      const double idle = core::to_ms(core::elapsed_us(last_end, now)) / 1000.0;
      const double ttft = base_ms * (1 + jitter(rng)) + (idle >= idle_s ? penalty_ms : 0);
      last_end = now + std::chrono::microseconds(static_cast<long long>(ttft * 1000));
      return test::answered(ttft, ttft);
    });
    test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,5,30,120,300"}}, "", {"m", ""}};
    setup.deadline = std::chrono::seconds(900);  // the gaps, and the longest again
    setup.ports.model = &model;
    setup.ports.clock = &clock;
    const auto c = test::run_check("coldstart", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "threshold_s") == gaps[k]);
    if (k > 0) CHECK(test::metric(c, "threshold_low_s") == gaps[k - 1]);
    else CHECK(c.metrics.count("threshold_low_s") == 0);
    // The longest gap goes first and was cold; the shorter ones follow from the shortest up to the
    // first cold one, and the gaps between it and the longest are not waited. Where only the
    // longest gap was cold, it was measured again (and was cold again).
    const bool again = k + 1 == gaps.size();
    const std::size_t measured = again ? gaps.size() + 1 : 1 + k + 1;
    CHECK(test::metric(c, "cold_gaps_count") == 2);
    CHECK(test::metric(c, "gaps_count") == static_cast<double>(measured));
    CHECK(test::metric(c, "penalty_ms") == doctest::Approx(penalty_ms).epsilon(0.02 + 0.07 * base_ms / penalty_ms));
    CHECK(test::metric(c, "baseline_ttft_p50_ms") == doctest::Approx(base_ms).epsilon(0.04));
    CHECK(model.requests() == 1 + 3 + static_cast<int>(measured));
    const auto not_waited = c.details.value("not_waited_s", nlohmann::json::array());
    const std::size_t skipped = again ? 0 : gaps.size() - 2 - k;
    REQUIRE(not_waited.size() == skipped);
    for (std::size_t i = 0; i < skipped; ++i) CHECK(not_waited[i] == gaps[k + 1 + i]);
    // The table reads in the order of the gaps, not in the order they were waited.
    const auto& rows = c.details["gaps"];
    for (std::size_t i = 1; i < rows.size(); ++i) CHECK(rows[i - 1]["gap_s"].get<double>() <= rows[i]["gap_s"].get<double>());
  }
}

TEST_CASE("coldstart: a model that never goes cold waits the longest gap only, and a shorter gap is not waited") {
  test::FakeClock clock;
  test::ScriptedModel model(clock, [](const api::ChatRequest&, core::SteadyTime) { return test::answered(80, 80); });
  test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,2,5,10,20"}}, "", {"m", ""}};
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  const auto start = clock.now();
  const auto c = test::run_check("coldstart", setup);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "gaps_count") == 1);
  CHECK(test::metric(c, "threshold_low_s") == 20);
  CHECK(c.metrics.count("threshold_s") == 0);
  CHECK(model.requests() == 1 + 3 + 1);
  CHECK(c.details["not_waited_s"] == nlohmann::json::array({2, 5, 10}));
  const double waited_s = core::to_ms(core::elapsed_us(start, clock.now())) / 1000.0;
  CHECK(waited_s == doctest::Approx(20 + 5 * 0.08).epsilon(0.01));  // one gap and five requests, not 37 s of gaps
}

TEST_CASE("coldstart: when the longest gap's request fails, two shorter cold gaps show the state, and the note says so") {
  // Cold after 4 s idle; the request after the longest gap (the run's fifth) is refused.
  test::FakeClock clock;
  core::SteadyTime last_end = clock.now();
  int n = 0;
  test::ScriptedModel model(clock, [&](const api::ChatRequest&, core::SteadyTime now) {
    const double idle_s = core::to_ms(core::elapsed_us(last_end, now)) / 1000.0;
    api::RequestSample s = test::answered(idle_s >= 4 ? 3080 : 80, idle_s >= 4 ? 3080 : 80);
    if (++n == 5) {
      s.ok = false;
      s.http_status = 503;
      s.ttft_ms.reset();
      s.first_event_ms.reset();
    }
    last_end = now + std::chrono::microseconds(static_cast<long long>(s.total_ms.value_or(0) * 1000));
    return s;
  });
  test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,2,5,10,15,20"}}, "", {"m", ""}};
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  const auto c = test::run_check("coldstart", setup);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "gaps_count") == 3);  // 2 s warm, 5 and 10 s cold
  CHECK(test::metric(c, "cold_gaps_count") == 2);
  CHECK(test::metric(c, "threshold_s") == 5);
  CHECK(test::metric(c, "threshold_low_s") == 2);
  CHECK(c.details["not_waited_s"] == nlohmann::json::array({15}));
  REQUIRE(c.tables.size() == 1);
  const std::string& note = c.tables.front().note;
  CHECK(note.find("the longest gap's request failed") != std::string::npos);
  CHECK(note.find("the longest were both cold") == std::string::npos);
}

TEST_CASE("coldstart: a lone slow request among warm ones is a spike, not a cold start, wherever it falls") {
  // A heavy tail: one request after the first, drawn at random, takes 2-6 times the base; the
  // model never goes cold. On the longest gap (the first one waited) the spike makes the shorter
  // gaps waited and the longest measured again, where it does not repeat; on a baseline request
  // it widens nothing past the bar; on a later request it is never sent (a warm longest gap ends
  // the check).
  std::mt19937 rng(20261204);
  const std::vector<double> gaps = {2, 5, 10, 20};
  const int longest = 1 + 3 + 1;  // the request after the longest gap
  for (int draw = 0; draw < 12; ++draw) {
    const double base_ms = std::uniform_real_distribution<double>(50, 500)(rng);
    const double factor = std::uniform_real_distribution<double>(2, 6)(rng);
    const int spike = draw % 2 == 0 ? longest : std::uniform_int_distribution<int>(2, longest)(rng);
    CAPTURE(base_ms);
    CAPTURE(factor);
    CAPTURE(spike);
    test::FakeClock clock;
    int n = 0;
    test::ScriptedModel model(clock, [&](const api::ChatRequest&, core::SteadyTime) {
      ++n;
      const double ttft = base_ms * (n == spike ? factor : 1.0);
      return test::answered(ttft, ttft);
    });
    test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,2,5,10,20"}}, "", {"m", ""}};
    setup.ports.model = &model;
    setup.ports.clock = &clock;
    const auto c = test::run_check("coldstart", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "cold_gaps_count") == 0);
    CHECK(c.metrics.count("penalty_ms") == 0);
    CHECK(c.metrics.count("threshold_s") == 0);
    CHECK(model.requests() == 1 + 3 + (spike == longest ? static_cast<int>(gaps.size()) + 1 : 1));
  }
}

TEST_CASE("coldstart: in a run, the check's deadline is --check-timeout on top of its idle gaps, so --full's 300 s gap is reached") {
  test::FakeClock clock;
  test::ScriptedModel model(clock, [](const api::ChatRequest&, core::SteadyTime) { return test::answered(50, 50); });
  test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,5,30,60,120,300"}}, "", {"m", ""}};
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  const auto c = test::run_in_a_run("coldstart", setup, std::chrono::seconds(120));
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "gaps_count") == 1);  // the longest, 300 s, first: warm, it answers for the shorter ones
  CHECK(test::metric(c, "threshold_low_s") == 300);
  CHECK_FALSE(c.details.contains("stopped"));
}

TEST_CASE("coldstart: an idle gap longer than the check's deadline ends the check at the deadline") {
  test::FakeClock clock;
  test::ScriptedModel model(clock, [](const api::ChatRequest&, core::SteadyTime) { return test::answered(50, 50); });
  test::CheckSetup setup{"http://127.0.0.1:9/v1", {{"coldstart.idle_gaps", "0,10,300"}}, "", {"m", ""}};
  setup.deadline = std::chrono::seconds(120);
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  const auto start = clock.now();
  const auto c = test::run_check("coldstart", setup);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "gaps_count") == 0);  // the longest gap goes first, and did not end in time
  CHECK(c.details.contains("stopped"));
  CHECK(model.requests() == 4);
  CHECK(clock.now() - start == std::chrono::seconds(120));  // waited until the deadline, not past it
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
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("coldstart", {server->base_url(), {{"coldstart.idle_gaps", "0"},
                                                                    {"coldstart.baseline_samples", "2"}}, "", {"m", ""}},
                                 &pacer);
  const auto served = server->served();
  REQUIRE(served.size() >= 2);
  CHECK(served[0].status == 429);
  CHECK(served[1].arrived - served[0].arrived >= std::chrono::seconds(2));
  CHECK(pacer->tally().rate_limited == 1);
  CHECK(c.status == checks::CheckStatus::Ok);
}

}  // namespace infdoctor
