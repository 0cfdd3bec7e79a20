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

// `--json [FILE]`, the same in every command: alone or with '-' the JSON goes to stdout instead of
// the text; with FILE it is written there (whole, under a temporary name first) and the text
// still goes to stdout.
inline CLI::Option* add_json_flag(CLI::App& cmd, std::string& into, const std::string& what) {
  return cmd.add_option("--json", into, what + " on stdout instead of the text; with FILE, into FILE as well as the text")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]");
}

void add_probe_command(CLI::App& app, std::function<int()>& chosen);
void add_run_command(CLI::App& app, std::function<int()>& chosen);
void add_explain_command(CLI::App& app, std::function<int()>& chosen);
void add_rules_command(CLI::App& app, std::function<int()>& chosen);
void add_demo_command(CLI::App& app, std::function<int()>& chosen);
void add_history_command(CLI::App& app, std::function<int()>& chosen);
void add_compare_command(CLI::App& app, std::function<int()>& chosen);
void add_serve_command(CLI::App& app, std::function<int()>& chosen);

}  // namespace infdoctor::cli
