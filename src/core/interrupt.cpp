#include "core/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

namespace infdoctor::core {
namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_silent{false};
std::atomic<bool> g_deferred{false};
std::atomic<int> g_requested{0};  // the signal that asked to stop, under defer_interrupts()
static_assert(std::atomic<int>::is_always_lock_free, "the handler stores into this atomic");

extern "C" void on_signal(int sig) {
  if (g_deferred.load()) {
    int none = 0;
    if (g_requested.compare_exchange_strong(none, sig)) return;  // the first only asks to stop
  }
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) {
    if (g_silent.load()) return;
    static const char kMsg[] = "\ninfdoctor: interrupted: finishing the report with what was measured "
                               "(Ctrl-C again to quit at once)\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
    return;
  }
  if (sig == SIGINT) ::_exit(130);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and its loop looks at the flag
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

void silence_interrupt_message() { g_silent = true; }

void defer_interrupts() { g_deferred = true; }

int stop_requested() {
  const int asked = g_requested.load(std::memory_order_relaxed);
  return asked != 0 ? asked : g_signal.load(std::memory_order_relaxed);
}

void interrupt_now() {
  const int asked = g_requested.load();
  int expected = 0;
  g_signal.compare_exchange_strong(expected, asked != 0 ? asked : SIGTERM);
}

bool interrupted() { return g_signal.load(std::memory_order_relaxed) != 0; }

int interrupt_signal() { return g_signal.load(std::memory_order_relaxed); }

const char* interrupt_name() {
  switch (stop_requested()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}

Error interrupted_error() {
  return make_error(ErrorCode::Interrupted, std::string("interrupted (") + interrupt_name() + ")");
}

bool sleep_until(SteadyTime t) {
  constexpr auto kSlice = std::chrono::milliseconds(20);
  for (;;) {
    if (interrupted()) return false;
    const auto now = SteadyClock::now();
    if (now >= t) return true;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(t - now, kSlice));
  }
}

}  // namespace infdoctor::core
