#include "stats/series.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stats/fit.h"
#include "stats/summary.h"

namespace infdoctor::stats {

double wilson_low(double k, double n) {
  if (n <= 0) return 0;
  const double p = k / n, z = 1.96;
  return std::max(0.0, (p + z * z / (2 * n) - z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n));
}

namespace {

// The mean of gaps with the shortest and longest quarters (at least one) left out.
double interquartile_mean(std::vector<double> gaps) {
  std::sort(gaps.begin(), gaps.end());
  const std::size_t cut = std::max<std::size_t>(1, gaps.size() / 4);
  double sum = 0;
  for (std::size_t i = cut; i + cut < gaps.size(); ++i) sum += gaps[i];
  return sum / static_cast<double>(gaps.size() - 2 * cut);
}

// A stretch's pace: the mean of its gaps, each stall (a gap over the stall bar against the pace)
// counted at the pace instead. The first pace is the interquartile mean; the mean then, twice:
// stalls that came close together (a burst of loss) can fill more than a quarter of a short
// stretch. A mean and not a median, since events that arrive together (a pair: 0, then twice the
// gap; a clump after a lost segment came again) keep the time they span.
double pace(std::vector<double> gaps, const StallBar& stall) {
  double p = interquartile_mean(gaps);
  for (int pass = 0; pass < 2; ++pass) {
    const double bar = std::max(stall.min_ms, stall.over * p);
    double sum = 0;
    for (const double g : gaps) sum += g >= bar ? p : g;
    p = sum / static_cast<double>(gaps.size());
  }
  return p;
}

}  // namespace

std::optional<double> speed_turn(const std::vector<double>& gaps, const StallBar& stall) {
  if (gaps.size() < 2 * kTurnMinGaps) return std::nullopt;
  // Splits from kTurnMinGaps in, about 32 of them on a long stream.
  const std::size_t last = gaps.size() - kTurnMinGaps, step = std::max<std::size_t>(1, (last - kTurnMinGaps) / 32);
  std::optional<double> turn;
  for (std::size_t k = kTurnMinGaps; k <= last; k += step) {
    const auto at = gaps.begin() + static_cast<std::ptrdiff_t>(k);
    const double before = pace({gaps.begin(), at}, stall), after = pace({at, gaps.end()}, stall);
    if (!(before > 0) || !(after > 0)) continue;
    const double r = after / before;
    if (!turn || std::abs(std::log(r)) > std::abs(std::log(*turn))) turn = r;
  }
  return turn;
}

SeriesReading read_series(std::vector<SeriesPoint> points) {
  SeriesReading out;
  points.erase(std::remove_if(points.begin(), points.end(), [](const SeriesPoint& p) { return !(p.tpot_ms > 0); }),
               points.end());
  out.samples = points.size();
  if (points.empty()) return out;
  std::map<std::string, std::vector<double>> by_model;
  for (const auto& p : points) by_model[p.model].push_back(p.tpot_ms);
  // Each model's reference is its 25th percentile, its speed when nothing slows it: a median would
  // itself be slow once slowdowns cover half the run.
  std::map<std::string, double> typical;
  for (auto& [m, v] : by_model) {
    std::sort(v.begin(), v.end());
    typical[m] = *percentile_sorted(v, 25);
  }
  std::stable_sort(points.begin(), points.end(), [](const SeriesPoint& a, const SeriesPoint& b) { return a.at_s < b.at_s; });
  out.span_s = points.back().at_s - points.front().at_s;
  std::vector<double> excess, factors;
  struct Episode {
    double start = 0;
    std::size_t requests = 0;
  };
  std::vector<Episode> episodes;
  bool in_episode = false;
  for (const auto& p : points) {
    const double t = typical[p.model];
    const bool slow = by_model[p.model].size() >= 3 && p.tpot_ms >= kSlowFactor * t;
    if (!p.id.empty()) (slow ? out.slow_ids : out.usual_ids).push_back(p.id);
    out.turned_slow += p.turn && *p.turn >= kSlowFactor;
    out.turned_fast += p.turn && *p.turn <= 1 / kSlowFactor;
    if (!p.replica.empty()) {
      ++out.replicas[p.replica].requests;
      if (slow) ++out.replicas[p.replica].slow;
    }
    if (slow) {
      ++out.slow;
      excess.push_back(p.tpot_ms - t);
      if (t > 0) factors.push_back(p.tpot_ms / t);
      if (!in_episode) episodes.push_back({p.at_s, 0});
      ++episodes.back().requests;
    }
    in_episode = slow;
  }
  out.episodes = episodes.size();
  if (out.samples >= kMinSamples) {
    out.slow_share = static_cast<double>(out.slow) / static_cast<double>(out.samples);
    out.slow_share_low = wilson_low(static_cast<double>(out.slow), static_cast<double>(out.samples));
  }
  if (!excess.empty()) out.slow_excess_ms_per_token = median(excess);
  if (!factors.empty()) out.slow_factor = median(factors);
  if (out.replicas.size() >= 2) {
    auto worst = out.replicas.begin();
    for (auto it = out.replicas.begin(); it != out.replicas.end(); ++it)
      if (it->second.slow > worst->second.slow) worst = it;
    std::size_t slow_elsewhere = 0, elsewhere = 0;
    for (auto it = out.replicas.begin(); it != out.replicas.end(); ++it)
      if (it != worst) {
        slow_elsewhere += it->second.slow;
        elsewhere += it->second.requests;
      }
    out.worst_replica_share = static_cast<double>(worst->second.slow) / static_cast<double>(worst->second.requests);
    out.elsewhere_share_low = wilson_low(static_cast<double>(slow_elsewhere), static_cast<double>(elsewhere));
  }
  // Runs per model, against a random order of the same requests.
  std::map<std::string, std::vector<bool>> order;
  for (const auto& p : points) order[p.model].push_back(by_model[p.model].size() >= 3 && p.tpot_ms >= kSlowFactor * typical[p.model]);
  double mean = 0, variance = 0;
  bool any = false;
  for (const auto& [_, slow] : order) {
    const double n1 = static_cast<double>(std::count(slow.begin(), slow.end(), true)),
                 n2 = static_cast<double>(slow.size()) - n1, n = n1 + n2;
    if (n1 < 2 || n2 < 2) continue;
    any = true;
    for (std::size_t i = 0; i < slow.size(); ++i) out.runs += slow[i] && (i == 0 || !slow[i - 1]);
    mean += n1 * (n2 + 1) / n;
    variance += n1 * (n1 - 1) * n2 * (n2 + 1) / (n * n * (n - 1));
  }
  if (out.samples >= kMinSamples && any) {
    out.runs_expected = mean;
    out.runs_sd = std::sqrt(variance);
  }
  // The period from episodes of two requests or more when there are three of those: a lone slow
  // request between them is the tail, not the pattern.
  std::vector<double> starts;
  for (const auto& e : episodes)
    if (e.requests >= 2) starts.push_back(e.start);
  if (starts.size() < 3) {
    starts.clear();
    for (const auto& e : episodes) starts.push_back(e.start);
  }
  if (starts.size() >= 3) {
    std::vector<double> gaps;
    for (std::size_t i = 1; i < starts.size(); ++i) gaps.push_back(starts[i] - starts[i - 1]);
    out.period_s = median(gaps);
  }
  return out;
}

}  // namespace infdoctor::stats
