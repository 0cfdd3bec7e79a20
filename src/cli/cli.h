#pragma once
// The command line: one CLI11 app, one file per subcommand. Exit codes (DESIGN.md): 0 healthy,
// 1 degraded, 2 critical, 3 could not run, 64 usage error.

#include <string>

#include <nlohmann/json.hpp>

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

// A command's positional argument is missing: its message, and when --json took a word as its FILE,
// that this is why ("infdoctor history runs.db --json", not "--json runs.db").
std::string missing_before_json(const std::string& what, const std::string& json);
// Writes `j` where --json said ("-": stdout; else the file, replaced whole), scrubbed of secrets.
// kExitOk, or kExitCouldNotRun after naming the file that could not be written.
int emit_json(const std::string& where, const nlohmann::json& j);

}  // namespace infdoctor::cli
