#pragma once
// Robust statistics for the model checks.
//   Theil-Sen line: slope = median of pairwise slopes, intercept = median of y - slope*x; a few
//   outliers (a cold start, a GC pause) do not move it, unlike least squares. r^2 is reported
//   for the fitted line against the data, so a reader sees how well a line explains them.
//   Median and MAD (median absolute deviation, scaled by 1.4826 to match a normal sigma).
//   Percentile bootstrap confidence interval of the median (fixed seed: reproducible output).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace infdoctor::stats {

struct LineFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;
  std::size_t count = 0;
  // The slope's noise: twice the largest residual over the x range. A slope smaller than this
  // changes y across the measured range by less than the points scatter around the line, so it
  // is not measurable.
  double slope_noise = 0;
};

// Needs at least two distinct x values; nothing otherwise.
std::optional<LineFit> theil_sen(const std::vector<double>& x, const std::vector<double>& y);
// The least-squares line, for counts that round but never jump (a tokenizer's counts against words):
// every pair weighs by its spread, so near sizes' rounding moves the slope less than under Theil-Sen.
// Needs two distinct x values; nothing otherwise.
std::optional<LineFit> least_squares(const std::vector<double>& x, const std::vector<double>& y);

// y = a + b x + c x^2 by least squares, for a cost that grows faster than linearly (attention's
// quadratic term in prefill). max_residual is the largest distance of a point from the curve.
// Needs four distinct x values or more (three fit any curve exactly); nothing otherwise.
struct QuadraticFit {
  double a = 0, b = 0, c = 0;
  double max_residual = 0;
  std::size_t count = 0;
};
std::optional<QuadraticFit> quadratic_fit(const std::vector<double>& x, const std::vector<double>& y);

std::optional<double> median(std::vector<double> v);
// Scaled MAD; 0 for fewer than two values.
double mad(const std::vector<double>& v);

struct Interval {
  double low = 0;
  double high = 0;
};
// 95 % (or `level`) percentile-bootstrap interval of the median; nothing under two values.
std::optional<Interval> bootstrap_median_ci(const std::vector<double>& v, double level = 0.95, int resamples = 2000,
                                            std::uint64_t seed = 1);

}  // namespace infdoctor::stats
