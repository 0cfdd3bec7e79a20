#pragma once
// When each of the exporter's targets runs next, and what its hour's request budget has left: the
// targets' states under one lock, the loop that runs the earliest due target (one run at a time
// across the exporter), and what each run and probe spent. What a run does is the caller's.
//
// Each target runs in its own slot of its interval, at a phase drawn from a hash of its name (as
// Prometheus spreads its scrapes): a thousand targets started together run their first runs one
// after another at once, and from then on each comes due at its own moment of the interval, not
// all at its top.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "report/prometheus.h"
#include "serve/bundle_store.h"
#include "serve/measure.h"
#include "serve/targets.h"

namespace infdoctor::serve {

// One target's schedule, spending and latest results. `busy` is held by a run or a probe against
// the target (never two at once); the rest is read and written under the schedule's lock.
struct TargetState {
  using Clock = std::chrono::steady_clock;
  ServeTarget target;
  std::timed_mutex busy;
  std::shared_ptr<const results::RunResult> last;
  int exit_code = 0;
  double run_seconds = 0, finished_at = 0;
  report::Tally totals;
  std::deque<std::pair<Clock::time_point, int>> spent;  // model requests sent, the last hour's
  Clock::time_point next_due{};
  // Changes whenever a result becomes the target's latest, and differs between any two targets'
  // states: whether what /metrics rendered of the target is still its latest.
  std::uint64_t version = 0;
  bool running = false;
  std::map<std::string, double> runs;  // outcome -> count
  BundleHistory bundles;  // what its last runs told, for which bundles to keep: the scheduler's alone, under `busy`

  int spent_last_hour(Clock::time_point now);
};

class Schedule {
 public:
  using Clock = TargetState::Clock;

  // Replaces the targets: one kept by name and text keeps its results and spending; a changed one
  // runs anew, and keeps the spending of its name (the budget is the target's, whatever it measures).
  void set_targets(std::vector<ServeTarget> targets);
  // Runs `run` on the earliest due target that is not running, one at a time: a new target at
  // once, then each in its slot one interval after the last (after an overrun, its first slot half
  // an interval past the run's end), until stop() or until the process is asked to stop
  // (core::stop_requested()): from then on it starts nothing.
  void loop(const std::function<void(TargetState&)>& run);
  void stop();
  bool stopping() const;

  // The target named so, or null; every target's name.
  std::shared_ptr<TargetState> find(const std::string& name) const;
  std::vector<std::string> names() const;
  // A copy of the target as it stands, and what its hour's budget has left now.
  ServeTarget target_of(const TargetState& st) const;
  int budget_left(TargetState& st) const;
  // Records what a run or probe spent; a scheduled run's result becomes the target's latest.
  void keep(TargetState& st, const Outcome& o, bool latest);
  // Counts a scheduled run by outcome: completed, failed, skipped_budget.
  void count(TargetState& st, const std::string& outcome);
  // `f` on every target, in name order, under the lock.
  void each(const std::function<void(TargetState&)>& f) const;
  // `f` on one target, under the lock.
  void with(TargetState& st, const std::function<void(TargetState&)>& f) const;

 private:
  std::shared_ptr<TargetState> next_due() const;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, std::shared_ptr<TargetState>> states_;
  std::uint64_t versions_ = 0;
  bool stopping_ = false;
};

// The first time at or after `t` in the slots of a target named `name` that runs every `interval`.
Schedule::Clock::time_point slot_at_or_after(Schedule::Clock::time_point t, const std::string& name,
                                             std::chrono::seconds interval);

}  // namespace infdoctor::serve
