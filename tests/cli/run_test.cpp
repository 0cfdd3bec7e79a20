// `infdoctor run` as a user runs it: the real binary against a fake provider on loopback.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

net::CommandResult run(std::vector<std::string> args, std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {test::infdoctor_bin(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, timeout);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

const char* kHealthy = R"({"models": {
    "big": {"overhead_ms": 60, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 8, "jitter_ms": 3},
    "small": {"overhead_ms": 30, "decode_ms_per_token": 3}}})";

}  // namespace

TEST_CASE("run --quick: every check of the checklist against a healthy provider within 60 s") {
  auto server = test::start_fake(kHealthy);
  const auto t0 = core::SteadyClock::now();
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--small-model", "small", "--quick", "--json", "-"});
  const double took_s = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now())) / 1000.0;
  CHECK(r.exit_code == 0);
  CHECK(took_s < 60.0);
  MESSAGE("run --quick took " << took_s << " s");
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["schema"] == "infdoctor.results/1");
  for (const char* id : {"path", "transport", "coldstart", "baseline", "sweep", "serialization", "concurrency"}) {
    CAPTURE(id);
    CHECK(j["checks"][id]["status"] == "ok");
  }
  CHECK(j["checks"]["dns"]["status"] == "skipped");  // an IP address
  CHECK_FALSE(j["checks"].contains("soak"));         // only with --soak-minutes
  CHECK(j["checks"]["sweep"]["metrics"]["decode_ms_per_token"].get<double>() == doctest::Approx(8).epsilon(0.1));
  CHECK(r.err.find("plan: at most") != std::string::npos);
}

TEST_CASE("run --max-requests is never exceeded") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "baseline,sweep,concurrency",
                      "--max-requests", "7", "--json", "-"});
  const auto j = nlohmann::json::parse(r.out);
  CHECK(server->served().size() <= 7);
  CHECK(r.err.find("needs more requests than the budget") != std::string::npos);
  CHECK(j["checks"]["concurrency"]["error"] == "budget_exhausted");
}

TEST_CASE("run: the text report has a row per check and the tables") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "transport,concurrency",
                      "--concurrency", "1,2,4"});
  CHECK(r.exit_code == 0);
  for (const char* want : {"transport ", "concurrency ", "throughput scaling", "concurrency: per level", "tokens/s"})
    CHECK_MESSAGE(r.out.find(want) != std::string::npos, want);
}

TEST_CASE("run: configuration errors are all reported before anything is sent") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "dns,bogus", "--set",
                      "sweep.repeats=0", "--set", "nothing=1", "--idle-gaps", "5,1"});
  CHECK(r.exit_code == 3);
  for (const char* want : {"unknown check 'bogus'", "sweep.repeats", "'nothing' names no check", "coldstart.idle_gaps"})
    CHECK_MESSAGE(r.err.find(want) != std::string::npos, want);
  CHECK(server->served().empty());
}

}  // namespace infdoctor
