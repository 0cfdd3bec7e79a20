// The requests a ticket lists are the ones that show the top finding: ranked by that cause's own
// signal, not by total time, which a long answer dominates.
#include <doctest/doctest.h>

#include <random>

#include "results/requests.h"

namespace infdoctor::results {

TEST_CASE("requests are ranked by the finding's signal: a cold start by first token, slow decode by time per token") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int draw = 0; draw < 50; ++draw) {
    RunResult r;
    checks::CheckResult c;
    c.id = "baseline";
    // Ordinary requests with long answers (large totals) and one cold one with a short answer: its
    // first token is the latest, its total is not.
    const int n = 3 + static_cast<int>(u(rng) * 10);
    for (int i = 0; i < n; ++i) {
      api::RequestSample s;
      s.ok = true;
      s.ttft_ms = 50 + u(rng) * 50;
      s.tpot_ms = 5 + u(rng) * 5;
      s.output_tokens = 200 + static_cast<int>(u(rng) * 300);
      s.total_ms = *s.ttft_ms + *s.tpot_ms * static_cast<double>(*s.output_tokens);
      s.request_id = "ordinary-" + std::to_string(i);
      c.requests.push_back({s, nullptr});
    }
    api::RequestSample cold;
    cold.ok = true;
    cold.ttft_ms = 200 + u(rng) * 3000;
    cold.tpot_ms = 6;
    cold.output_tokens = 1;
    cold.total_ms = *cold.ttft_ms;
    cold.request_id = "cold";
    c.requests.insert(c.requests.begin() + static_cast<long>(u(rng) * n), {cold, nullptr});
    r.checks.push_back(c);

    const auto by_first_token = slowest_requests(r, 3, {}, signal_of("cold_start").rank);
    REQUIRE(!by_first_token.empty());
    CHECK(by_first_token.front().sample->request_id == "cold");
    const auto by_token = slowest_requests(r, 100, {}, signal_of("decode_bound").rank);
    for (std::size_t i = 1; i < by_token.size(); ++i) CHECK(*by_token[i - 1].sample->tpot_ms >= *by_token[i].sample->tpot_ms);
  }
  // Every cause of the taxonomy has a request measure that shows it.
  for (const auto& cause : rules::causes()) {
    CAPTURE(cause);
    CHECK_FALSE(signal_of(cause).name.empty());
    CHECK(signal_of(cause).rank);
  }
  CHECK(signal_of("no_such_cause").name.empty());
  CHECK_FALSE(signal_of("no_such_cause").rank);
}

TEST_CASE("a first-token cause's requests are ranked net of the queue the server reported, and queueing's by the whole wait") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  for (int draw = 0; draw < 50; ++draw) {
    RunResult r;
    checks::CheckResult c;
    c.id = "sweep";
    const int n = 4 + static_cast<int>(u(rng) * 12);
    for (int i = 0; i < n; ++i) {
      api::RequestSample s;
      s.ok = true;
      s.request_id = "r" + std::to_string(i);
      const double work = 100 + u(rng) * 2000;  // prefill the server did for this request
      const double queue = u(rng) < 0.4 ? 500 + u(rng) * 3000 : 0;
      s.ttft_ms = work + queue;
      // Servers say it either way: Server-Timing's queue or TGI's x-queue-time.
      if (queue > 0 && i % 2) s.server_timing_ms["queue"] = queue;
      else if (queue > 0) s.headers["x-queue-time"] = std::to_string(queue);
      c.requests.push_back({s, nullptr});
    }
    r.checks.push_back(c);
    const auto net = [](const api::RequestSample& s) {
      if (auto it = s.server_timing_ms.find("queue"); it != s.server_timing_ms.end()) return *s.ttft_ms - it->second;
      if (auto h = s.headers.find("x-queue-time"); h != s.headers.end()) return *s.ttft_ms - std::stod(h->second);
      return *s.ttft_ms;
    };
    const auto prefill = slowest_requests(r, 100, {}, signal_of("prefill_bound").rank);
    REQUIRE(prefill.size() == static_cast<std::size_t>(n));
    for (std::size_t i = 1; i < prefill.size(); ++i) CHECK(net(*prefill[i - 1].sample) >= net(*prefill[i].sample) - 1e-6);
    const auto queueing = slowest_requests(r, 100, {}, signal_of("queueing").rank);
    for (std::size_t i = 1; i < queueing.size(); ++i) CHECK(*queueing[i - 1].sample->ttft_ms >= *queueing[i].sample->ttft_ms);
  }
}

}  // namespace infdoctor::results
