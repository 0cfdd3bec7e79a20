#pragma once
// Each subcommand adds itself to the app and, when chosen, sets `chosen` to its runner.
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace infdoctor::cli {

// A subcommand whose flags fill an `Options` and which, when named, runs `run(options)`.
template <class Options, class Run>
std::pair<CLI::App*, std::shared_ptr<Options>> add_command(CLI::App& app, std::function<int()>& chosen,
                                                           const std::string& name, const std::string& help, Run run) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->callback([opts, run, &chosen] { chosen = [opts, run] { return run(*opts); }; });
  return {cmd, opts};
}

void add_probe_command(CLI::App& app, std::function<int()>& chosen);
void add_run_command(CLI::App& app, std::function<int()>& chosen);
void add_explain_command(CLI::App& app, std::function<int()>& chosen);
void add_demo_command(CLI::App& app, std::function<int()>& chosen);
void add_history_command(CLI::App& app, std::function<int()>& chosen);
void add_compare_command(CLI::App& app, std::function<int()>& chosen);

}  // namespace infdoctor::cli
