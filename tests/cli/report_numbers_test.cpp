// The numbers of a report agree with each other: every share is of the reference request the
// report prints, every impact says what it is, and the text says what the JSON holds. Drawn over
// runs against a provider whose slowness is planted at random magnitudes.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

struct Run {
  std::string text;
  nlohmann::json json;
};

Run run_against(const std::string& base_url, const std::string& model, const std::string& json_path) {
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", base_url, "--model", model, "--quick",
                             "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY", "--json", json_path},
                            180s);
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->timed_out);
  REQUIRE_MESSAGE(r->exit_code <= 2, r->err);
  std::ifstream in(json_path);
  return {r->out, nlohmann::json::parse(in)};
}

}  // namespace

TEST_CASE("report numbers: each share is of the printed reference request, and text and JSON agree, over random runs") {
  std::mt19937 rng(20261205);
  std::uniform_real_distribution<double> u(0, 1);
  const std::regex priced(R"(= (\d+) ms alone)");
  const std::regex inside(R"(: (\d+) ms \(([^)]*)\), (\d+) % of the (\d+) ms reference request)");
  const std::regex on_top(R"(: (\d+) ms \(([^)]*)\), on top of the (\d+) ms reference request \(\+(\d+) %\))");
  const std::regex clipped(R"(: (\d+) ms \(([^)]*)\); (\d+) ms of it not counted above, (\d+) % of the (\d+) ms reference request)");
  for (int draw = 0; draw < 2; ++draw) {
    // A slow decode (40-90 ms a token), a cold start after 2 s idle (800-3000 ms) and a prefill
    // cost (0.5-2 ms a token): each drawn, so the findings and their sizes differ from run to run.
    const double tpot = 40 + 50 * u(rng), cold = 800 + 2200 * u(rng), prefill = 0.5 + 1.5 * u(rng);
    CAPTURE(tpot);
    CAPTURE(cold);
    CAPTURE(prefill);
    std::ostringstream scenario;
    scenario << R"({"models": {"gpt-4o-mini": {"overhead_ms": 30, "decode_ms_per_token": 8, "prefill_ms_per_token": 0.05},)"
             << R"("Llama-3.1-70B-Instruct": {"overhead_ms": 60, "decode_ms_per_token": )" << tpot
             << R"(, "prefill_ms_per_token": )" << prefill << R"(, "cold_start": {"idle_s": 2, "penalty_ms": )" << cold << "}}}}";
    auto server = test::start_fake(scenario.str());
    test::TempFile out("", "results.json");
    const Run r = run_against(server->base_url(), "Llama-3.1-70B-Instruct", out.path());
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(r.text, m, priced), r.text);
    // The text prints the reference to the millisecond; the shares are of the exact one.
    const double reference = std::stod(m[1]);
    const double exact = r.json["run"]["metrics"]["workload_total_ms"].get<double>();
    CHECK(reference == std::round(exact));
    REQUIRE(r.json["diagnosis"].size() >= 1);
    double inside_sum = 0;
    int lines = 0;
    for (const auto& f : r.json["diagnosis"]) {
      const double impact = f["impact_ms"].get<double>(), share = f["share"].get<double>();
      if (impact <= 0) continue;
      CAPTURE(f["rule"]);
      // The finding's line in the text: its impact, what the impact is, its share and the whole.
      const std::string head = f["cause"].is_string() ? f["cause"].get<std::string>() : f["rule"].get<std::string>();
      const auto at = r.text.find("(rule " + f["rule"].get<std::string>() + ")");
      REQUIRE(at != std::string::npos);
      const std::string line = r.text.substr(r.text.rfind('\n', at) + 1, at - r.text.rfind('\n', at));
      CAPTURE(line);
      CHECK(line.find(head) != std::string::npos);
      CHECK_FALSE(f["impact_is"].get<std::string>().empty());
      ++lines;
      if (std::regex_search(line, m, on_top)) {
        CHECK(f["on_top"] == true);
        CHECK(std::stod(m[1]) == std::round(impact));
        CHECK(m[2] == f["impact_is"].get<std::string>());
        CHECK(std::stod(m[3]) == std::round(reference));
        CHECK(std::stod(m[4]) == std::round(100 * impact / exact));
        CHECK(share == doctest::Approx(impact / exact));
      } else if (std::regex_search(line, m, clipped)) {
        CHECK(f["on_top"] == false);
        CHECK(std::stod(m[1]) == std::round(impact));
        CHECK(std::stod(m[3]) < std::round(impact));
        CHECK(std::stod(m[4]) == std::round(100 * share));
        CHECK(std::stod(m[5]) == std::round(reference));
        inside_sum += share;
      } else if (std::regex_search(line, m, inside)) {
        CHECK(f["on_top"] == false);
        CHECK(std::stod(m[1]) == std::round(impact));
        CHECK(m[2] == f["impact_is"].get<std::string>());
        CHECK(std::stod(m[3]) == std::round(100 * impact / exact));
        CHECK(std::stod(m[4]) == std::round(reference));
        inside_sum += share;
      } else {
        FAIL_CHECK("a finding's line names no share of the reference request: " << line);
      }
    }
    CHECK(lines >= 2);                   // the slow decode and the cold start at least
    CHECK(inside_sum <= 1.0 + 1e-9);     // what lies inside the reference request, at most all of it
    MESSAGE("draw " << draw << ": decode " << tpot << " ms/token, cold " << cold << " ms, prefill " << prefill
                    << " ms/token: reference " << reference << " ms, " << lines << " findings priced, inside shares "
                    << inside_sum);
  }
}

}  // namespace infdoctor
