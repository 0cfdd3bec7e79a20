#pragma once
// The command line: one CLI11 app, one file per subcommand. Exit codes (DESIGN.md): 0 healthy,
// 1 degraded, 2 critical, 3 could not run, 64 usage error.

#include <string>

#include "core/error.h"
#include "core/exit_code.h"

namespace infdoctor::cli {

using core::kExitCouldNotRun;
using core::kExitOk;
using core::kExitUsage;

int run(int argc, char** argv);

// Prints "infdoctor: error: MESSAGE" and the detail's lines indented, scrubbed of secrets, and
// returns kExitCouldNotRun: what a command does when its configuration is wrong.
int fail_config(const std::string& message, const std::string& detail = {});
// The same for a wrong command line: the message, a pointer to the command's --help, and
// kExitUsage.
int fail_usage(const std::string& message, const std::string& detail = {});
// A core error as the command's outcome: a wrong argument (InvalidArgument) is a usage error,
// anything else means the command could not run.
int fail(const core::Error& e);

}  // namespace infdoctor::cli
