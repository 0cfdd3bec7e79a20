#pragma once
// Time helpers. Intervals use steady_clock and live as microseconds until they are printed;
// system_clock is only for wall-clock stamps that go into reports.
#include <chrono>
#include <cstdint>
#include <string>

namespace infdoctor::core {

using SteadyClock = std::chrono::steady_clock;
using SteadyTime = SteadyClock::time_point;
using Micros = std::chrono::microseconds;

inline Micros elapsed_us(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<Micros>(to - from);
}
inline double to_ms(Micros us) { return static_cast<double>(us.count()) / 1000.0; }

// RFC 3339 UTC with microseconds: 2026-12-02T14:41:07.123456Z.
std::string rfc3339_utc(std::chrono::system_clock::time_point t);

}  // namespace infdoctor::core
