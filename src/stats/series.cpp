#include "stats/series.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stats/fit.h"
#include "stats/summary.h"

namespace infdoctor::stats {

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
  std::vector<double> excess;
  struct Episode {
    double start = 0;
    std::size_t requests = 0;
  };
  std::vector<Episode> episodes;
  bool in_episode = false;
  for (const auto& p : points) {
    const double t = typical[p.model];
    const bool slow = by_model[p.model].size() >= 3 && p.tpot_ms >= kSlowFactor * t;
    if (slow) {
      ++out.slow;
      excess.push_back(p.tpot_ms - t);
      if (!in_episode) episodes.push_back({p.at_s, 0});
      ++episodes.back().requests;
    }
    in_episode = slow;
  }
  out.episodes = episodes.size();
  if (out.samples >= kMinSamples) {
    const double n = static_cast<double>(out.samples), p = static_cast<double>(out.slow) / n, z = 1.96;
    out.slow_share = p;
    out.slow_share_low = std::max(0.0, (p + z * z / (2 * n) - z * std::sqrt(p * (1 - p) / n + z * z / (4 * n * n))) /
                                           (1 + z * z / n));
  }
  if (!excess.empty()) out.slow_excess_ms_per_token = median(excess);
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
