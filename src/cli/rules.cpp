// infdoctor rules check: validates rule files; infdoctor rules list: the rules a run applies.
#include <cstring>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/message.h"
#include "core/strings.h"
#include "run/runner.h"

namespace infdoctor::cli {
namespace {

int run_rules_check(const std::string& dir) {
  std::vector<std::string> warnings;
  auto rules = run::load_rules(dir, warnings);
  for (const auto& w : warnings) core::say("warning", w);
  if (!rules.ok()) return fail_config(rules.error().message, rules.error().detail);
  std::cout << dir << ": " << rules->rules.size() << " rules in " << rules->files.size() << " files, all valid\n";
  return kExitOk;
}

struct RulesListOptions {
  std::string rules_dir;
  std::string json;
};

// Every rule a run applies, in order: what it finds, how sure, when it fires.
int run_rules_list(const RulesListOptions& o) {
  std::vector<std::string> warnings;
  auto rules = run::load_rules(o.rules_dir, warnings);
  for (const auto& w : warnings) core::say("warning", w);
  if (!rules.ok()) return fail_config(rules.error().message, rules.error().detail);
  nlohmann::json list = nlohmann::json::array();
  for (const rules::Rule& r : rules->rules)
    list.push_back({{"id", r.id},
                    {"cause", r.cause},
                    {"scope", r.scope_when ? r.scope + " when " + r.scope_when->text() + ", else " + r.scope_else : r.scope},
                    {"severity", rules::severity_name(r.severity)},
                    {"title", r.title},
                    {"when", r.when.text()},
                    {"critical_when", r.critical_when ? nlohmann::json(r.critical_when->text()) : nlohmann::json(nullptr)},
                    {"unless", r.unless.empty() ? nlohmann::json(nullptr)
                                                : nlohmann::json(core::join_by(r.unless, " or ", [](const rules::Expression& e) { return e.text(); }))},
                    {"file", r.file},
                    {"line", r.line}});
  if (!o.json.empty())
    if (const int code = emit_json(o.json, {{"rules", list}}); code != kExitOk || o.json == "-") return code;
  // The conditions as a person reads them: "and", "or", "not" for muParser's operators.
  const auto readable = [](std::string t) {
    for (const auto& [from, to] : {std::pair<const char*, const char*>{" && ", " and "}, {" || ", " or "}})
      for (std::size_t i = t.find(from); i != std::string::npos; i = t.find(from, i + std::strlen(to)))
        t.replace(i, std::strlen(from), to);
    return t;
  };
  std::cout << (o.rules_dir.empty() ? std::string("built-in rules") : o.rules_dir) << ": " << list.size() << " rules\n";
  for (const auto& r : list) {
    const std::string cause = r["cause"].get<std::string>();
    std::cout << "  " << r["id"].get<std::string>() << "  [" << r["severity"].get<std::string>()
              << (r["critical_when"].is_string() ? ", critical when " + readable(r["critical_when"].get<std::string>()) : "")
              << "; " << (cause.empty() ? "no latency cause" : "cause " + cause)
              << (r["scope"].get<std::string>().empty() ? "" : ", scope " + readable(r["scope"].get<std::string>())) << "]  "
              << r["title"].get<std::string>() << "\n      when " << readable(r["when"].get<std::string>())
              << (r["unless"].is_string() ? ", unless " + readable(r["unless"].get<std::string>()) : "") << '\n';
  }
  return kExitOk;
}

}  // namespace

void add_rules_command(CLI::App& app, std::function<int()>& chosen) {
  auto dir = std::make_shared<std::string>();
  CLI::App* rules = app.add_subcommand("rules", "Work with rule files.");
  rules->require_subcommand(1);
  CLI::App* check = rules->add_subcommand(
      "check", "Validate every rule file of DIR: each error with file, line, rule id, field and, for an expression, "
               "the position. Exit code 3 on any error.");
  check->add_option("dir", *dir, "directory of rule files")->required();
  check->callback([dir, &chosen] { chosen = [dir] { return run_rules_check(*dir); }; });
  auto [list, lo] = add_command<RulesListOptions>(
      *rules, chosen, "list",
      "List the rules a run applies, in order: id, severity, cause, scope, title and the condition that fires each. "
      "See rules/README.md for where each threshold comes from.",
      run_rules_list);
  list->add_option("--rules", lo->rules_dir, "directory of rule files instead of the built-in rules");
  add_json_flag(*list, lo->json, "the rules as JSON");
}

}  // namespace infdoctor::cli
