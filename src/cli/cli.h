#pragma once
// The command line: one CLI11 app, one file per subcommand. Exit codes (DESIGN.md): 0 healthy,
// 1 degraded, 2 critical, 3 could not run.

#include <string>

#include "core/exit_code.h"

namespace infdoctor::cli {

using core::kExitCouldNotRun;
using core::kExitCritical;
using core::kExitDegraded;
using core::kExitOk;

int run(int argc, char** argv);

// Prints "infdoctor: error: MESSAGE" and the detail's lines indented, scrubbed of secrets, and
// returns kExitCouldNotRun: what a command does when its configuration is wrong.
int fail_config(const std::string& message, const std::string& detail = {});

}  // namespace infdoctor::cli
