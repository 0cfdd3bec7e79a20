// infdoctor explain: re-applies (possibly newer) rules to saved results and prints the diagnosis,
// without sending a request.
#include <iostream>
#include <memory>

#include "bundle/bundle.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/message.h"
#include "core/strings.h"
#include "report/text.h"
#include "run/session.h"

namespace infdoctor::cli {
namespace {

struct ExplainOptions {
  std::string path;
  std::string rules_dir;
  std::string json;  // --json [FILE]
};

int run_explain(const ExplainOptions& o) {
  if (o.path.empty()) return fail_usage(missing_before_json("the PATH of the saved results", o.json));
  auto j = bundle::read_results(o.path);
  if (!j.ok()) return fail_config(j.error().message, j.error().detail);
  auto result = results::from_json(j.value());
  if (!result.ok()) return fail_config(o.path + ": " + result.error().message, result.error().detail);
  std::vector<std::string> warnings;
  auto rules = run::load_rules(o.rules_dir, warnings);
  for (const auto& w : warnings) core::say("warning", w);
  if (!rules.ok()) return fail_config(rules.error().message, rules.error().detail);
  run::rediagnose(result.value(), rules.value());
  if (!o.json.empty())
    if (const int code = emit_json(o.json, {{"diagnosis", rules::to_json(result->diagnosis)}}); code != kExitOk)
      return code;
  if (o.json != "-") {
    std::cout << "infdoctor explain  " << result->target.base_url << "  measured " << result->started_at << "\n\n"
              << report::render_diagnosis(result->diagnosis, results::flatten_metrics(result.value()));
  }
  return results::exit_code(result.value());
}

}  // namespace

void add_explain_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, opts] = add_command<ExplainOptions>(
      app, chosen, "explain",
      "Re-apply the rules to saved results (a bundle directory, a .tar.gz bundle or a results.json) and print the\n"
      "diagnosis again, without sending a request. With --rules DIR, newer or your own rules.",
      run_explain);
  cmd->add_option("path", opts->path, "bundle directory, bundle .tar.gz or results.json");
  cmd->add_option("--rules", opts->rules_dir, "directory of rule files to use instead of the built-in rules");
  add_json_flag(*cmd, opts->json, "the diagnosis as JSON");
}

}  // namespace infdoctor::cli
