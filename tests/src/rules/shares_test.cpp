// The shares of one run are of the reference request the report prints: the causes inside it add
// up to at most 100 % of it, whatever fires in whatever magnitudes; a cause on top of it is what it
// adds to it.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>

#include "rules/rules.h"
#include "support/rule_text.h"

namespace infdoctor::rules {
namespace {

RuleSet load(const std::string& text, LoadReport& report) {
  return load_texts({RuleFile{"rules/test.json", text}}, {"run.typical_total_ms", "run.workload_total_ms"}, report);
}

}  // namespace

TEST_CASE("shares inside the reference request add up to at most 100 %, for random findings on random baselines") {
  std::mt19937_64 rng(15);
  std::uniform_real_distribution<double> u(0, 1);
  const auto& all = causes();
  for (int draw = 0; draw < 300; ++draw) {
    // Up to eight rules, each a random cause with a random impact (1 ms to 20 s).
    std::vector<test::AlwaysRule> rules;
    const int n = 1 + static_cast<int>(u(rng) * 8);
    for (int i = 0; i < n; ++i) {
      const std::string& cause = all[static_cast<std::size_t>(u(rng) * all.size()) % all.size()];
      const double impact = std::exp(std::log(1.0) + u(rng) * std::log(20000.0));
      rules.push_back({"x.r" + std::to_string(i), cause, "warning", impact, 0.5});
    }
    const std::string text = test::rules_text("x", rules);
    LoadReport report;
    const RuleSet set = load(text, report);
    REQUIRE(report.errors.empty());
    std::map<std::string, double> metrics;
    if (u(rng) < 0.8) metrics["run.typical_total_ms"] = 50 + u(rng) * 10000;
    const auto found = diagnose(set, metrics);
    const double reference = reference_total_ms(metrics);
    double sum = 0;
    for (const auto& f : found) {
      CHECK(f.share >= 0);
      if (f.on_top) {
        CHECK(f.share == doctest::Approx(f.impact_ms / reference));
      } else {
        CHECK(f.share <= 1);
        sum += f.share;
      }
    }
    CHECK_MESSAGE(sum <= 1 + 1e-9, "draw " << draw << ": shares add up to " << sum);
  }
}

TEST_CASE("two causes that explain the same milliseconds split the typical request, the first ranked first") {
  const std::string text = test::rules_text("x", {{"x.place", "model_specific", "warning", 860, 0.7},
                                                  {"x.phase", "decode_bound", "warning", 800, 0.7},
                                                  {"x.cold", "cold_start", "warning", 2000, 0.7}});
  LoadReport report;
  const RuleSet set = load(text, report);
  REQUIRE(report.errors.empty());
  const auto found = diagnose(set, {{"run.typical_total_ms", 1000}});
  REQUIRE(found.size() == 3);
  CHECK(found[0].rule == "x.cold");
  CHECK(found[0].share == doctest::Approx(2.0));  // on top of the 1000 ms request: twice what it takes
  CHECK(found[0].on_top);
  CHECK(found[1].share == doctest::Approx(0.86));
  CHECK(found[2].share == doctest::Approx(0.14));  // what the first left of the typical request
  CHECK(found[2].impact_ms == 800);                // its own milliseconds are kept as measured
  CHECK(describe_impact(found[2], {{"run.typical_total_ms", 1000}}) ==
        "800 ms; 140 ms of it not counted above, 14 % of the 1000 ms median request of the baseline");
  CHECK(describe_impact(found[0], {{"run.typical_total_ms", 1000}}) ==
        "2000 ms, on top of the 1000 ms median request of the baseline (+200 %)");

  // Priced on a workload (run/workload.h), the shares are of its reference request, not the baseline's.
  const std::map<std::string, double> workload = {{"run.typical_total_ms", 1000}, {"run.workload_total_ms", 3000}};
  const auto priced = diagnose(set, workload);
  REQUIRE(priced.size() == 3);
  CHECK(priced[0].share == doctest::Approx(2000.0 / 3000));
  CHECK(priced[1].share == doctest::Approx(860.0 / 3000));
  CHECK(priced[2].share == doctest::Approx(800.0 / 3000));  // room enough in the longer request for both
  CHECK(describe_impact(priced[1], workload) == "860 ms, 29 % of the 3000 ms reference request");
}

}  // namespace infdoctor::rules
