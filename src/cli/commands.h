#pragma once
// Each subcommand adds itself to the app and, when chosen, sets `chosen` to its runner.
#include <functional>

#include <CLI/CLI.hpp>

namespace infdoctor::cli {

void add_probe_command(CLI::App& app, std::function<int()>& chosen);
void add_run_command(CLI::App& app, std::function<int()>& chosen);
void add_explain_command(CLI::App& app, std::function<int()>& chosen);
void add_demo_command(CLI::App& app, std::function<int()>& chosen);
void add_history_command(CLI::App& app, std::function<int()>& chosen);
void add_compare_command(CLI::App& app, std::function<int()>& chosen);

}  // namespace infdoctor::cli
