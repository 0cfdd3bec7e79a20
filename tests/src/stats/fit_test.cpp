#include "stats/fit.h"

#include <doctest/doctest.h>

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

TEST_CASE("fits need two distinct x") {
  CHECK_FALSE(theil_sen({1}, {2}).has_value());
  CHECK_FALSE(theil_sen({3, 3, 3}, {1, 2, 3}).has_value());
  CHECK_FALSE(theil_sen({1, 2}, {1}).has_value());
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

}  // namespace infdoctor::stats
