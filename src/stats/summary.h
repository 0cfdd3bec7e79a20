#pragma once
// Summaries of kept raw samples. The tail percentiles (p90, p99) use the nearest-rank method: the
// p-th percentile of N sorted values is the value at rank ceil(p/100 * N), an observed value. The
// median of an even count is the mean of its two middle values, as stats::median's.
#include <cstddef>
#include <optional>
#include <vector>

namespace infdoctor::stats {

// Nearest-rank percentile of already sorted values; nothing for an empty input.
std::optional<double> percentile_sorted(const std::vector<double>& sorted, double p);

struct Summary {
  std::size_t count = 0;
  std::optional<double> min, p50, p90, p99, max, mean;
  std::optional<double> stddev;  // sample standard deviation; absent under two samples
};

Summary summarize(std::vector<double> values);

}  // namespace infdoctor::stats
