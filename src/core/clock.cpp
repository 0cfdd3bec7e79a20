#include "core/clock.h"

#include <ctime>

#include "core/interrupt.h"

namespace infdoctor::core {

namespace {
class RealClock final : public Clock {
 public:
  SteadyTime now() const override { return SteadyClock::now(); }
  bool sleep_until(SteadyTime t) override { return core::sleep_until(t); }
};
}  // namespace

Clock& real_clock() {
  static RealClock clock;
  return clock;
}

std::string rfc3339_utc(std::chrono::system_clock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%.*s.%06ldZ", static_cast<int>(n), buf, frac);
  return out;
}

}  // namespace infdoctor::core
