// infdoctor history FILE: the runs a scheduled check kept, and how each key metric trends.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "cli/commands.h"
#include "history/history.h"

namespace infdoctor::cli {
namespace {

struct HistoryOptions {
  std::string file;
  int limit = 30;
  std::string target, model;
  bool json = false;
};

std::string cell(const std::map<std::string, double>& m, const char* name, const char* fmt) {
  auto it = m.find(name);
  if (it == m.end()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, it->second);
  return buf;
}

// Eight levels of a bar, lowest to highest: the shape of a series at a glance. A series that
// moves by less than 5 % of its size is drawn flat, so noise does not look like a trend.
std::string sparkline(const std::vector<double>& v) {
  static const char* kBars[] = {"\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  if (v.empty()) return "";
  double lo = v[0], hi = v[0];
  for (double x : v) lo = std::min(lo, x), hi = std::max(hi, x);
  const bool flat = hi - lo <= 0.05 * std::max(std::fabs(hi), std::fabs(lo));
  std::string out;
  for (double x : v) out += kBars[flat ? 3 : static_cast<int>(std::lround((x - lo) / (hi - lo) * 7))];
  return out;
}

int show_history(const HistoryOptions& o) {
  if (::access(o.file.c_str(), F_OK) != 0) {
    std::cerr << "infdoctor: error: no history file " << o.file << " (runs create it with --history)\n";
    return kExitCouldNotRun;
  }
  auto h = history::History::open(o.file);
  if (!h.ok()) {
    std::cerr << "infdoctor: error: " << h.error().message << '\n';
    return kExitCouldNotRun;
  }
  auto runs = (*h)->runs(o.limit, o.target, o.model);
  if (!runs.ok()) {
    std::cerr << "infdoctor: error: " << runs.error().message << '\n';
    return kExitCouldNotRun;
  }
  if (o.json) {
    nlohmann::json out = {{"schema", "infdoctor.history/1"}, {"runs", nlohmann::json::array()}};
    for (const auto& r : *runs)
      out["runs"].push_back({{"id", r.id},
                             {"started_at", r.started_at},
                             {"target", r.target},
                             {"model", r.model},
                             {"exit_code", r.exit_code},
                             {"top_finding", r.top_finding},
                             {"partial", r.partial},
                             {"metrics", r.metrics}});
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }
  std::printf("%s: %zu run(s), schema %d\n\n", o.file.c_str(), runs->size(), (*h)->schema_version());
  std::printf("%-20s %-5s %9s %9s %9s %9s  %-28s %s\n", "started (UTC)", "exit", "TTFT p50", "TPOT p50", "TTFB p50",
              "cold ms", "top finding", "endpoint");
  for (const auto& r : *runs) {
    std::printf("%-20.19s %-5s %9s %9s %9s %9s  %-28s %s %s\n", r.started_at.c_str(),
                (std::to_string(r.exit_code) + (r.partial ? "*" : "")).c_str(),
                cell(r.metrics, "baseline.ttft_p50_ms", "%.0f").c_str(),
                cell(r.metrics, "baseline.tpot_p50_ms", "%.1f").c_str(),
                cell(r.metrics, "transport.ttfb_p50_ms", "%.0f").c_str(),
                cell(r.metrics, "coldstart.penalty_ms", "%.0f").c_str(),
                r.top_finding.empty() ? "(healthy)" : r.top_finding.c_str(), r.target.c_str(), r.model.c_str());
  }
  std::printf("\ntrends, oldest to newest (first, last, median):\n");
  for (const auto& name : history::kept_metrics()) {
    std::vector<double> v;
    for (const auto& r : *runs)
      if (auto it = r.metrics.find(name); it != r.metrics.end()) v.push_back(it->second);
    if (v.size() < 2) continue;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    std::printf("  %-30s %s  %g, %g, %g\n", name.c_str(), sparkline(v).c_str(), v.front(), v.back(),
                sorted[sorted.size() / 2]);
  }
  std::printf("(exit 1 degraded, 2 critical, 3 could not run; * interrupted)\n");
  return kExitOk;
}

}  // namespace

void add_history_command(CLI::App& app, std::function<int()>& chosen) {
  auto o = std::make_shared<HistoryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "history",
      "List the runs kept by `infdoctor run --history FILE` and how each key metric trends.\n"
      "Example: infdoctor history /var/lib/infdoctor/history.db --limit 50");
  cmd->add_option("file", o->file, "the SQLite history file")->required();
  cmd->add_option("--limit", o->limit, "newest runs to show")->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--target", o->target, "only runs of this base URL (as the run recorded it, credentials removed)");
  cmd->add_option("--model", o->model, "only runs of this model (with --target)");
  cmd->add_flag("--json", o->json, "the runs as JSON on stdout");
  cmd->callback([o, &chosen] { chosen = [o] { return show_history(*o); }; });
}

}  // namespace infdoctor::cli
