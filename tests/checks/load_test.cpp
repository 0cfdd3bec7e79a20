// The load check against the fake provider: a closed loop of users on a model with k slots served
// first come first served, its knee, capacity and goodput against what a queue of k servers makes
// of the planted service time; and an open loop whose arrivals the fake sees as Poisson.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

// What k servers, first come first served, make of `users` closed-loop users who send `requests`
// requests in all (request i from user i mod users), each taking `service_ms` with nobody ahead:
// each request's time from its send to its end. The planted queue, worked out on its own.
std::vector<double> closed_loop_latencies(int slots, int users, int requests, double service_ms) {
  struct Job {
    int id;
    double sent;
  };
  std::deque<Job> queue;
  std::vector<double> free_at(static_cast<std::size_t>(slots), 0.0), latency(static_cast<std::size_t>(requests), 0);
  std::vector<std::deque<int>> lanes(static_cast<std::size_t>(users));
  for (int i = 0; i < requests; ++i) lanes[static_cast<std::size_t>(i % users)].push_back(i);
  // Events in time order: a user's send joins the queue; a free slot takes the queue's head.
  std::vector<std::pair<double, int>> sends;  // (time, request)
  for (auto& lane : lanes)
    if (!lane.empty()) sends.push_back({0.0, lane.front()});
  for (auto& lane : lanes)
    if (!lane.empty()) lane.pop_front();
  int done = 0;
  while (done < requests) {
    std::sort(sends.begin(), sends.end());
    // The next slot to free, and the next send.
    auto slot = std::min_element(free_at.begin(), free_at.end());
    if (!sends.empty() && (queue.empty() || sends.front().first <= *slot)) {
      queue.push_back({sends.front().second, sends.front().first});
      sends.erase(sends.begin());
      continue;
    }
    const Job job = queue.front();
    queue.pop_front();
    const double start = std::max(*slot, job.sent), end = start + service_ms;
    *slot = end;
    latency[static_cast<std::size_t>(job.id)] = end - job.sent;
    ++done;
    auto& lane = lanes[static_cast<std::size_t>(job.id % users)];
    if (!lane.empty()) {
      sends.push_back({end, lane.front()});
      lane.pop_front();
    }
  }
  return latency;
}

}  // namespace

TEST_CASE("load: users at 5, 10 and 50 on k slots: the knee at the first level, k served at once, goodput as the queue makes it") {
  std::mt19937 rng(20261206);
  for (int draw = 0; draw < 2; ++draw) {
    // The first draw is the two slots of the issue; the second draws the slots and the service.
    const int slots = draw == 0 ? 2 : std::uniform_int_distribution<int>(1, 4)(rng);
    const double overhead_ms = draw == 0 ? 60 : std::uniform_real_distribution<double>(40, 100)(rng);
    const int max_tokens = 5;
    const double decode_ms = 5;
    const double service_ms = overhead_ms + (max_tokens - 1) * decode_ms;
    const int requests = 60;
    // The limit halfway between three and four services with nobody else: the queue's latencies
    // are whole services, so none lies near it.
    const double slo_ms = 3.5 * service_ms;
    CAPTURE(slots);
    CAPTURE(overhead_ms);
    auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": )" + std::to_string(overhead_ms) +
                                   R"(, "decode_ms_per_token": 5, "slots": )" + std::to_string(slots) + "}}}");
    const auto c = test::run_check("load", {server->base_url(),
                                            {{"load.levels", "5,10,50"},
                                             {"load.requests", std::to_string(requests)},
                                             {"load.prompt_tokens", "32"},
                                             {"load.max_tokens", std::to_string(max_tokens)},
                                             {"load.slo_total_ms", std::to_string(slo_ms)}},
                                            "",
                                            {"Qwen2.5-7B-Instruct", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(test::metric(c, "failures_count") == 0);
    CHECK(test::metric(c, "reference_total_p50_ms") == doctest::Approx(service_ms).epsilon(0.1));
    // k slots serve k requests at once; at 5 users or more every slot is busy, so more users
    // add no requests per second: the knee is the first level.
    CHECK(test::metric(c, "capacity_count") == doctest::Approx(slots).epsilon(0.15));
    CHECK(test::metric(c, "peak_requests_per_s") == doctest::Approx(slots * 1000 / service_ms).epsilon(0.15));
    CHECK(test::metric(c, "knee_level_count") == 5);
    // Past the slots every request waits for one before its first token: the excess is the wait.
    CHECK(test::metric(c, "wait_share_ratio") > 0.8);
    const auto& levels = c.details["levels"];
    REQUIRE(levels.size() == 3);
    for (const auto& row : levels) {
      const int users = row["users"].get<int>();
      CAPTURE(users);
      const auto latency = closed_loop_latencies(slots, users, requests, service_ms);
      const double expected =
          static_cast<double>(std::count_if(latency.begin(), latency.end(), [&](double l) { return l <= slo_ms; })) /
          requests;
      CHECK(std::abs(row["goodput_ratio"].get<double>() - expected) <= 0.1);
    }
    CHECK(test::metric(c, "goodput_at_max_ratio") ==
          doctest::Approx(levels.back()["goodput_ratio"].get<double>()));
  }
}

TEST_CASE("load: an engine that batches slows each token beside the others, which is no wait") {
  // 64 sequences at once, each beside n-1 others `penalty` slower a token: at 16 users a request
  // takes (1 + 15 x penalty) times as long, all of it after its first token.
  const double penalty = std::uniform_real_distribution<double>(0.03, 0.08)(test::rng());
  CAPTURE(penalty);
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 40, "decode_ms_per_token": 4, "slots": 64, "batch_decode_penalty": )" +
                                 std::to_string(penalty) + "}}}");
  const auto c = test::run_check("load", {server->base_url(),
                                          {{"load.levels", "4,16"},
                                           {"load.requests", "32"},
                                           {"load.prompt_tokens", "32"},
                                           {"load.max_tokens", "48"}},
                                          "",
                                          {"Qwen2.5-7B-Instruct", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "failures_count") == 0);
  const auto& levels = c.details["levels"];
  REQUIRE(levels.size() == 2);
  // The time per token grew with the batch; the first token did not wait for it.
  CHECK(levels[1]["tpot_p50_ms"].get<double>() > 1.2 * levels[0]["tpot_p50_ms"].get<double>());
  CHECK(test::metric(c, "wait_share_ratio") < 0.2);
}

TEST_CASE("load: a level the check's deadline cannot hold is not sent, and no request is cut short") {
  // A request alone takes about 230 ms; the first level's 40 requests from one user, 9 s at the
  // fastest, against a deadline of 4 s.
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 40, "decode_ms_per_token": 4}}})");
  test::CheckSetup setup{server->base_url(),
                         {{"load.levels", "1,4"}, {"load.requests", "40"}, {"load.prompt_tokens", "32"}, {"load.max_tokens", "48"}},
                         "",
                         {"Qwen2.5-7B-Instruct", ""}};
  setup.deadline = std::chrono::seconds(4);
  const auto c = test::run_check("load", setup);
  REQUIRE(c.details.contains("not_sent"));
  CHECK(c.details["not_sent"].get<std::string>().rfind("levels 1 and above", 0) == 0);
  for (const auto& [sample, label] : c.requests) {
    CHECK(label["phase"] == "reference");
    CHECK(sample.error != api::kCheckDeadline);
  }
}

TEST_CASE("load: requests at a rate arrive at the server as Poisson arrivals of that rate") {
  auto server = test::start_fake(R"({"models": {"gpt-4o-mini": {"overhead_ms": 20, "decode_ms_per_token": 2}}})");
  const double rate = 25;
  const int requests = 80;
  const auto c = test::run_check("load", {server->base_url(),
                                          {{"load.rates", std::to_string(rate)},
                                           {"load.requests", std::to_string(requests)},
                                           {"load.prompt_tokens", "16"},
                                           {"load.max_tokens", "4"},
                                           {"load.seed", "7"}},
                                          "",
                                          {"gpt-4o-mini", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  // The server's own arrival stamps of the level's requests (after the reference's three).
  std::vector<double> at;
  for (const auto& r : server->served()) at.push_back(core::to_ms(core::elapsed_us(server->served().front().arrived, r.arrived)));
  REQUIRE(at.size() == static_cast<std::size_t>(3 + requests));
  at.erase(at.begin(), at.begin() + 3);
  std::sort(at.begin(), at.end());
  std::vector<double> gaps;
  for (std::size_t i = 1; i < at.size(); ++i) gaps.push_back(at[i] - at[i - 1]);
  // Kolmogorov-Smirnov against the exponential of the planted rate: the distance stays under the
  // 5 % critical value 1.36 / sqrt(n).
  std::sort(gaps.begin(), gaps.end());
  const double n = static_cast<double>(gaps.size());
  double d = 0;
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    const double f = 1 - std::exp(-gaps[i] * rate / 1000);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  CAPTURE(d);
  CHECK(d < 1.36 / std::sqrt(n));
  CHECK(test::metric(c, "arrival_ks_ratio") < 1.36 / std::sqrt(n));
  // The arrivals' own rate, and what the level completed, near the planted one (80 draws: a few
  // tens of percent either way).
  CHECK(n / ((at.back() - at.front()) / 1000) == doctest::Approx(rate).epsilon(0.35));
  CHECK(c.details["levels"][0]["requests_per_s"].get<double>() == doctest::Approx(rate).epsilon(0.35));
  CHECK(test::metric(c, "goodput_at_max_ratio") == 1);  // no limits: every success counts
}

TEST_CASE("load: a mix of short chats and long documents, each set drawn by its share and timed on its own") {
  // Prefill planted at 0.1 ms a prompt token: a document's first token waits for its prompt.
  auto server = test::start_fake(
      R"({"models": {"Llama-3.1-70B-Instruct": {"overhead_ms": 30, "prefill_ms_per_token": 0.1, "decode_ms_per_token": 2}}})");
  const int requests = 60;
  const auto c = test::run_check("load", {server->base_url(),
                                          {{"load.levels", "2"},
                                           {"load.requests", std::to_string(requests)},
                                           {"load.mix", "chat:7:50-150:4,docs:3:2000-3000:4"},
                                           {"load.seed", "11"}},
                                          "",
                                          {"Llama-3.1-70B-Instruct", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  const auto& sets = c.details["levels"][0]["sets"];
  REQUIRE(sets.contains("chat"));
  REQUIRE(sets.contains("docs"));
  const int chats = sets["chat"]["sent_count"].get<int>(), docs = sets["docs"]["sent_count"].get<int>();
  CHECK(chats + docs == requests);
  // Shares of 7 and 3: 70 % chats, within three standard deviations of 60 draws.
  CHECK(std::abs(chats / double(requests) - 0.7) <= 3 * std::sqrt(0.7 * 0.3 / requests));
  // Each set's first token is the overhead and its own prompt's prefill (the synthetic prompt's
  // tokens as the fake counts them: one a word), two users causing no wait.
  CHECK(sets["chat"]["ttft_p50_ms"].get<double>() == doctest::Approx(30 + 0.1 * 100).epsilon(0.25));
  CHECK(sets["docs"]["ttft_p50_ms"].get<double>() == doctest::Approx(30 + 0.1 * 2500).epsilon(0.15));
  // The service time weighs each set's by its share.
  const double service = 0.7 * (30 + 0.1 * 100 + 3 * 2) + 0.3 * (30 + 0.1 * 2500 + 3 * 2);
  CHECK(test::metric(c, "reference_total_p50_ms") == doctest::Approx(service).epsilon(0.15));
}

}  // namespace infdoctor
