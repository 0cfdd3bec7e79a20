#include "stats/summary.h"

#include <doctest/doctest.h>

namespace infdoctor::stats {

TEST_CASE("nearest-rank percentiles are observed values") {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  CHECK(*percentile_sorted(v, 50) == 50);
  CHECK(*percentile_sorted(v, 90) == 90);
  CHECK(*percentile_sorted(v, 99) == 99);
  CHECK(*percentile_sorted(v, 100) == 100);
  CHECK(*percentile_sorted(v, 0) == 1);
  const std::vector<double> five = {10, 20, 30, 40, 50};
  CHECK(*percentile_sorted(five, 50) == 30);
  CHECK(*percentile_sorted(five, 90) == 50);  // rank ceil(4.5) = 5
  CHECK(*percentile_sorted(five, 20) == 10);
  CHECK_FALSE(percentile_sorted({}, 50).has_value());
}

TEST_CASE("summaries") {
  const Summary s = summarize({3, 1, 2});
  CHECK(s.count == 3);
  CHECK(*s.min == 1);
  CHECK(*s.max == 3);
  CHECK(*s.p50 == 2);
  CHECK(*s.mean == doctest::Approx(2));
  CHECK(*s.stddev == doctest::Approx(1));
  // An even count's median lies between its two middle values.
  CHECK(*summarize({40, 10, 30, 20}).p50 == 25);
  const std::vector<double> waves = {1300, 1310, 1320, 1330, 2600, 2610, 2620, 2630,
                                     3900, 3910, 3920, 3930, 5180, 5190, 5200, 5210};
  CHECK(*summarize(waves).p50 == doctest::Approx((2630 + 3900) / 2.0));
  const Summary one = summarize({5});
  CHECK(one.count == 1);
  CHECK_FALSE(one.stddev.has_value());  // no spread from one sample
  const Summary none = summarize({});
  CHECK(none.count == 0);
  CHECK_FALSE(none.p50.has_value());
}

}  // namespace infdoctor::stats
