// A client host with no CPU free for infdoctor: a real-time task on infdoctor's CPU that takes it
// for a planted stretch every 100 ms, as a CPU quota throttles a container or a busy neighbour
// holds a core. The run's own watch thread measures the stall and the diagnosis says its timings
// read high; the same run on a free CPU says nothing. Needs root (SCHED_FIFO) and two CPUs; the
// tests run alone (timing_tests), so the task steals from nobody else.
#include <doctest/doctest.h>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "run/wake_watch.h"
#include "support/fake_process.h"
#include "support/results.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

// The two CPUs the test uses: the first for itself and the fake, the second for what is starved.
std::optional<std::pair<int, int>> two_cpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

// The CPUs this thread may run on, given back when the test ends.
class KeepAffinity {
 public:
  KeepAffinity() { ::sched_getaffinity(0, sizeof set_, &set_); }
  ~KeepAffinity() { ::sched_setaffinity(0, sizeof set_, &set_); }

 private:
  cpu_set_t set_{};
};

double now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// A SCHED_FIFO process on `cpu` that spins `spin_ms` of every 100 ms, for at most `for_s`; ended
// by its PID with the object.
class Staller {
 public:
  Staller(int cpu, double spin_ms, double for_s) {
    int ready[2];
    if (::pipe(ready) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls from here
      ::close(ready[0]);
      pin_self(cpu);
      sched_param p{};
      p.sched_priority = 1;
      const char ok = ::sched_setscheduler(0, SCHED_FIFO, &p) == 0 ? 1 : 0;
      (void)!::write(ready[1], &ok, 1);
      if (!ok) ::_exit(3);
      const double end = now_ms() + for_s * 1000;
      for (double start = now_ms(); start < end; start += 100) {
        while (now_ms() < start + spin_ms) {
        }
        timespec next{};
        const double at = start + 100;
        next.tv_sec = static_cast<time_t>(at / 1000);
        next.tv_nsec = static_cast<long>((at - static_cast<double>(next.tv_sec) * 1000) * 1e6);
        ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    char ok = 0;
    running_ = pid_ > 0 && ::read(ready[0], &ok, 1) == 1 && ok == 1;
    ::close(ready[0]);
  }
  ~Staller() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  bool running() const { return running_; }

 private:
  pid_t pid_ = -1;
  bool running_ = false;
};

// The reason the test cannot run here, or nothing.
std::optional<std::string> unavailable() {
  if (::geteuid() != 0) return "needs root for a SCHED_FIFO task";
  const auto cpus = two_cpus();
  if (!cpus) return "needs two CPUs";
  if (!Staller(cpus->second, 0, 0).running()) return "this host refuses a SCHED_FIFO task (no CAP_SYS_NICE, or no real-time time)";
  return std::nullopt;
}

double run_metric(const nlohmann::json& j, const std::string& name) {
  const auto& m = j["run"]["metrics"];
  REQUIRE_MESSAGE(m.contains(name), name << " not in the run's metrics");
  return m[name].get<double>();
}

}  // namespace

TEST_CASE("wake watch: a planted stall on its CPU is how late it wakes, and a free CPU wakes it on time") {
  if (const auto why = unavailable()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  const auto [own, starved] = *two_cpus();
  const KeepAffinity keep;
  const double spin = std::uniform_real_distribution<double>(15, 40)(test::rng());
  MESSAGE("planted: a real-time task takes CPU " << starved << " for " << spin << " ms of every 100 ms");
  auto measure = [&](bool stall) {
    std::optional<Staller> staller;
    if (stall) {
      staller.emplace(starved, spin, 10.0);
      REQUIRE(staller->running());
    }
    pin_self(starved);  // the watch thread takes its creator's CPU
    run::WakeWatch watch;
    pin_self(own);
    ::usleep(3'000'000);
    return watch.stop();
  };
  const auto quiet = measure(false);
  const auto stalled = measure(true);
  MESSAGE("late p50/p99/max: free " << *quiet.p50 << " / " << *quiet.p99 << " / " << *quiet.max << " ms; stalled "
                                    << *stalled.p50 << " / " << *stalled.p99 << " / " << *stalled.max << " ms over "
                                    << stalled.count << " wakes");
  // 3 s at one wake every 10 ms on average, fewer when wakes come late (each late wake is one).
  CHECK(stalled.count >= 100);
  CHECK(stalled.count <= 400);
  // A wake due during the stall comes when it ends: up to the stall late, the worst near it.
  CHECK(*stalled.p99 >= 0.7 * spin);
  CHECK(*stalled.max <= spin + 15);
  CHECK(*quiet.p99 < 0.25 * spin);
}

TEST_CASE("run: a client host with no CPU free for infdoctor is a note that its timings read high, and a free one is not") {
  if (const auto why = unavailable()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  const auto [own, starved] = *two_cpus();
  const KeepAffinity keep;
  pin_self(own);  // the fake's threads take the test's CPU
  const double spin = std::uniform_real_distribution<double>(20, 40)(test::rng());
  auto server = test::start_fake(R"({"models": {"Llama-3.1-70B-Instruct": {"overhead_ms": 90, "decode_ms_per_token": 6},
                                                "Llama-3.1-8B-Instruct": {"overhead_ms": 40, "decode_ms_per_token": 2}}})");
  auto run = [&](bool stall) {
    std::optional<Staller> staller;
    if (stall) {
      staller.emplace(starved, spin, 60.0);
      REQUIRE(staller->running());
    }
    std::vector<std::string> argv = {"taskset", "-c", std::to_string(starved), test::infdoctor_bin(), "run", "--base-url",
                                     server->base_url(), "--model", "Llama-3.1-70B-Instruct", "--small-model",
                                     "Llama-3.1-8B-Instruct", "--checks", "baseline", "--json", "-"};
    auto r = net::run_command(argv, std::chrono::seconds(90));
    REQUIRE(r.ok());
    REQUIRE_FALSE(r->timed_out);
    auto j = nlohmann::json::parse(r->out, nullptr, false);
    REQUIRE_MESSAGE(!j.is_discarded(), r->out << r->err);
    return j;
  };
  const auto free_run = run(false);
  const auto starved_run = run(true);
  const double ttft = starved_run["checks"]["baseline"]["metrics"]["ttft_p50_ms"].get<double>();
  MESSAGE("planted " << spin << " ms of every 100 ms; late p99: free " << run_metric(free_run, "client_wake_late_p99_ms")
                     << " ms, starved " << run_metric(starved_run, "client_wake_late_p99_ms") << " ms (max "
                     << run_metric(starved_run, "client_wake_late_max_ms") << "), TTFT p50 " << ttft << " ms; found: "
                     << test::findings_of(starved_run));
  CHECK(run_metric(starved_run, "client_wakes_count") >= 100);
  CHECK(run_metric(starved_run, "client_wake_late_p99_ms") >= 0.7 * spin);
  CHECK(run_metric(starved_run, "client_wake_late_max_ms") <= spin + 15);
  const auto* f = test::finding(starved_run, "client.cpu_starved");
  REQUIRE(f != nullptr);
  CHECK((*f)["severity"] == "info");
  CHECK((*f)["scope"] == "client_path");
  CHECK(run_metric(free_run, "client_wake_late_p99_ms") < 0.25 * spin);
  CHECK(test::finding(free_run, "client.cpu_starved") == nullptr);
}

}  // namespace infdoctor
