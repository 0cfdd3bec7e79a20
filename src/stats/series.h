#pragma once
// The run's requests as one time series. Each point is one request's time per output token
// against the moment it started; tokens are compared with their own model's 25th percentile (its
// speed when nothing slows it), so requests of every check and both models read on one scale.
// Time per token and not time to first token: it does not move with prompt length, prompt caching
// or a cold start, each of which has its own check, and a slowdown of the serving hardware shows
// in it.
//   slow: at least kSlowFactor times the model's 25th percentile. The share of slow requests is
//   given from kMinSamples requests on, with its 95 % lower bound (Wilson score interval), so a
//   reader can tell a share that a heavy tail of a few per cent could make from one it cannot.
//   episodes: slow requests in a row (in start order) form one episode; with three or more, the
//   median gap between episode starts is the period (between episodes of two requests or more,
//   when there are three of those: a lone slow request is more likely the tail).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace infdoctor::stats {

struct SeriesPoint {
  double at_s = 0;  // start, seconds on any one clock
  std::string model;
  double tpot_ms = 0;
};

struct SeriesReading {
  std::size_t samples = 0;
  std::size_t slow = 0;
  std::optional<double> slow_share;              // from kMinSamples on
  std::optional<double> slow_share_low;          // its 95 % lower bound (Wilson), from kMinSamples on
  std::optional<double> slow_excess_ms_per_token;  // median over slow requests of tpot - their model's reference
  std::size_t episodes = 0;
  std::optional<double> period_s;  // median gap between episode starts, with three episodes or more
  double span_s = 0;               // first start to last
};

inline constexpr double kSlowFactor = 2.0;
inline constexpr std::size_t kMinSamples = 20;

SeriesReading read_series(std::vector<SeriesPoint> points);

}  // namespace infdoctor::stats
