#pragma once
// Time helpers. Intervals use steady_clock and live as microseconds until they are printed;
// system_clock is only for wall-clock stamps that go into reports.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace infdoctor::core {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;
using Micros = std::chrono::microseconds;

inline Micros elapsed_us(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<Micros>(to - from);
}
inline double to_ms(Micros us) { return static_cast<double>(us.count()) / 1000.0; }

// The run's sense of time, a port so that tests can run a check's waits on a fake clock
// (tests/support/fake_clock.h) instead of sleeping through them.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual SteadyTime now() const = 0;
  // Waits until `t`; false as soon as the run is interrupted (core/interrupt.h).
  virtual bool sleep_until(SteadyTime t) = 0;
};
// steady_clock, and sleeps that a SIGINT or SIGTERM cuts short.
Clock& real_clock();

// RFC 3339 UTC with microseconds: 2026-12-02T14:41:07.123456Z.
std::string rfc3339_utc(std::chrono::system_clock::time_point t);
// Now, in seconds since the Unix epoch (Prometheus's timestamps).
inline double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}
// Seconds since the epoch of a stamp rfc3339_utc wrote (a 'Z' stamp, fraction optional); nothing
// for any other text.
std::optional<double> parse_rfc3339_utc(const std::string& stamp);

}  // namespace infdoctor::core
