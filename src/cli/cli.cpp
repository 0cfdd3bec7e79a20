#include "cli/cli.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/files.h"
#include "core/message.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/version.h"

namespace infdoctor::cli {

namespace {

std::string g_command;  // the (innermost) subcommand named, for pointers to its --help

// Flags whose names now mean one thing everywhere: what an old command line is told.
struct Renamed {
  const char* command;
  const char* old_name;
  const char* now;
};
constexpr Renamed kRenamed[] = {
    {"run", "--prompt-tokens", "--sweep-prompt-tokens (--prompt-tokens is one request's prompt, in probe)"},
    {"run", "--max-tokens", "--sweep-max-tokens (--max-tokens is one request's max_tokens, in probe)"},
    {"compare", "--prompt-tokens", "--sweep-prompt-tokens"},
    {"compare", "--max-tokens", "--sweep-max-tokens"},
    {"run", "-m", "--model (-m is curl's --max-time)"},
    {"probe", "-m", "--model (-m is curl's --max-time)"},
};

void print_error(const std::string& message, const std::string& detail) { core::say("error", message, detail); }

// A word the command does not know, named before CLI11 parses (CLI11 would first complain about
// the required option a typo was meant to be): "unknown option --modle for 'run'; did you mean
// --model?", "unknown command 'rnu'; did you mean run?". Empty when every word is known.
std::string unknown_word(CLI::App& app, int argc, char** argv) {
  CLI::App* cmd = &app;
  const auto all = [](CLI::App*) { return true; };
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    std::vector<std::string> names;
    if (arg.size() < 2 || arg[0] != '-' || std::isdigit(static_cast<unsigned char>(arg[1])) || arg[1] == '.') {
      // A value, a positional, or a command: where one is due, any other word is a typo.
      const auto subs = cmd->get_subcommands(all);
      for (CLI::App* c : subs) names.push_back(c->get_name());
      const auto at = std::find(names.begin(), names.end(), arg);
      if (at != names.end()) g_command = (cmd = subs[static_cast<std::size_t>(at - names.begin())])->get_name();
      if (at != names.end() || subs.empty()) continue;
      const std::string near = core::closest(arg, names);
      return "unknown command '" + arg + "'" + (near.empty() ? "" : "; did you mean " + near + "?");
    }
    const bool is_long = arg.rfind("--", 0) == 0;
    const std::string name = is_long ? arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2)
                                     : arg.substr(1, 1);
    const CLI::Option* match = nullptr;
    for (const CLI::App* level : {static_cast<const CLI::App*>(cmd), static_cast<const CLI::App*>(&app)})
      for (const CLI::Option* o : level->get_options()) {
        const auto& own = is_long ? o->get_lnames() : o->get_snames();
        if (std::find(own.begin(), own.end(), name) != own.end()) match = o;
        for (const auto& l : o->get_lnames()) names.push_back("--" + l);
      }
    // -m MODEL from before -m was curl's --max-time: the value is no number of seconds.
    const auto renamed_here = [&](const std::string& old_name) {
      return std::any_of(std::begin(kRenamed), std::end(kRenamed),
                         [&](const Renamed& r) { return cmd->get_name() == r.command && old_name == r.old_name; });
    };
    if (match && !is_long && name == "m" && arg.size() == 2 && i + 1 < argc && renamed_here("-m")) {
      char* end = nullptr;
      std::strtod(argv[i + 1], &end);
      if (end == argv[i + 1] || *end != '\0') match = nullptr;
    }
    if (!match) {
      for (const Renamed& r : kRenamed)
        if (cmd->get_name() == r.command && std::string(r.old_name) == (is_long ? "--" : "-") + name)
          return std::string(r.old_name) + " is now " + r.now;
      const std::string near = core::closest("--" + name, names);
      return std::string("unknown option ") + (is_long ? "--" : "-") + name + (cmd == &app ? "" : " for '" + cmd->get_name() + "'") +
             (near.empty() ? "" : "; did you mean " + near + "?");
    }
    // The next word is this option's value, unless it came with '=' or the option takes none; an
    // optional value (--json [FILE]) is the next word when that is not an option.
    const bool takes_next = match->get_expected_min() > 0 ||
                            (match->get_expected_max() > 0 && i + 1 < argc &&
                             (argv[i + 1][0] != '-' || std::string(argv[i + 1]) == "-"));
    if (takes_next && arg.find('=') == std::string::npos && (is_long || arg.size() == 2)) ++i;
  }
  return {};
}

}  // namespace

int fail_config(const std::string& message, const std::string& detail) {
  print_error(message, detail);
  return kExitCouldNotRun;
}

int fail_usage(const std::string& message, const std::string& detail) {
  print_error(message, detail);
  std::cerr << "(see 'infdoctor " << (g_command.empty() ? "" : g_command + " ") << "--help')\n";
  return kExitUsage;
}

int fail(const core::Error& e) {
  return e.code == core::ErrorCode::InvalidArgument ? fail_usage(e.message, e.detail) : fail_config(e.message, e.detail);
}

std::string missing_before_json(const std::string& what, const std::string& json) {
  if (json.empty() || json == "-") return what + " is required";
  return what + " is required: '" + json + "' was read as --json's FILE; put " + what + " before --json";
}

int emit_json(const std::string& where, const nlohmann::json& j) {
  const std::string text = core::scrub(j.dump(2)) + "\n";
  if (where == "-") {
    std::cout << text;
    return kExitOk;
  }
  if (auto st = core::write_replacing(where, text); !st.ok()) return fail_config(st.error().message, st.error().detail);
  return kExitOk;
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
  add_rules_command(app, chosen);
  add_demo_command(app, chosen);
  add_history_command(app, chosen);
  add_compare_command(app, chosen);
  add_serve_command(app, chosen);
  if (const std::string unknown = unknown_word(app, argc, argv); !unknown.empty()) return fail_usage(unknown);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return fail_usage(e.what());
  }
  if (!chosen) return kExitUsage;
  try {
    return chosen();
  } catch (const std::exception& e) {
    core::say("error", std::string("internal error: ") + e.what());
    return kExitCouldNotRun;
  }
}

}  // namespace infdoctor::cli
