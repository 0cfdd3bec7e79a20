#pragma once
// How late the client host wakes infdoctor. Every timing the run takes is a thread woken by the
// kernel (a socket readable, a timer due) reading the clock; on a host with no CPU free for it (a
// CPU-limited container throttled by its quota, a build beside it, a real-time task) the thread
// runs late and the timing reads high by as much. A thread of its own asks to wake every 10 ms
// (each wait drawn from 5 to 15 ms) through the run and records how late each wake came: the same
// wait the run's timings meet, measured instead of assumed away.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "stats/summary.h"

namespace infdoctor::run {

class WakeWatch {
 public:
  static constexpr std::chrono::milliseconds kPeriod{10};  // the mean wait
  // Wakes kept at most: an hour of them; a longer run keeps its first hour's.
  static constexpr std::size_t kMaxWakes = 360'000;

  WakeWatch();  // starts watching
  ~WakeWatch();
  WakeWatch(const WakeWatch&) = delete;
  WakeWatch& operator=(const WakeWatch&) = delete;

  // Stops watching (idempotent) and summarises how late each wake came, ms.
  stats::Summary stop();

 private:
  void watch();
  std::atomic<bool> stopping_{false};
  std::vector<double> late_ms_;
  std::thread thread_;
};

}  // namespace infdoctor::run
