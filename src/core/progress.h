#pragma once
// Where a run is, on stderr, in every mode: on a terminal one live line (check N/M, elapsed
// time, the step, the countdown of a wait), redrawn every second; in a pipe, a log or cron one
// timestamped line per step; nothing with --quiet. stdout carries only the report.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/clock.h"

namespace infdoctor::core {

class Progress {
 public:
  enum class Mode { Off, Live, Lines };
  // Live when `out` is a terminal, else Lines; Off when quiet.
  static Mode mode_for(std::FILE* out, bool quiet);

  explicit Progress(Mode mode, std::FILE* out = stderr);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  Mode mode() const { return mode_; }
  // The run starts its n-th check of m.
  void check(int n, int m, const std::string& id);
  // What the check does now ("coldstart: idle 5 s before the next request").
  void step(const std::string& text);
  // The current step waits until `until`: the live line counts down to it.
  void wait_until(SteadyTime until);
  // A line that stays (--verbose: one per request), above the live line.
  void note(const std::string& text);
  // Clears the live line before the report follows.
  void done();

 private:
  void draw_locked();  // the live line, or one timestamped line
  void tick();         // the live line's redraw, once a second

  Mode mode_;
  std::FILE* out_;
  SteadyTime started_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string where_;  // "[3/8]"
  std::string text_;
  std::optional<SteadyTime> until_;
  bool live_shown_ = false;
  bool stopping_ = false;
  std::thread ticker_;
};

}  // namespace infdoctor::core
