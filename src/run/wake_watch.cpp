#include "run/wake_watch.h"

#include <time.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace infdoctor::run {
namespace {

timespec add_ns(timespec t, long ns) {
  t.tv_nsec += ns;
  while (t.tv_nsec >= 1'000'000'000L) {
    t.tv_nsec -= 1'000'000'000L;
    ++t.tv_sec;
  }
  return t;
}

double ms_between(const timespec& from, const timespec& to) {
  return static_cast<double>(to.tv_sec - from.tv_sec) * 1e3 + static_cast<double>(to.tv_nsec - from.tv_nsec) / 1e6;
}

}  // namespace

WakeWatch::WakeWatch() {
  late_ms_.reserve(1024);
  try {
    thread_ = std::thread([this] { watch(); });
  } catch (const std::system_error&) {
    // No thread to spare: the run goes on unwatched, and says so by a count of 0.
  }
}

WakeWatch::~WakeWatch() { stop(); }

void WakeWatch::watch() {
  const long period_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(kPeriod).count();
  // Each wait is drawn from half a period to one and a half: waits of one fixed length lock onto
  // a stall that comes with a period of their multiple (a CFS quota's 100 ms) and read only whole
  // waits of it; drawn ones meet each moment of it alike.
  std::uint64_t draw = 0x9E3779B97F4A7C15ull;
  const auto next_wait_ns = [&] {
    draw ^= draw << 13;
    draw ^= draw >> 7;
    draw ^= draw << 17;
    return period_ns / 2 + static_cast<long>(draw % static_cast<std::uint64_t>(period_ns));
  };
  timespec due{};
  ::clock_gettime(CLOCK_MONOTONIC, &due);
  while (!stopping_.load(std::memory_order_relaxed) && late_ms_.size() < kMaxWakes) {
    due = add_ns(due, next_wait_ns());
    int rc;
    while ((rc = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr)) == EINTR)
      if (stopping_.load(std::memory_order_relaxed)) return;  // a signal: asked again, or stopping
    if (rc != 0) return;  // a clock that cannot be slept on: what was read so far stands
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    const double late = ms_between(due, now);
    late_ms_.push_back(late);
    // A wake later than a period is one wake, not many: the next is due a wait after it came.
    if (late > static_cast<double>(period_ns) / 1e6) due = now;
  }
}

stats::Summary WakeWatch::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  return stats::summarize(late_ms_);
}

}  // namespace infdoctor::run
