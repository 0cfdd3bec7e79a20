#include "stats/summary.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace infdoctor::stats {

std::optional<double> percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nullopt;
  p = std::clamp(p, 0.0, 100.0);
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  // The median of an even count is the mean of the two middle values: sixteen users in four waves
  // have their middle between the second and third waves, not at the end of the second.
  const std::size_t n = values.size();
  s.p50 = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
  s.p90 = percentile_sorted(values, 90);
  s.p99 = percentile_sorted(values, 99);
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  const double mean = sum / static_cast<double>(values.size());
  s.mean = mean;
  if (values.size() >= 2) {
    double ss = 0;
    for (double v : values) ss += (v - mean) * (v - mean);
    s.stddev = std::sqrt(ss / static_cast<double>(values.size() - 1));
  }
  return s;
}

}  // namespace infdoctor::stats
