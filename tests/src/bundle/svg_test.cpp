// report.html's axes: over ranges drawn at random across ten decades, ticks step by 1, 2 or 5
// times a power of ten, cover the data, number between three and eleven, and read back as
// the values they stand for; a count axis steps by whole numbers.
#include "bundle/svg.h"

#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <regex>
#include <string>

namespace infdoctor::bundle {
namespace {

// Whether `step` is 1, 2 or 5 times a power of ten.
bool is_round(double step) {
  const double power = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  const double m = step / power;
  return std::abs(m - 1) < 1e-6 || std::abs(m - 2) < 1e-6 || std::abs(m - 5) < 1e-6;
}

}  // namespace

TEST_CASE("svg: round ticks over random ranges step by 1, 2 or 5 times a power of ten and cover the data") {
  std::mt19937 rng(20261205);
  std::uniform_real_distribution<double> decade(-3, 6), u(0, 1);
  for (int i = 0; i < 5000; ++i) {
    const bool integer = i % 3 == 0;
    const double span = std::pow(10.0, decade(rng)) * (integer ? 10 : 1);
    const double lo = u(rng) < 0.5 ? 0 : (u(rng) - 0.3) * span * 4;
    const double hi = lo + span * (0.05 + u(rng));
    const Ticks t = round_ticks(lo, hi, integer);
    CAPTURE(lo);
    CAPTURE(hi);
    CAPTURE(integer);
    CHECK(is_round(t.step));
    CHECK(t.lo <= lo + 1e-9 * std::abs(lo));
    CHECK(t.hi >= hi - 1e-9 * std::abs(hi));
    const double ticks = std::round((t.hi - t.lo) / t.step) + 1;
    CHECK(ticks >= 3);
    CHECK(ticks <= 11);
    if (integer) CHECK(t.step == std::round(t.step));
    // Each label reads back as its value, with no more digits than the step needs.
    for (double k = 0; k < ticks; ++k) {
      const double v = t.lo + k * t.step;
      const std::string label = tick_label(v, t.step);
      CHECK(std::abs(std::stod(label) - v) <= t.step * 1e-6 + 1e-12);
      if (integer || t.step >= 1) CHECK(label.find('.') == std::string::npos);
    }
  }
}

TEST_CASE("svg: a chart's count axis reads whole numbers, even over a range of three") {
  Series s{"streams", {{1, 120.5}, {2, 240.25}, {4, 610.75}}, true};
  const std::string svg = svg_chart("c", {"parallel streams", true}, {"TTFT ms"}, {s});
  CHECK(svg.find("data-points=\"3\"") != std::string::npos);
  const std::regex tick(R"re(data-axis="x">([^<]*)<)re");
  int n = 0;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it, ++n)
    CHECK((*it)[1].str().find('.') == std::string::npos);
  CHECK(n >= 3);
  const std::regex ytick(R"re(data-axis="y">([^<]*)<)re");
  std::smatch m;
  REQUIRE(std::regex_search(svg, m, ytick));
  CHECK(m[1].str() == "0");  // latency axes start at zero
}

}  // namespace infdoctor::bundle
