#pragma once
// Ctrl-C and SIGTERM during a run. The first SIGINT or SIGTERM asks the run to stop: requests in
// flight are cancelled, no check starts, and what was measured is reported and saved, marked
// partial. A second SIGINT ends the process at once (exit 130).
#include "core/clock.h"
#include "core/result.h"

namespace infdoctor::core {

// Installs the handlers (idempotent).
void install_interrupt_handlers();
// The handler writes no line of its own (the exporter's logs are JSON lines); for the process's life.
void silence_interrupt_message();
// For a process that stops in its own time (the exporter lets the run in flight finish): the first
// SIGINT or SIGTERM only asks it to stop (stop_requested()) and interrupts nothing; interrupt_now(),
// or a second signal, interrupts as the first signal otherwise would. For the process's life.
void defer_interrupts();
// The signal that asked the process to stop (or interrupted it), 0 when none.
int stop_requested();
// Interrupts now, in the name of the signal that asked to stop (SIGTERM when none did).
void interrupt_now();
// True once SIGINT or SIGTERM arrived (under defer_interrupts(), once the process is interrupted).
bool interrupted();
// The signal that interrupted the run (SIGINT, SIGTERM), 0 when none.
int interrupt_signal();
// "SIGINT", "SIGTERM" or "" : for reports (the signal that asked to stop, under defer_interrupts()).
const char* interrupt_name();
// The error of whatever the interrupt cut short: "interrupted (SIGINT)".
Error interrupted_error();
// Sleeps until `t` and returns true, or returns false as soon as the run is interrupted.
bool sleep_until(SteadyTime t);

}  // namespace infdoctor::core
