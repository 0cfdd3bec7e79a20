#pragma once
// A clock that moves only when a check waits on it: sleep_until returns at once, the time advanced
// to the moment asked for. Checks' idle gaps and deadlines run in no wall time at all.
#include "core/clock.h"

namespace infdoctor::test {

class FakeClock final : public core::Clock {
 public:
  core::SteadyTime now() const override { return now_; }
  bool sleep_until(core::SteadyTime t) override {
    if (t > now_) now_ = t;
    return true;
  }
  void advance(std::chrono::microseconds d) { now_ += d; }

 private:
  core::SteadyTime now_ = core::SteadyTime{} + std::chrono::hours(1000);
};

}  // namespace infdoctor::test
