// infdoctor history FILE: the runs a scheduled check kept, and how each key metric trends.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/commands.h"
#include "report/history.h"

namespace infdoctor::cli {
namespace {

struct HistoryOptions {
  std::string file;
  int limit = 30;
  std::string target, model;
  std::string json;  // --json [FILE]
};

int show_history(const HistoryOptions& o) {
  if (o.file.empty()) return fail_usage(missing_before_json("the history FILE", o.json));
  if (!o.model.empty() && o.target.empty())
    return fail_usage("--model filters the runs of one --target: give --target URL too");
  if (::access(o.file.c_str(), F_OK) != 0)
    return fail_config("no history file " + o.file + " (runs create it with --history)");
  auto h = history::History::open(o.file);
  if (!h.ok()) return fail_config(h.error().message);
  auto runs = (*h)->runs(o.limit, o.target, o.model);
  if (!runs.ok()) return fail_config(runs.error().message);
  if (!o.json.empty())
    if (const int code = emit_json(o.json, report::history_json(*runs)); code != kExitOk || o.json == "-") return code;
  std::cout << report::render_history(o.file, (*h)->schema_version(), *runs);
  return kExitOk;
}

}  // namespace

void add_history_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, o] = add_command<HistoryOptions>(
      app, chosen, "history",
      "List the runs kept by `infdoctor run --history FILE` and how each key metric trends.\n"
      "Example: infdoctor history /var/lib/infdoctor/history.db --limit 50",
      show_history);
  cmd->add_option("file", o->file, "the SQLite history file");
  cmd->add_option("--limit", o->limit, "newest runs to show")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--target", o->target, "only runs of this base URL (as the run recorded it, credentials removed)");
  cmd->add_option("--model", o->model, "only runs of this model (with --target)");
  add_json_flag(*cmd, o->json, "the runs as JSON");
}

}  // namespace infdoctor::cli
