// The interrupt handlers in a child process, with signals raised synchronously: the first SIGINT
// only sets the flag, a second one ends the process with 130; SIGTERM never ends it by itself;
// deferred (the exporter), the first signal only asks to stop.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "core/interrupt.h"

namespace infdoctor::core {
namespace {

// Runs `body` in a forked child and returns its exit status (-signal when killed).
template <typename F>
int in_child(F body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::_exit(body());
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

TEST_CASE("interrupt: the first SIGINT sets the flag and the process goes on") {
  const int code = in_child([] {
    install_interrupt_handlers();
    if (interrupted()) return 10;
    ::raise(SIGINT);
    if (!interrupted() || interrupt_signal() != SIGINT) return 11;
    if (sleep_until(SteadyClock::now() + std::chrono::seconds(5))) return 12;  // returns at once, false
    return 0;
  });
  CHECK(code == 0);
}

TEST_CASE("interrupt: a second SIGINT exits at once with 130") {
  const int code = in_child([] {
    install_interrupt_handlers();
    ::raise(SIGINT);
    ::raise(SIGINT);
    return 0;  // not reached
  });
  CHECK(code == 130);
}

TEST_CASE("interrupt: SIGTERM sets the flag, a SIGTERM after it does not kill") {
  const int code = in_child([] {
    install_interrupt_handlers();
    ::raise(SIGTERM);
    if (std::string(interrupt_name()) != "SIGTERM") return 11;
    ::raise(SIGTERM);
    return 0;
  });
  CHECK(code == 0);
}

TEST_CASE("interrupt: deferred, the first SIGTERM only asks to stop, and interrupt_now or a second signal interrupts") {
  CHECK(in_child([] {
          defer_interrupts();
          install_interrupt_handlers();
          ::raise(SIGTERM);
          if (stop_requested() != SIGTERM || interrupted()) return 11;  // asked, nothing cut yet
          if (std::string(interrupt_name()) != "SIGTERM") return 12;
          interrupt_now();
          if (!interrupted() || interrupt_signal() != SIGTERM) return 13;
          if (interrupted_error().message != "interrupted (SIGTERM)") return 14;
          return 0;
        }) == 0);
  CHECK(in_child([] {
          defer_interrupts();
          install_interrupt_handlers();
          ::raise(SIGINT);
          if (interrupted()) return 21;
          ::raise(SIGINT);  // the operator insists: what is in flight is cut now
          if (!interrupted() || interrupt_signal() != SIGINT) return 22;
          return 0;
        }) == 0);
}

TEST_CASE("interrupt: without handlers, sleep_until sleeps the whole time") {
  const auto t0 = SteadyClock::now();
  CHECK(sleep_until(t0 + std::chrono::milliseconds(30)));
  CHECK(SteadyClock::now() - t0 >= std::chrono::milliseconds(30));
}

}  // namespace
}  // namespace infdoctor::core
