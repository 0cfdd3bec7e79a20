// Ctrl-C and SIGTERM in the middle of a run: the request in flight is cancelled, the bundle is
// finished with what was measured and marked partial, the exit code is 3. (A second SIGINT's
// immediate exit is tested in tests/src/core/interrupt_test.cpp, where delivery is synchronous.)
#include <doctest/doctest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support/fake_process.h"
#include "support/spawn.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCanary = "sk-canary-9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every model request takes 5 s to its first token: a signal always finds one in flight.
std::string slow_scenario() {
  return R"({"api_key": ")" + kCanary + R"(", "models": {"slow": {"overhead_ms": 5000, "decode_ms_per_token": 5}}})";
}

struct Started {
  std::unique_ptr<fake::Server> server;
  std::unique_ptr<test::Child> child;
  fs::path dir;
};

// Starts `infdoctor run` against the slow provider and returns once its first model request is
// in flight at the server.
Started start_run(const std::string& name) {
  Started s;
  s.dir = fs::temp_directory_path() / ("infdoctor-interrupt-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(s.dir);
  fs::create_directories(s.dir);
  s.server = test::start_fake(slow_scenario());
  s.child = std::make_unique<test::Child>(
      std::vector<std::string>{test::infdoctor_bin(), "run", "--base-url", s.server->base_url(), "--model", "slow",
                               "--quick", "--bundle", (s.dir / "bundle").string()},
      std::vector<std::string>{"OPENAI_API_KEY=" + kCanary}, (s.dir / "stdout").string(), (s.dir / "stderr").string());
  REQUIRE(s.child->ok());
  const auto give_up = std::chrono::steady_clock::now() + 30s;
  while (s.server->served().empty() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(10ms);
  REQUIRE_MESSAGE(!s.server->served().empty(), "no model request reached the server in 30 s");
  std::this_thread::sleep_for(200ms);  // well inside the 5 s the request takes
  return s;
}

void check_partial_bundle(const fs::path& dir, const std::string& signal_name) {
  const fs::path bundle = dir / "bundle";
  REQUIRE(fs::exists(bundle / "results.json"));
  CHECK(fs::exists(bundle / "manifest.json"));
  CHECK(fs::exists(bundle / "report.html"));
  const auto j = nlohmann::json::parse(slurp(bundle / "results.json"));
  CHECK(j["partial"] == true);
  CHECK(j["interrupted_by"] == signal_name);
  CHECK(j["bundle"]["partial"] == true);
  // The path and transport checks wait for the cold-start check's idle gaps (the host is one
  // address), which the signal came before: they never started, and say so.
  for (const char* id : {"path", "transport"}) {
    CAPTURE(id);
    CHECK(j["checks"][id]["status"] == "skipped");
    CHECK(j["checks"][id]["error"] == "interrupted");
  }
  // The check in flight says it was interrupted; the ones after it never started.
  CHECK(j["checks"]["coldstart"]["error"] == "interrupted");
  CHECK(j["checks"]["sweep"]["status"] == "skipped");
  CHECK(j["checks"]["sweep"]["error"] == "interrupted");
  const std::string samples = slurp(bundle / "samples.jsonl");
  CHECK(samples.find("\"error\":\"interrupted\"") != std::string::npos);
  CHECK(slurp(bundle / "summary.md").find("The run was interrupted") != std::string::npos);
  CHECK(slurp(dir / "stdout").find("PARTIAL: the run was interrupted (" + signal_name + ")") != std::string::npos);
  CHECK(slurp(dir / "stderr").find("interrupted (" + signal_name + ")") != std::string::npos);
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) CHECK_MESSAGE(slurp(e.path()).find(kCanary) == std::string::npos, e.path().string());
}

TEST_CASE("interrupt: SIGINT mid-request cancels it and finishes a partial bundle, exit 3") {
  auto s = start_run("int");
  const auto t0 = std::chrono::steady_clock::now();
  s.child->send(SIGINT);
  const auto ex = s.child->wait(20s);
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("SIGINT to exit: " << took_s << " s (the request in flight had about 4.8 s to go)");
  CHECK_FALSE(ex.timed_out);
  CHECK(ex.exit_code == 3);
  CHECK(took_s < 2.0);  // the 5 s request was cancelled, not waited out
  check_partial_bundle(s.dir, "SIGINT");
  fs::remove_all(s.dir);
}

TEST_CASE("interrupt: SIGTERM does the same") {
  auto s = start_run("term");
  s.child->send(SIGTERM);
  const auto ex = s.child->wait(20s);
  CHECK_FALSE(ex.timed_out);
  CHECK(ex.exit_code == 3);
  check_partial_bundle(s.dir, "SIGTERM");
  fs::remove_all(s.dir);
}

}  // namespace
}  // namespace infdoctor
