#include "stats/fit.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/summary.h"

namespace infdoctor::stats {

std::optional<QuadraticFit> quadratic_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = std::min(x.size(), y.size());
  std::vector<double> distinct(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() < 4) return std::nullopt;
  // In units of the largest x, so the normal equations stay well conditioned.
  const double scale = std::max(std::abs(distinct.front()), std::abs(distinct.back()));
  if (!(scale > 0)) return std::nullopt;
  double m[3][4] = {};
  for (std::size_t i = 0; i < n; ++i) {
    const double u = x[i] / scale, p[3] = {1, u, u * u};
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 3; ++k) m[r][k] += p[r] * p[k];
      m[r][3] += p[r] * y[i];
    }
  }
  for (int col = 0; col < 3; ++col) {  // Gaussian elimination with partial pivoting
    int pivot = col;
    for (int r = col + 1; r < 3; ++r)
      if (std::abs(m[r][col]) > std::abs(m[pivot][col])) pivot = r;
    if (std::abs(m[pivot][col]) < 1e-12) return std::nullopt;
    for (int k = 0; k < 4; ++k) std::swap(m[col][k], m[pivot][k]);
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int k = col; k < 4; ++k) m[r][k] -= f * m[col][k];
    }
  }
  QuadraticFit f;
  f.a = m[0][3] / m[0][0];
  f.b = m[1][3] / m[1][1] / scale;
  f.c = m[2][3] / m[2][2] / (scale * scale);
  f.count = n;
  for (std::size_t i = 0; i < n; ++i)
    f.max_residual = std::max(f.max_residual, std::abs(y[i] - (f.a + f.b * x[i] + f.c * x[i] * x[i])));
  return f;
}

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

namespace {

// The line's r^2 and slope noise against its points; the points have distinct x values.
LineFit with_residuals(LineFit f, const std::vector<double>& x, const std::vector<double>& y) {
  f.count = x.size();
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
  f.slope_noise = 2 * worst / (*hi - *lo);
  return f;
}

}  // namespace

std::optional<LineFit> theil_sen(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  std::vector<double> slopes;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j)
      if (x[j] != x[i]) slopes.push_back((y[j] - y[i]) / (x[j] - x[i]));
  if (slopes.empty()) return std::nullopt;
  LineFit f;
  f.slope = *median(slopes);
  std::vector<double> icpt;
  for (std::size_t i = 0; i < x.size(); ++i) icpt.push_back(y[i] - f.slope * x[i]);
  f.intercept = *median(icpt);
  return with_residuals(f, x, y);
}

std::optional<LineFit> least_squares(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nullopt;
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (!(sxx > 0)) return std::nullopt;
  LineFit f;
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  return with_residuals(f, x, y);
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
