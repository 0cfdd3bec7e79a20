#include "stats/fit.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/summary.h"

namespace infdoctor::stats {

std::optional<double> median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double mad(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = *median(v);
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::abs(x - m));
  return 1.4826 * *median(dev);
}

std::optional<LineFit> theil_sen(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  std::vector<double> slopes;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j)
      if (x[j] != x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
  if (slopes.empty()) return std::nullopt;
  LineFit f;
  f.count = x.size();
  f.slope = *median(slopes);
  std::vector<double> icpt;
  for (std::size_t i = 0; i < x.size(); ++i) icpt.push_back(y[i] - f.slope * x[i]);
  f.intercept = *median(icpt);
  double mean_y = 0;
  for (double v : y) mean_y += v;
  mean_y /= static_cast<double>(y.size());
  double ss_res = 0, ss_tot = 0, worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double e = y[i] - (f.intercept + f.slope * x[i]);
    worst = std::max(worst, std::abs(e));
    ss_res += e * e;
    ss_tot += (y[i] - mean_y) * (y[i] - mean_y);
  }
  f.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  f.slope_noise = 2 * worst / (*hi - *lo);  // distinct x values exist: a slope was found
  return f;
}

std::optional<Interval> bootstrap_median_ci(const std::vector<double>& v, double level, int resamples,
                                            std::uint64_t seed) {
  if (v.size() < 2) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, v.size() - 1);
  std::vector<double> meds;
  meds.reserve(static_cast<std::size_t>(resamples));
  std::vector<double> draw(v.size());
  for (int r = 0; r < resamples; ++r) {
    for (auto& d : draw) d = v[pick(rng)];
    meds.push_back(*median(draw));
  }
  std::sort(meds.begin(), meds.end());
  const double tail = (1.0 - level) / 2.0 * 100.0;
  return Interval{*percentile_sorted(meds, tail), *percentile_sorted(meds, 100.0 - tail)};
}

}  // namespace infdoctor::stats
