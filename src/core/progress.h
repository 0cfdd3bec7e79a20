#pragma once
// Where a run is, on stderr, in every mode: on a terminal one live line (check N/M, elapsed
// time, the step); in a pipe, a log or cron one timestamped line per step; nothing with --quiet.
// stdout carries only the report.
#include <cstdio>
#include <string>

#include "core/clock.h"

namespace infdoctor::core {

class Progress {
 public:
  enum class Mode { Off, Live, Lines };
  // Live when `out` is a terminal, else Lines; Off when quiet.
  static Mode mode_for(std::FILE* out, bool quiet);

  explicit Progress(Mode mode, std::FILE* out = stderr);
  Mode mode() const { return mode_; }
  // The run starts its n-th check of m.
  void check(int n, int m, const std::string& id);
  // What the check does now ("coldstart: idle 5 s before the next request").
  void step(const std::string& text);
  // Clears the live line before the report follows.
  void done();

 private:
  Mode mode_;
  std::FILE* out_;
  SteadyTime started_;
  std::string where_;  // "[3/8]"
  bool live_shown_ = false;
};

}  // namespace infdoctor::core
