#include "stats/fit.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>

namespace infdoctor::stats {

TEST_CASE("Theil-Sen recovers a line and shrugs off an outlier") {
  std::vector<double> x = {64, 512, 2048, 8192, 64, 512, 2048, 8192};
  std::vector<double> y;
  for (double v : x) y.push_back(80 + 0.5 * v);
  auto f = theil_sen(x, y);
  REQUIRE(f.has_value());
  CHECK(f->slope == doctest::Approx(0.5));
  CHECK(f->intercept == doctest::Approx(80));
  CHECK(f->r2 == doctest::Approx(1.0));
  y[1] += 3000;  // one request hit a cold start
  f = theil_sen(x, y);
  CHECK(f->slope == doctest::Approx(0.5).epsilon(0.02));
  CHECK(f->intercept == doctest::Approx(80).epsilon(0.05));
  CHECK(f->r2 < 0.9);  // the line no longer explains everything, and says so
}

TEST_CASE("least squares reads a rounded count's slope closer than Theil-Sen when the sizes are few and small") {
  // A tokenizer's count against words: tokens = round(words x per_word) + a chat template. Prompts of
  // 2-16 words (the warm-ups and the baseline) give the slope a prompt of 30-60 words is walked by.
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> per_word_of(1.1, 1.6);
  double worst_ls = 0, worst_ts = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const double per_word = per_word_of(rng);
    std::vector<double> x = {16, 6, 2, 2, 2, 8, 8, 8, 8, 8}, y;
    for (double w : x) y.push_back(std::round(w * per_word) + 20);
    const auto ls = least_squares(x, y);
    const auto ts = theil_sen(x, y);
    REQUIRE(ls.has_value());
    REQUIRE(ts.has_value());
    worst_ls = std::max(worst_ls, std::abs(ls->slope - per_word));
    worst_ts = std::max(worst_ts, std::abs(ts->slope - per_word));
  }
  MESSAGE("worst slope error over 200 tokenizers: least squares " << worst_ls << ", Theil-Sen " << worst_ts
                                                                 << " tokens a word");
  // Rounding moves each count by half a token at most, which moves a least-squares slope by at most
  // half a token times sum|x - mean| / sum (x - mean)^2: 0.094 for these sizes.
  CHECK(worst_ls <= 0.5 * 30.4 / 161.6 + 1e-9);
  CHECK(worst_ls < worst_ts);
}

TEST_CASE("fits need two distinct x") {
  CHECK_FALSE(theil_sen({1}, {2}).has_value());
  CHECK_FALSE(theil_sen({3, 3, 3}, {1, 2, 3}).has_value());
  CHECK_FALSE(theil_sen({1, 2}, {1}).has_value());
  CHECK_FALSE(least_squares({1}, {2}).has_value());
  CHECK_FALSE(least_squares({3, 3, 3}, {1, 2, 3}).has_value());
  CHECK_FALSE(least_squares({1, 2}, {1}).has_value());
}

TEST_CASE("median and MAD") {
  CHECK(*median({3, 1, 2}) == 2);
  CHECK(*median({4, 1, 2, 3}) == 2.5);
  CHECK_FALSE(median({}).has_value());
  CHECK(mad({1, 1, 1, 1}) == 0);
  CHECK(mad({1, 2, 3, 4, 100}) == doctest::Approx(1.4826));
  CHECK(mad({5}) == 0);
}

TEST_CASE("bootstrap interval of the median brackets it and narrows with more data") {
  std::vector<double> small = {10, 12, 11, 13, 9};
  std::vector<double> big;
  for (int i = 0; i < 200; ++i) big.push_back(10 + (i % 5) - 2);
  const auto a = bootstrap_median_ci(small);
  const auto b = bootstrap_median_ci(big);
  REQUIRE(a.has_value());
  REQUIRE(b.has_value());
  CHECK(a->low <= 11);
  CHECK(a->high >= 11);
  CHECK(b->high - b->low <= a->high - a->low);
  CHECK(bootstrap_median_ci(small)->low == a->low);  // seeded: the same every time
  CHECK_FALSE(bootstrap_median_ci({1}).has_value());
}

TEST_CASE("a slope is told from its noise: random flat data rarely passes for a cost, a real cost always does") {
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> unit(0, 1);
  int flat_passed = 0;
  const int draws = 400;
  for (int d = 0; d < draws; ++d) {
    // Three to six sizes over a range drawn from 0.5 to 8 (MB), TTFT around a base with jitter.
    const int n = 3 + static_cast<int>(unit(rng) * 4);
    const double range = 0.5 + unit(rng) * 7.5, base = 20 + unit(rng) * 500, jitter = 0.5 + unit(rng) * 20;
    std::vector<double> x, flat, sloped;
    const double cost = (10 + unit(rng) * 90) * jitter / range;  // a change 10 to 100 times the jitter
    for (int i = 0; i < n; ++i) {
      x.push_back(range * i / (n - 1));
      const double e = (unit(rng) * 2 - 1) * jitter;
      flat.push_back(base + e);
      sloped.push_back(base + cost * x.back() + e);
    }
    const auto f = theil_sen(x, flat);
    REQUIRE(f);
    if (f->slope > f->slope_noise) ++flat_passed;
    const auto s = theil_sen(x, sloped);
    REQUIRE(s);
    CHECK_MESSAGE(s->slope > s->slope_noise, "cost " << cost << " noise " << s->slope_noise << " n " << n);
  }
  MESSAGE("flat data passed for a cost in " << flat_passed << " of " << draws << " draws");
  CHECK(flat_passed < draws / 10);  // a flat line passes for a positive cost in under 10 % of draws
  const auto exact = theil_sen({0, 1, 2}, {5, 7, 9});
  REQUIRE(exact);
  CHECK(exact->slope_noise == doctest::Approx(0));
}

TEST_CASE("quadratic fit: recovers a curve drawn at random under jitter, and needs four sizes") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int d = 0; d < 50; ++d) {
    const double a = 20 + 100 * u(rng), b = 0.01 + 0.2 * u(rng), c = (0.01 + 0.05 * u(rng)) / 1000;
    std::vector<double> x, y;
    for (double p : {64.0, 512.0, 2048.0, 8192.0, 12000.0})
      for (int rep = 0; rep < 2; ++rep) {
        x.push_back(p);
        y.push_back(a + b * p + c * p * p + 12 * (u(rng) - 0.5));  // +-6 ms of jitter
      }
    const auto f = quadratic_fit(x, y);
    REQUIRE(f);
    CHECK(f->c == doctest::Approx(c).epsilon(0.1));
    CHECK(f->max_residual < 12);
  }
  CHECK_FALSE(quadratic_fit({1, 2, 3, 1, 2, 3}, {1, 4, 9, 1, 4, 9}));  // three sizes fit any curve
}

}  // namespace infdoctor::stats
