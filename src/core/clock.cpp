#include "core/clock.h"

#include <cstdio>
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

std::optional<double> parse_rfc3339_utc(const std::string& stamp) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(stamp.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 || consumed != 19)
    return std::nullopt;
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  double frac = 0;
  std::size_t i = 19;
  if (i < stamp.size() && stamp[i] == '.') {
    double scale = 0.1;
    for (++i; i < stamp.size() && stamp[i] >= '0' && stamp[i] <= '9'; ++i, scale /= 10) frac += (stamp[i] - '0') * scale;
  }
  if (i + 1 != stamp.size() || stamp[i] != 'Z') return std::nullopt;
  return static_cast<double>(timegm(&tm)) + frac;
}

}  // namespace infdoctor::core
