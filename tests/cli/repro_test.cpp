// The bundle's repro.sh reproduces what the run found: it sends again the requests that showed
// the top finding and prints each one's time to first content beside the run's number, which it
// must come within 10 % of. Cold start and slow prefill are planted at magnitudes drawn at random.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

struct ReproLine {
  std::string what;
  double ms = 0, run_ms = 0;
  std::string stream;
};

// Runs infdoctor against `scenario` with a bundle, then the bundle's repro.sh; its lines.
std::vector<ReproLine> run_and_repro(const std::string& scenario, const std::string& expect_cause, std::string& script) {
  auto server = test::start_fake(scenario);
  test::TempFile dir("", "unused");
  const std::string bundle = dir.dir() + "/bundle";
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model",
                             "Llama-3.1-70B-Instruct", "--small-model", "Llama-3.1-8B-Instruct", "--quick",
                             "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY", "--bundle", bundle},
                            240s);
  REQUIRE(r.ok());
  REQUIRE_MESSAGE(r->exit_code <= 2, r->err);
  CHECK_MESSAGE(r->out.find("\n 1. ") != std::string::npos, r->out);
  const auto top = r->out.find("\n 1. ");
  CHECK_MESSAGE(r->out.find(expect_cause, top) < r->out.find("(rule ", top), r->out.substr(top, 400));
  std::ifstream in(bundle + "/repro.sh");
  script.assign(std::istreambuf_iterator<char>(in), {});
  const std::string out_dir = dir.dir() + "/streams";
  fs::create_directories(out_dir);
  auto rr = net::run_command({"/usr/bin/env", "OUT=" + out_dir, "sh", bundle + "/repro.sh"}, 120s);
  REQUIRE(rr.ok());
  CHECK_MESSAGE(rr->exit_code == 0, rr->out << rr->err);
  MESSAGE("repro.sh printed:\n" << rr->out);
  std::vector<ReproLine> lines;
  const std::regex line(R"((.+): first content after (-?\d+) ms \(run: (\d+) ms, [-+]\d+ %\); stream in (\S+))");
  std::istringstream text(rr->out);
  for (std::string l; std::getline(text, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) lines.push_back({m[1], std::stod(m[2]), std::stod(m[3]), m[4]});
  }
  for (const auto& l : lines) {
    CHECK(fs::file_size(l.stream) > 0);  // the raw stream went to its file, not the terminal
    CHECK(rr->out.find("data:") == std::string::npos);
  }
  return lines;
}

}  // namespace

TEST_CASE("repro.sh: a planted cold start is sent again after the same idle gap, and its first content comes within 10 % of the run's") {
  std::mt19937 rng(20261205);
  const double penalty = std::uniform_real_distribution<double>(1500, 3000)(rng);
  CAPTURE(penalty);
  std::ostringstream scenario;
  scenario << R"({"models": {"Llama-3.1-8B-Instruct": {"overhead_ms": 30, "decode_ms_per_token": 8},)"
           << R"("Llama-3.1-70B-Instruct": {"overhead_ms": 60, "decode_ms_per_token": 20, "cold_start": {"idle_s": 2, "penalty_ms": )"
           << penalty << "}}}}";
  std::string script;
  const auto lines = run_and_repro(scenario.str(), "cold_start", script);
  CHECK(script.find("the top finding (cold_start") != std::string::npos);
  CHECK(script.find("INFDOCTOR_TEST_NO_SUCH_KEY") != std::string::npos);
  const auto cold = std::find_if(lines.begin(), lines.end(), [](const ReproLine& l) { return l.what.find("idle") != std::string::npos; });
  REQUIRE(cold != lines.end());
  CHECK(cold->run_ms > penalty);
  CHECK(cold->ms == doctest::Approx(cold->run_ms).epsilon(0.10));
  const auto warm = std::find_if(lines.begin(), lines.end(), [](const ReproLine& l) { return l.what.find("warm)") != std::string::npos; });
  REQUIRE(warm != lines.end());
  CHECK(warm->ms < cold->ms / 3);  // the contrast the finding is about
}

TEST_CASE("repro.sh: a planted slow prefill is sent again at the sweep's shortest and longest prompts, the longest within 10 % of the run's") {
  std::mt19937 rng(20261206);
  const double per_token = std::uniform_real_distribution<double>(0.8, 1.5)(rng);
  CAPTURE(per_token);
  std::ostringstream scenario;
  scenario << R"({"models": {"Llama-3.1-8B-Instruct": {"overhead_ms": 30, "decode_ms_per_token": 8, "prefill_ms_per_token": 0.05},)"
           << R"("Llama-3.1-70B-Instruct": {"overhead_ms": 60, "decode_ms_per_token": 20, "prefill_ms_per_token": )" << per_token
           << "}}}";
  std::string script;
  const auto lines = run_and_repro(scenario.str(), "prefill_bound", script);
  REQUIRE(lines.size() == 2);
  const ReproLine& longest = lines.back();
  CHECK(longest.what.find("prompt tokens") != std::string::npos);
  CHECK(longest.run_ms > 1000);
  CHECK(longest.ms == doctest::Approx(longest.run_ms).epsilon(0.10));
  CHECK(lines.front().ms < longest.ms / 2);
}

}  // namespace infdoctor
