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
// True once SIGINT or SIGTERM arrived.
bool interrupted();
// The signal that interrupted the run (SIGINT, SIGTERM), 0 when none.
int interrupt_signal();
// "SIGINT", "SIGTERM" or "" : for reports.
const char* interrupt_name();
// The error of whatever the interrupt cut short: "interrupted (SIGINT)".
Error interrupted_error();
// Sleeps until `t` and returns true, or returns false as soon as the run is interrupted.
bool sleep_until(SteadyTime t);

}  // namespace infdoctor::core
