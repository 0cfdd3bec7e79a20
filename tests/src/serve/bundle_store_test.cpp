// Which of a probe target's bundles are worth keeping, held without waiting: two hours of runs a
// minute apart, the hour of --probe-bundle-every's default passing as numbers.
#include <doctest/doctest.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// How many kept bundles a target's directory held at most, replayed from what inotify saw happen
// in it: a bundle's directory appearing (renamed in) or going (removed).
struct BundleCounter {
  int fd = ::inotify_init1(IN_NONBLOCK);
  int now = 0, most = 0;
  explicit BundleCounter(const std::string& dir) {
    ::inotify_add_watch(fd, dir.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM);
  }
  ~BundleCounter() { ::close(fd); }
  void drain() {
    alignas(inotify_event) char buf[64 * 1024];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
      for (char* p = buf; p < buf + n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + e->len;
        const std::string name = e->len > 0 ? e->name : "";
        if (!(e->mask & IN_ISDIR) || name.empty() || name[0] == '.') continue;  // a note, or one being written
        now += (e->mask & (IN_CREATE | IN_MOVED_TO)) ? 1 : -1;
        most = std::max(most, now);
      }
  }
};

TEST_CASE("serve: a target never has more than --keep-bundles bundles on disk, not even while its newest is kept") {
  char tmpl[] = "/tmp/infdoctor-bundles-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  for (const int keep : {1, 3, 5}) {
    CAPTURE(keep);
    const std::string target = "llama-70b-" + std::to_string(keep);
    const BundleStore store(root, keep);
    const auto t0 = std::chrono::system_clock::time_point{} + std::chrono::hours(24 * 365 * 57);
    REQUIRE(store.begin(target, t0));  // makes the target's directory
    BundleCounter counter(root + "/" + target);  // the directory is empty
    REQUIRE(counter.fd >= 0);
    std::vector<std::string> written;
    for (int run = 0; run < keep + 4; ++run) {
      const auto slot = store.begin(target, t0 + std::chrono::seconds(run));
      REQUIRE(slot);
      std::filesystem::create_directories(slot->staging);
      std::ofstream(slot->staging + "/results.json") << "{}\n";
      std::string error;
      CHECK(store.finish(target, *slot, Kept{"periodic", "a test"}, error) == slot->kept);
      CHECK(error.empty());
      written.push_back(std::filesystem::path(slot->kept).filename().string());
      counter.drain();
    }
    CHECK(counter.most == keep);
    CHECK(counter.now == keep);
    // The newest are the ones kept.
    std::vector<std::string> left;
    for (const auto& e : std::filesystem::directory_iterator(root + "/" + target))
      if (e.is_directory()) left.push_back(e.path().filename().string());
    std::sort(left.begin(), left.end());
    CHECK(left == std::vector<std::string>(written.end() - keep, written.end()));
  }
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace infdoctor::serve
