// The fake provider's engine behaviours, measured by the real client over loopback: each scenario
// key must show up in the timings (within tolerance) and in the usage it reports.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "api/chat.h"
#include "api/openai.h"
#include "http/client.h"
#include "stats/fit.h"
#include "support/fake_process.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

api::Endpoint endpoint_of(const fake::Server& s) {
  api::Endpoint ep;
  ep.base_url = s.base_url();
  ep.timeout = 20s;
  return ep;
}

api::RequestSample ask(const fake::Server& s, int prompt_tokens, int max_tokens, const std::string& model = "m") {
  api::ChatRequest c;
  c.model = model;
  c.prompt = api::synthetic_prompt(prompt_tokens);
  c.max_tokens = max_tokens;
  http::Client client;
  return api::run_chat(client, endpoint_of(s), c);
}

}  // namespace

TEST_CASE("decode_ms_per_1k_context: time per token grows with the prompt") {
  auto server = test::start_fake(R"({"models": {"m": {"decode_ms_per_token": 3, "decode_ms_per_1k_context": 4}}})");
  const auto short_prompt = ask(*server, 10, 24);
  const auto long_prompt = ask(*server, 2000, 24);
  REQUIRE(short_prompt.ok);
  REQUIRE(long_prompt.ok);
  const int short_words = static_cast<int>(*short_prompt.prompt_tokens);
  const int long_words = static_cast<int>(*long_prompt.prompt_tokens);
  CHECK(*short_prompt.tpot_ms == doctest::Approx(3 + 4 * short_words / 1000.0).epsilon(0.1 * test::kTimingSlack));
  CHECK(*long_prompt.tpot_ms == doctest::Approx(3 + 4 * long_words / 1000.0).epsilon(0.1 * test::kTimingSlack));
}

TEST_CASE("decode_ms_per_1k_output: a long answer's pace slows as it goes") {
  // Token k after the first costs 10 ms + 50 ms x k / 1000: over n tokens the mean is 10 + 0.05 x n / 2.
  // (At 3 ms a token a late first token, its gaps caught up after it, moved a 20-token answer's
  // pace by 0.5 ms in a suite beside a sanitizer build: a tenth of 10 ms holds twice that.)
  auto server = test::start_fake(R"({"models": {"m": {"decode_ms_per_token": 10, "decode_ms_per_1k_output": 50}}})");
  const auto short_answer = ask(*server, 10, 20);
  const auto long_answer = ask(*server, 10, 200);
  REQUIRE(short_answer.ok);
  REQUIRE(long_answer.ok);
  CHECK(*short_answer.tpot_ms == doctest::Approx(10 + 0.05 * 20 / 2).epsilon(0.1 * test::kTimingSlack));
  CHECK(*long_answer.tpot_ms == doctest::Approx(10 + 0.05 * 200 / 2).epsilon(0.1 * test::kTimingSlack));
}

TEST_CASE("batch_decode_penalty: sequences decoding together each run slower per token") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 4, "slots": 4, "batch_decode_penalty": 0.5}}})");
  const auto alone = ask(*server, 8, 40);
  REQUIRE(alone.ok);
  CHECK(*alone.tpot_ms == doctest::Approx(4).epsilon(0.1 * test::kTimingSlack));
  std::vector<api::RequestSample> together(4);
  std::vector<std::thread> threads;
  for (auto& s : together) threads.emplace_back([&] { s = ask(*server, 8, 40); });
  for (auto& t : threads) t.join();
  // Admitted one after another, the i-th of four decodes beside i-1 others: 4 x (1 + 0.5 (i-1)).
  std::vector<double> tpot;
  for (const auto& s : together) {
    REQUIRE(s.ok);
    tpot.push_back(*s.tpot_ms);
  }
  std::sort(tpot.begin(), tpot.end());
  CHECK(tpot.back() == doctest::Approx(4 * (1 + 0.5 * 3)).epsilon(0.1 * test::kTimingSlack));
  CHECK(tpot.front() < 0.7 * tpot.back());
}

TEST_CASE("tail_fraction: about that share of requests runs tail_factor times slower, the rest as planted") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 20, "tail_fraction": 0.3, "tail_factor": 4}}, "seed": 7})");
  std::vector<double> fast_ms, slow_ms;
  const int n = 40;
  for (int i = 0; i < n; ++i) {
    const auto s = ask(*server, 4, 1);
    REQUIRE(s.ok);
    const bool is_slow = *s.ttft_ms > 50;
    (is_slow ? slow_ms : fast_ms).push_back(*s.ttft_ms);
    // A planted delay is a floor: the machine can only add to it.
    CHECK(*s.ttft_ms >= (is_slow ? 80 : 20) - 1);
  }
  // Each side as planted at its middle; one request the scheduler held a few ms is not the fake's.
  REQUIRE(!fast_ms.empty());
  REQUIRE(!slow_ms.empty());
  CHECK(*stats::median(fast_ms) == doctest::Approx(20).epsilon(0.25 * test::kTimingSlack));
  CHECK(*stats::median(slow_ms) == doctest::Approx(80).epsilon(0.25 * test::kTimingSlack));
  // Binomial(40, 0.3): mean 12, sd 2.9; 4..20 is beyond 2.7 sd on both sides.
  CHECK(slow_ms.size() >= 4);
  CHECK(slow_ms.size() <= 20);
}

TEST_CASE("slow_every_s: slow windows of slow_for_s recur at the period, fast in between") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 10, "slow_every_s": 0.6, "slow_for_s": 0.3, "slow_factor": 6}}, "seed": 3})");
  std::vector<std::pair<double, bool>> seen;  // arrival (s since the first) and slow or not
  std::vector<double> fast_ms, slow_ms;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 60 && std::chrono::steady_clock::now() - t0 < 4s; ++i) {
    const auto at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto s = ask(*server, 4, 1);
    REQUIRE(s.ok);
    const bool is_slow = *s.ttft_ms > 30;
    (is_slow ? slow_ms : fast_ms).push_back(*s.ttft_ms);
    seen.emplace_back(at, is_slow);
  }
  // Each kind at its planted time, by the median: one request the scheduler wakes late is not
  // the window's.
  REQUIRE(!fast_ms.empty());
  REQUIRE(!slow_ms.empty());
  CHECK(*stats::median(fast_ms) == doctest::Approx(10).epsilon(0.3 * test::kTimingSlack));
  CHECK(*stats::median(slow_ms) == doctest::Approx(60).epsilon(0.3 * test::kTimingSlack));
  const auto slow_count = std::count_if(seen.begin(), seen.end(), [](const auto& p) { return p.second; });
  CHECK(slow_count > 0);
  CHECK(slow_count < static_cast<long>(seen.size()));
  // Requests a whole period apart fall in the same phase: slow with slow, fast with fast, except
  // near a window's edge. Pairs 0.6 s apart (to 20 ms) agree far more often than chance.
  int agree = 0, pairs = 0;
  for (const auto& [a, sa] : seen)
    for (const auto& [b, sb] : seen)
      if (std::abs(b - a - 0.6) < 0.02) {
        ++pairs;
        agree += sa == sb;
      }
  REQUIRE(pairs >= 5);
  CHECK(agree >= 0.7 * pairs);
}

TEST_CASE("slow_every_s: a window slows the tokens made inside it, so a stream it begins or ends in changes pace") {
  // 10 ms a token, 4 times slower for 0.4 s of every 0.8 s: a stream of 50 tokens (0.5 to 2 s)
  // meets at least one edge of a window. Its gaps are of two kinds, 10 and 40 ms, both within it.
  const double factor = 4, pace = 10;
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 5, "decode_ms_per_token": 10, "slow_every_s": 0.8, "slow_for_s": 0.4, "slow_factor": 4}}, "seed": 5})");
  std::vector<double> fast, slow;
  int mixed = 0;
  for (int i = 0; i < 3; ++i) {
    const auto s = ask(*server, 4, 50);
    REQUIRE(s.ok);
    REQUIRE(s.itl_ms.size() == 49);
    int f = 0, w = 0;
    for (const double g : s.itl_ms) {
      const bool is_slow = g > std::sqrt(factor) * pace;  // nearer 40 than 10, on a log scale
      (is_slow ? slow : fast).push_back(g);
      (is_slow ? w : f) += 1;
    }
    mixed += f >= 3 && w >= 3;
  }
  REQUIRE(!fast.empty());
  REQUIRE(!slow.empty());
  CHECK(*stats::median(fast) == doctest::Approx(pace).epsilon(0.3 * test::kTimingSlack));
  CHECK(*stats::median(slow) == doctest::Approx(factor * pace).epsilon(0.3 * test::kTimingSlack));
  CHECK(mixed == 3);
}

TEST_CASE("bucket_size and bucket_per_s: a burst beyond the bucket gets 429 saying when to come back") {
  auto server = test::start_fake(R"({"models": {"m": {"bucket_size": 3, "bucket_per_s": 2}}})");
  std::vector<api::RequestSample> burst;
  for (int i = 0; i < 4; ++i) burst.push_back(ask(*server, 4, 1));
  for (int i = 0; i < 3; ++i) CHECK(burst[static_cast<std::size_t>(i)].ok);
  const auto& refused = burst[3];
  CHECK(refused.http_status == 429);
  REQUIRE(refused.headers.count("retry-after-ms"));
  const double wait_ms = std::stod(refused.headers.at("retry-after-ms"));
  // The bucket was emptied moments ago; a token comes back 500 ms after that at 2 per second.
  CHECK(wait_ms > 300);
  CHECK(wait_ms <= 500);
  CHECK(refused.headers.at("retry-after") == "1");
}

TEST_CASE("reasoning_tokens: hidden thinking delays the first visible token and is counted in usage") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 5, "reasoning_tokens": 30}}})");
  const auto s = ask(*server, 4, 10);
  REQUIRE(s.ok);
  CHECK(*s.ttft_ms == doctest::Approx(20 + 30 * 5).epsilon(0.1 * test::kTimingSlack));
  CHECK(s.content_events == 10);
  CHECK(*s.output_tokens == 40);  // usage counts what was thought, not only what arrived
}

}  // namespace infdoctor
