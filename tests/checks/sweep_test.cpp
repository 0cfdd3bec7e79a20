#include <doctest/doctest.h>

#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("sweep: planted 80 ms overhead, 0.5 ms per prompt token and 25 ms per output token come back") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 80, "prefill_ms_per_token": 0.5, "decode_ms_per_token": 25}}})");
  const auto c = test::run_check("sweep", {server->base_url(),
                                           {{"sweep.prompt_tokens", "64,512,1024,2048"},
                                            {"sweep.max_tokens", "1,16,48"},
                                            {"sweep.repeats", "1"}},
                                           "",
                                           {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "prefill_ms_per_token") == doctest::Approx(0.5).epsilon(0.10));
  CHECK(std::abs(test::metric(c, "prefill_overhead_ms") - 80.0) < 15.0);
  CHECK(test::metric(c, "prefill_fit_r2_ratio") > 0.99);
  CHECK(test::metric(c, "max_prompt_tokens_count") == 2048);
  CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(25.0).epsilon(0.05));
  CHECK(test::metric(c, "tpot_p50_ms") == doctest::Approx(25.0).epsilon(0.05));
  CHECK(test::metric(c, "stopped_early_count") == 0);
}

TEST_CASE("sweep: responses that stop before max_tokens are counted") {
  auto server = test::start_fake(R"({"models": {"m": {"decode_ms_per_token": 2, "output_tokens": 10}}})");
  const auto c = test::run_check("sweep", {server->base_url(),
                                           {{"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,8,32,64"},
                                            {"sweep.repeats", "1"}},
                                           "",
                                           {"m", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(test::metric(c, "stopped_early_count") == 2);
  CHECK(test::metric(c, "max_output_tokens_count") == 10);
}

TEST_CASE("sweep: --max-requests is never exceeded") {
  auto server = test::start_fake(R"({"models": {"m": {}}})");
  test::CheckSetup setup{server->base_url(),
                         {{"sweep.prompt_tokens", "16,32,64"}, {"sweep.max_tokens", "1,2,4"}, {"sweep.repeats", "2"}},
                         "",
                         {"m", ""},
                         5};
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("sweep", setup, &pacer);
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.error == "budget_exhausted");
  CHECK(server->served().size() == 5);
  CHECK(pacer->requests_spent() == 5);
}

}  // namespace infdoctor
