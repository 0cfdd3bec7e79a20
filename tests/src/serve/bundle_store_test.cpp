// Which of a probe target's bundles are worth keeping, held without waiting: two hours of runs a
// minute apart, the hour of --probe-bundle-every's default passing as numbers.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/exit_code.h"
#include "serve/bundle_store.h"

namespace infdoctor::serve {
namespace {

using namespace std::chrono_literals;
using Clock = BundleHistory::Clock;

results::RunResult healthy_run() { return {}; }

results::RunResult failed_run() {
  results::RunResult r;
  r.unreachable = "connect: connection refused";
  return r;
}

TEST_CASE("serve: a healthy probe target keeps its first run's bundle and then one an hour, and each failure, finding and "
          "recovery") {
  // A probe every minute for two hours, failing at minutes 30 and 31, a warning finding at 100.
  BundleHistory h;
  const Clock::time_point t0{};
  std::vector<std::pair<int, std::string>> kept;  // minute, reason
  for (int minute = 0; minute <= 120; ++minute) {
    results::RunResult r = minute == 30 || minute == 31 ? failed_run() : healthy_run();
    int exit_code = r.unreachable.empty() ? core::kExitOk : core::kExitCouldNotRun;
    if (minute == 100) {
      rules::Finding f;
      f.severity = rules::Severity::Warning;
      f.title = "Time to first token is slow";
      r.diagnosis.push_back(f);
      exit_code = core::kExitDegraded;
    }
    const auto now = t0 + std::chrono::minutes(minute);
    const auto k = probe_bundle_worth_keeping(h, r, exit_code, now, std::chrono::hours(1));
    if (k) kept.emplace_back(minute, k->reason);
    h.ran(run_failed(r, exit_code), k.has_value(), now);
  }
  const std::vector<std::pair<int, std::string>> want = {
      {0, "first"}, {30, "failure"}, {31, "failure"}, {32, "recovered"}, {92, "periodic"}, {100, "finding"}};
  CHECK(kept == want);
}

TEST_CASE("serve: a probe bundle's reason says what the run told") {
  BundleHistory h;
  const auto now = Clock::time_point{} + 10h;
  auto k = probe_bundle_worth_keeping(h, failed_run(), core::kExitCouldNotRun, now, 1h);
  REQUIRE(k);
  CHECK(k->why == "the run failed: connect: connection refused");
  h.ran(false, true, now);
  CHECK_FALSE(probe_bundle_worth_keeping(h, healthy_run(), core::kExitOk, now + 59min, 1h));
  k = probe_bundle_worth_keeping(h, healthy_run(), core::kExitOk, now + 60min, 1h);
  REQUIRE(k);
  CHECK(k->why == "no bundle of the target was kept for 1 hour");
  // An info finding is no news: a healthy endpoint gives those.
  results::RunResult info = healthy_run();
  info.diagnosis.emplace_back();
  CHECK_FALSE(probe_bundle_worth_keeping(h, info, core::kExitOk, now + 1min, 1h));
  // 0 keeps every run's.
  CHECK(probe_bundle_worth_keeping(h, healthy_run(), core::kExitOk, now, 0s));
}

}  // namespace
}  // namespace infdoctor::serve
