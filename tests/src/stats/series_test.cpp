// The run's time series: a healthy background with jitter and a heavy tail stays under the slow
// share that the rule reads; periodic slowdowns of any period and depth drawn from the issue's
// ranges are over it, with their period found.
#include "stats/series.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

namespace infdoctor::stats {
namespace {

// A run of `n` requests, one every `spacing` seconds on average, alternating two models with
// their own time per token; `slow(t)` multiplies the time per token of a request started at t.
template <typename Slow>
std::vector<SeriesPoint> run_of(std::mt19937& rng, int n, double spacing, Slow slow) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1), gap(0.5 * spacing, 1.5 * spacing), u(0, 1);
  std::vector<SeriesPoint> out;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    const bool target = i % 3 != 0;
    const double base = target ? 24 : 7;
    double tail = u(rng) < 0.02 ? 3.0 : 1.0;  // a heavy tail: 2 % of requests three times slower
    out.push_back({t, target ? "big" : "small", base * jitter(rng) * tail * slow(t), "", "", {}});
    t += gap(rng);
  }
  return out;
}

}  // namespace

TEST_CASE("series: a healthy background with 10 % jitter and a 2 % heavy tail is not read as one slow in twenty") {
  std::mt19937 rng(41);
  int over = 0;
  const int draws = 300;
  for (int d = 0; d < draws; ++d) {
    const auto r = read_series(run_of(rng, 30, 3.0, [](double) { return 1.0; }));
    REQUIRE(r.slow_share_low.has_value());
    over += *r.slow_share_low > 0.05;
  }
  // 30 requests with a 2 % tail: the bound passes 5 % from 4 slow on, a binomial probability of
  // about 0.3 %.
  CHECK(over <= 3);
}

TEST_CASE("series: periodic slowdowns, period 5-30 s, 20-50 % of the time, 2.5-6 times slower, are found") {
  std::mt19937 rng(42);
  for (int d = 0; d < 30; ++d) {
    const double period = std::uniform_real_distribution<double>(5, 30)(rng);
    const double duty = std::uniform_real_distribution<double>(0.2, 0.5)(rng);
    const double factor = std::uniform_real_distribution<double>(2.5, 6)(rng);
    const double phase = std::uniform_real_distribution<double>(0, period)(rng);
    CAPTURE(period);
    CAPTURE(duty);
    CAPTURE(factor);
    // 90 s of run, as a default run lasts, or more for long periods: at least three periods.
    const double span = std::max(90.0, 4 * period);
    const int n = 60;
    const auto pts = run_of(rng, n, span / n, [&](double t) {
      return std::fmod(t + phase, period) < duty * period ? factor : 1.0;
    });
    const auto r = read_series(pts);
    REQUIRE(r.slow_share_low.has_value());
    CHECK(*r.slow_share_low > 0.05);
    REQUIRE(r.slow_excess_ms_per_token.has_value());
    CHECK(*r.slow_excess_ms_per_token > 0.9 * (factor - 1) * 7);  // at least the small model's excess
    if (r.period_s) CHECK(*r.period_s == doctest::Approx(period).epsilon(0.35));
  }
}

TEST_CASE("series: too few requests give no share, and failed or token-less points are left out") {
  std::vector<SeriesPoint> pts;
  for (int i = 0; i < 19; ++i) pts.push_back({static_cast<double>(i), "m", i % 2 ? 10.0 : 40.0, "", "", {}});
  pts.push_back({20, "m", 0, "", "", {}});  // no time per token: not a point
  const auto r = read_series(pts);
  CHECK(r.samples == 19);
  CHECK_FALSE(r.slow_share.has_value());
  CHECK(r.slow > 0);
}

}  // namespace infdoctor::stats

namespace infdoctor::stats {
namespace {
const double kZ = 2.326;  // the rules' bar: a one-sided test at 1 %
bool clustered(const SeriesReading& r) {
  return r.runs_expected && static_cast<double>(r.runs) < *r.runs_expected - kZ * *r.runs_sd;
}
}  // namespace

TEST_CASE("series: bursts that follow the clock make fewer runs than chance, a slow replica about as many") {
  // Bursts as neighbours make them: 20-60 s apart, 20-50 % of the time, over a run of three
  // periods; two models with their own clocks. A replica: one of 2-5, each request sent to one at
  // random. The same 60 requests either way (two in three of the target model).
  std::mt19937 rng(43);
  int bursts_clustered = 0, replicas_clustered = 0, bursts = 0, replicas = 0;
  for (int d = 0; d < 200; ++d) {
    const double period = std::uniform_real_distribution<double>(20, 60)(rng);
    const double duty = std::uniform_real_distribution<double>(0.2, 0.5)(rng);
    const double factor = std::uniform_real_distribution<double>(2.5, 6)(rng);
    const double phase_big = std::uniform_real_distribution<double>(0, period)(rng);
    const double phase_small = std::uniform_real_distribution<double>(0, period)(rng);
    const double span = 3 * period;
    const int n = 60;
    auto points = run_of(rng, n, span / n, [](double) { return 1.0; });
    for (auto& p : points)
      if (std::fmod(p.at_s + (p.model == "big" ? phase_big : phase_small), period) < duty * period) p.tpot_ms *= factor;
    // A burst that holds fewer than three of the target's requests makes runs of one or two slow
    // requests, as chance does: order cannot tell it from a slow replica. Those are left out.
    const double held = duty * period / (1.5 * span / n);
    const auto burst = read_series(points);
    if (burst.slow_share_low && *burst.slow_share_low > 0.05 && held >= 3) {
      ++bursts;
      bursts_clustered += clustered(burst);
    }
    const int k = std::uniform_int_distribution<int>(2, 5)(rng);
    std::uniform_int_distribution<int> pick(0, k - 1);
    const auto replica = read_series(run_of(rng, n, span / n, [&](double) { return pick(rng) == 0 ? factor : 1.0; }));
    if (replica.slow_share_low && *replica.slow_share_low > 0.05) {
      ++replicas;
      replicas_clustered += clustered(replica);
    }
  }
  MESSAGE("bursts clustered " << bursts_clustered << " of " << bursts << "; replicas clustered " << replicas_clustered
                              << " of " << replicas);
  CHECK(bursts >= 150);
  CHECK(replicas >= 150);
  CHECK(bursts_clustered >= 0.9 * bursts);
  CHECK(replicas_clustered <= 0.03 * replicas);  // a one-sided test at 1 %
}

}  // namespace infdoctor::stats

namespace infdoctor::stats {
namespace {

const StallBar kStall{200, 4};  // api/sample.h's

// A stream's gaps between content events: `n` gaps at `pace_ms` with 10 % jitter, up to one stall
// of 200-1000 ms in 16 gaps (a retransmission timeout, a pause: 6 % of the gaps, beyond the 1-3 %
// loss of a lossy path), and, when `pairs`, events arriving two at a
// time (a gap of 0, then twice the pace) over a stretch as long as a third of the stream.
std::vector<double> stream_gaps(std::mt19937& rng, int n, double pace_ms, bool pairs) {
  std::uniform_real_distribution<double> jitter(0.9, 1.1), u(0, 1), stall(200, 1000);
  std::vector<double> gaps;
  for (int i = 0; i < n; ++i) gaps.push_back(pace_ms * jitter(rng));
  const int stalls = std::uniform_int_distribution<int>(0, std::max(1, n / 16))(rng);
  for (int s = 0; s < stalls; ++s) gaps[std::uniform_int_distribution<std::size_t>(0, gaps.size() - 1)(rng)] += stall(rng);
  if (pairs) {
    const auto from = std::uniform_int_distribution<std::size_t>(0, gaps.size() - gaps.size() / 3)(rng);
    for (std::size_t i = from; i + 1 < std::min(gaps.size(), from + gaps.size() / 3); i += 2) {
      gaps[i + 1] += gaps[i];
      gaps[i] = 0;
    }
  }
  return gaps;
}

}  // namespace

TEST_CASE("speed_turn: a stream at one pace, with stalls and paired arrivals, does not turn") {
  std::mt19937 rng(44);
  int turned = 0, read = 0;
  for (int d = 0; d < 2000; ++d) {
    const int n = std::uniform_int_distribution<int>(2 * kTurnMinGaps, 128)(rng);
    const double pace = std::uniform_real_distribution<double>(5, 50)(rng);
    const auto gaps = stream_gaps(rng, n, pace, d % 2 == 0);
    const auto t = speed_turn(gaps, kStall);
    if (!t) continue;
    ++read;
    turned += *t >= kSlowFactor || *t <= 1 / kSlowFactor;
  }
  CHECK(read == 2000);
  CHECK(turned == 0);
  CHECK_FALSE(speed_turn(std::vector<double>(2 * kTurnMinGaps - 1, 20.0), kStall).has_value());
}

TEST_CASE("speed_turn: a burst that begins or ends inside a stream turns it, each way") {
  // The burst, 3-6 times slower, begins (or ends) anywhere that leaves kTurnMinGaps gaps on each
  // side; stalls and pairs as above.
  std::mt19937 rng(45);
  for (int d = 0; d < 1000; ++d) {
    const int n = std::uniform_int_distribution<int>(2 * kTurnMinGaps, 128)(rng);
    const double pace = std::uniform_real_distribution<double>(5, 50)(rng);
    const double factor = std::uniform_real_distribution<double>(3, 6)(rng);
    const auto edge = std::uniform_int_distribution<std::size_t>(kTurnMinGaps, static_cast<std::size_t>(n) - kTurnMinGaps)(rng);
    const bool begins = d % 2 == 0;
    auto gaps = stream_gaps(rng, n, pace, d % 4 < 2);
    for (std::size_t i = 0; i < gaps.size(); ++i)
      if ((i >= edge) == begins) gaps[i] *= factor;
    CAPTURE(n);
    CAPTURE(factor);
    CAPTURE(edge);
    const auto t = speed_turn(gaps, kStall);
    REQUIRE(t.has_value());
    if (begins)
      CHECK(*t >= kSlowFactor);
    else
      CHECK(*t <= 1 / kSlowFactor);
  }
}

}  // namespace infdoctor::stats
