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
//   clustering: each model's slow requests in its own start order make runs (slow requests in a
//   row); against them, the runs the same slow requests would make if each were slow by chance, in
//   any order (the runs of a random arrangement: mean n1 (n2 + 1) / n, variance
//   n1 (n1 - 1) n2 (n2 + 1) / (n^2 (n - 1)), n1 slow of n), summed over the models. Slowness that
//   follows the clock (a neighbour's burst) makes far fewer runs than that; slowness that follows
//   the request (one slow replica behind a balancer) makes about as many. Per model: two models
//   are often served apart, each with its own neighbours.
//   turns: a request whose stream changed pace by kSlowFactor or more in mid-stream (before and
//   after the split that differ most, each side kTurnMinGaps gaps or more) turned slow or turned
//   fast. A request stays on the replica that took it, so a replica's slowness never turns a
//   stream; a neighbour's burst begins and ends on the clock, inside whichever requests are
//   streaming then. A side's pace is the mean of its gaps between content events, each stall
//   (a lost segment, a pause: a gap over the stall bar against the pace) counted at the pace:
//   events that arrive together keep the time they span, and a stall does not move it.
//   replicas: points that carry the replica that served them are counted per replica. A slow
//   replica makes most of its requests slow and the others no more than a tail; a neighbour's
//   bursts fall on every replica alike.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace infdoctor::stats {

struct SeriesPoint {
  double at_s = 0;  // start, seconds on any one clock
  std::string model;
  double tpot_ms = 0;
  std::string id;       // the request id the provider sent, if any
  std::string replica;  // the replica that served it, as a header named it ("x-served-by replica-2")
  std::optional<double> turn;  // speed_turn of its stream's gaps
};

struct ReplicaCount {
  std::size_t requests = 0;
  std::size_t slow = 0;
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
  // Runs of slow requests in each model's own order, added up; and the runs the same requests
  // would make slow by chance: mean and standard deviation, from kMinSamples on, over the models
  // with two slow and two usual requests or more (those models' runs only).
  std::size_t runs = 0;
  std::optional<double> runs_expected, runs_sd;
  std::optional<double> slow_factor;  // median over slow requests of tpot / their model's reference
  std::vector<std::string> slow_ids, usual_ids;  // request ids in start order, where sent
  std::size_t turned_slow = 0, turned_fast = 0;  // requests whose stream turned, each way
  std::map<std::string, ReplicaCount> replicas;  // by the replica a header named
  // With two named replicas or more: the share of slow requests on the replica with the most of
  // them, and the 95 % lower bound (Wilson) of that share over the other replicas' requests.
  std::optional<double> worst_replica_share, elsewhere_share_low;
};

// The 95 % lower bound of a share k / n (Wilson score interval); 0 for n = 0.
double wilson_low(double k, double n);

inline constexpr double kSlowFactor = 2.0;
inline constexpr std::size_t kMinSamples = 20;
inline constexpr std::size_t kTurnMinGaps = 12;

// A stall: a gap of at least min_ms and `over` times the stream's pace (api/sample.h sets them).
struct StallBar {
  double min_ms = 0;
  double over = 0;
};
// A stream's pace after its turn over its pace before (above): above 1 it slowed down. Nothing
// under twice kTurnMinGaps gaps.
std::optional<double> speed_turn(const std::vector<double>& gaps, const StallBar& stall);

SeriesReading read_series(std::vector<SeriesPoint> points);

}  // namespace infdoctor::stats
