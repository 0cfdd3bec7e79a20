#include "cli/cli.h"

#include <csignal>
#include <functional>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/redact.h"
#include "core/version.h"

namespace infdoctor::cli {

int fail_config(const std::string& message, const std::string& detail) {
  std::cerr << "infdoctor: error: " << core::scrub(message) << '\n';
  std::stringstream ss(core::scrub(detail));
  for (std::string line; std::getline(ss, line);) std::cerr << "  " << line << '\n';
  return kExitCouldNotRun;
}

int run(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{
      "infdoctor: a doctor for slow LLM inference APIs. It measures an OpenAI-compatible endpoint layer by layer\n"
      "(DNS, network path, TCP/TLS, prefill, decode, cold starts, queueing) and says which layer costs the time.\n"
      "The API key is read from an environment variable (default OPENAI_API_KEY), never from the command line."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "infdoctor " + std::string(core::kVersion));
  std::function<int()> chosen;
  add_probe_command(app, chosen);
  add_run_command(app, chosen);
  add_explain_command(app, chosen);
  add_demo_command(app, chosen);
  add_history_command(app, chosen);
  add_compare_command(app, chosen);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "infdoctor: error: " << e.what() << "\n(see 'infdoctor --help')\n";
    return kExitCouldNotRun;
  }
  if (!chosen) return kExitCouldNotRun;
  try {
    return chosen();
  } catch (const std::exception& e) {
    std::cerr << "infdoctor: error: internal error: " << e.what() << '\n';
    return kExitCouldNotRun;
  }
}

}  // namespace infdoctor::cli
