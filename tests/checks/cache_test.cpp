#include <doctest/doctest.h>

#include <map>
#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/scripted_model.h"

namespace infdoctor {
namespace {

// A provider's prompt cache on a fake clock: a prefix (its key) used within `ttl_s` of its last
// use is served from the cache (0: never evicted; negative: no cache at all), its prefill skipped.
// Usage reports the cached tokens when `reports`; otherwise only the time to first token tells.
struct CacheModel {
  CacheModel(double overhead, double prefill, double ttl, bool says)
      : overhead_ms(overhead), prefill_ms_per_token(prefill), ttl_s(ttl), reports(says) {}
  double overhead_ms, prefill_ms_per_token, ttl_s;
  bool reports;
  std::map<std::uint64_t, core::SteadyTime> last_use;
  std::mt19937 rng{7};

  api::RequestSample answer(const api::ChatRequest& r, core::SteadyTime now) {
    const long long prompt = static_cast<long long>(std::count(r.prompt.begin(), r.prompt.end(), ' ')) + 1;
    const auto it = last_use.find(r.prefix_key);
    const bool hit = ttl_s >= 0 && it != last_use.end() &&
                     (ttl_s == 0 || core::to_ms(core::elapsed_us(it->second, now)) / 1000 <= ttl_s);
    const long long cached = hit ? r.shared_words : 0;
    const double ttft = (overhead_ms + prefill_ms_per_token * static_cast<double>(prompt - cached)) *
                        (1 + std::uniform_real_distribution<double>(-0.03, 0.03)(rng));
    auto s = test::answered(ttft, ttft);
    s.prompt_tokens = prompt;
    if (reports) s.cached_tokens = cached;
    if (ttl_s >= 0) last_use[r.prefix_key] = now + std::chrono::microseconds(static_cast<long long>(ttft * 1000));
    return s;
  }
};

checks::CheckResult run_on(CacheModel& cache, int prefix_tokens, const std::string& gaps) {
  test::FakeClock clock;
  test::ScriptedModel model(clock, [&](const api::ChatRequest& r, core::SteadyTime now) { return cache.answer(r, now); });
  test::CheckSetup setup{"http://127.0.0.1:9/v1",
                         {{"cache.prefix_tokens", std::to_string(prefix_tokens)}, {"cache.idle_gaps", gaps}},
                         "",
                         {"Llama-3.1-70B-Instruct", ""}};
  setup.deadline = std::chrono::seconds(3000);
  setup.ports.model = &model;
  setup.ports.clock = &clock;
  return test::run_check("cache", setup);
}

}  // namespace

TEST_CASE("cache: a cache's lifetime drawn at random is found between the idle gaps that bracket it, its saving as planted") {
  const std::vector<double> gaps = {2, 10, 60, 300, 900};
  std::mt19937 rng(20261206);
  for (int draw = 0; draw < 40; ++draw) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, gaps.size())(rng);  // k == size: never
    const double ttl = k == gaps.size() ? 0
                                        : std::uniform_real_distribution<double>(k == 0 ? 0.5 : gaps[k - 1] + 1,
                                                                                 gaps[k] - 1)(rng);
    // A saving of a tenth of the first token or more (a 1,024-token prefix at 0.1 ms a token beside
    // 400 ms of overhead is a fifth): below that the first token alone cannot tell a hit.
    CacheModel cache(std::uniform_real_distribution<double>(50, 400)(rng),
                     std::uniform_real_distribution<double>(0.1, 1.0)(rng), ttl, draw % 2 == 0);
    const int prefix = std::uniform_int_distribution<int>(1024, 8192)(rng);
    CAPTURE(draw);
    CAPTURE(ttl);
    CAPTURE(cache.prefill_ms_per_token);
    CAPTURE(cache.reports);
    CAPTURE(prefix);
    const auto c = run_on(cache, prefix, "2,10,60,300,900");
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "hit_ratio") == 1);
    CHECK(test::metric(c, "reported_ratio") == (cache.reports ? 1 : 0));
    CHECK(test::metric(c, "saves_ms") == doctest::Approx(cache.prefill_ms_per_token * prefix).epsilon(0.1));
    CHECK(test::metric(c, "gaps_count") == 5);
    if (k > 0) CHECK(test::metric(c, "held_s") == doctest::Approx(gaps[k - 1]));
    else CHECK(c.metrics.count("held_s") == 0);
    if (k < gaps.size()) CHECK(test::metric(c, "gone_s") == doctest::Approx(gaps[k]));
    else CHECK(c.metrics.count("gone_s") == 0);
  }
}

TEST_CASE("cache: a provider without a cache hits nothing, whether its usage says so or only its first tokens") {
  for (const bool reports : {true, false}) {
    CAPTURE(reports);
    CacheModel cache(200, 0.4, -1, reports);
    const auto c = run_on(cache, 2048, "5");
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "hit_ratio") == 0);
    CHECK(c.metrics.count("saves_ms") == 0);
    CHECK(c.metrics.count("held_s") == 0);
    CHECK(c.metrics.count("gone_s") == 0);
    CHECK(test::metric(c, "miss_ttft_p50_ms") == doctest::Approx(200 + 0.4 * 2064).epsilon(0.05));
  }
}

TEST_CASE("cache: over HTTP, the fake's block cache with a 4 s lifetime serves the run's shared prefix and lets it go") {
  // The pacer makes the prefix the run's own and each request's words follow it; the fake caches
  // whole blocks of 16 tokens and forgets one idle for 4 s.
  auto server = test::start_fake(
      R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 20, "prefill_ms_per_token": 0.3, "decode_ms_per_token": 2,
          "prefix_cache_block_tokens": 16, "prefix_cache_ttl_s": 4}}})");
  const auto c = test::run_check("cache", test::CheckSetup{server->base_url(),
                                                           {{"cache.prefix_tokens", "1024"},
                                                            {"cache.repeats", "2"},
                                                            {"cache.idle_gaps", "1.5,6"}},
                                                           "",
                                                           {"Qwen2.5-7B-Instruct", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "reported_ratio") == 1);
  CHECK(test::metric(c, "hit_ratio") == 1);
  CHECK(test::metric(c, "cached_tokens_p50_count") == 1024);  // 64 whole blocks: the prefix, not the request's own word
  CHECK(test::metric(c, "saves_ms") == doctest::Approx(0.3 * 1024).epsilon(0.15));
  CHECK(test::metric(c, "held_s") == doctest::Approx(1.5).epsilon(0.2));
  CHECK(test::metric(c, "gone_s") == doctest::Approx(6).epsilon(0.1));
}

}  // namespace infdoctor
