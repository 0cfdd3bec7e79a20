#include "run/slo.h"

#include <doctest/doctest.h>

#include <random>

#include "results/run_metrics.h"
#include "support/seed.h"

namespace infdoctor::run {
namespace {

namespace rm = results::run_metric;

double draw(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(test::rng()); }

std::vector<Slo> slos(const std::string& text) {
  auto parsed = parse_slos(text);
  REQUIRE(parsed.ok());
  return parsed.value();
}

}  // namespace

TEST_CASE("slo: a request's limit is judged on the priced request, its tail by the baseline's spread, its total with the queue") {
  const double short_p50 = draw(80, 150), spread = draw(20, 200), priced = draw(800, 3000), queue = draw(100, 900),
               total = priced + draw(500, 2000);
  const std::map<std::string, double> metrics = {
      {"baseline.ttft_p50_ms", short_p50}, {"baseline.ttft_p90_ms", short_p50 + spread}, {rm::workload_ttft_ms, priced},
      {rm::workload_total_ms, total},      {rm::workload_queue_ms, queue}};
  // Every limit sits above what the baseline's short request measured and below the priced request.
  const double limit = short_p50 + spread + 1;
  std::vector<std::string> unmeasured;
  const auto found = check_slos(slos("ttft_p50_ms=" + std::to_string(limit) + ",ttft_p90_ms=" + std::to_string(limit) +
                                     ",total_p50_ms=" + std::to_string(limit)),
                                metrics, unmeasured);
  CHECK(unmeasured.empty());
  REQUIRE(found.size() == 3);
  CHECK(found[0].impact_ms == doctest::Approx(priced - limit));
  CHECK(found[1].impact_ms == doctest::Approx(priced + spread - limit));
  CHECK(found[2].impact_ms == doctest::Approx(total + queue - limit));
  CHECK(found[0].explanation.find("the reference request's first token is") != std::string::npos);
  CHECK(found[0].impact_is.find("over your limit of") == 0);
}

TEST_CASE("slo: without a priced request the limit reads what was measured, and is unmeasured only where nothing judged it") {
  const double p50 = draw(100, 500);
  std::vector<std::string> unmeasured;
  auto found = check_slos(slos("ttft_p50_ms=" + std::to_string(p50 - 10)), {{"baseline.ttft_p50_ms", p50}}, unmeasured);
  REQUIRE(found.size() == 1);
  CHECK(found[0].impact_ms == doctest::Approx(10));
  CHECK(found[0].evidence.count("baseline.ttft_p50_ms") == 1);
  // The load check counted its requests against the limit: judged there.
  found = check_slos(slos("ttft_p50_ms=100"), {{"load.slo_limits_count", 1}}, unmeasured);
  CHECK(found.empty());
  CHECK(unmeasured.empty());
  // Nothing did: said so.
  found = check_slos(slos("ttft_p50_ms=100,itl_p99_ms=50"), {}, unmeasured);
  CHECK(unmeasured.size() == 2);
}

}  // namespace infdoctor::run
