#include "report/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/strings.h"
#include "results/run_metrics.h"

namespace infdoctor::report {
namespace {

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

}  // namespace

nlohmann::json history_json(const std::vector<history::RunRecord>& runs) {
  nlohmann::json out = {{"schema", "infdoctor.history/1"}, {"runs", nlohmann::json::array()}};
  for (const auto& r : runs)
    out["runs"].push_back({{"id", r.id},
                           {"started_at", r.started_at},
                           {"target", r.target},
                           {"model", r.model},
                           {"exit_code", r.exit_code},
                           {"top_finding", r.top_finding},
                           {"partial", r.partial},
                           {"metrics", r.metrics}});
  return out;
}

std::string render_history(const std::string& file, int schema, const std::vector<history::RunRecord>& runs) {
  std::string out;
  core::appendf(out, "%s: %zu run(s), schema %d\n\n", file.c_str(), runs.size(), schema);
  // The columns are the metrics declared with one (MetricTags::column), in run order.
  std::vector<checks::MetricInfo> columns;
  for (const auto& m : results::all_metrics())
    if (m.tags.column) columns.push_back(m);
  core::appendf(out, "%-20s %-5s", "started (UTC)", "exit");
  for (const auto& c : columns) core::appendf(out, " %9s", c.tags.column);
  core::appendf(out, "  %-28s %s\n", "top finding", "endpoint");
  for (const auto& r : runs) {
    core::appendf(out, "%-20.19s %-5s", r.started_at.c_str(), (std::to_string(r.exit_code) + (r.partial ? "*" : "")).c_str());
    for (const auto& c : columns) core::appendf(out, " %9s", cell(r.metrics, c.name.c_str(), "%.1f").c_str());
    core::appendf(out, "  %-28s %s %s\n", r.top_finding.empty() ? "(healthy)" : r.top_finding.c_str(), r.target.c_str(),
                  r.model.c_str());
  }
  core::appendf(out, "\ntrends, oldest to newest (first, last, median):\n");
  for (const auto& name : history::kept_metrics()) {
    std::vector<double> v;
    for (const auto& r : runs)
      if (auto it = r.metrics.find(name); it != r.metrics.end()) v.push_back(it->second);
    if (v.size() < 2) continue;
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    core::appendf(out, "  %-30s %s  %g, %g, %g\n", name.c_str(), sparkline(v).c_str(), v.front(), v.back(),
                sorted[sorted.size() / 2]);
  }
  core::appendf(out, "(exit 1 degraded, 2 critical, 3 could not run; * interrupted)\n");
  return out;
}

core::Status HistoryExporter::write(const results::RunResult& r, const Say&) {
  history::RunRecord rec;
  rec.started_at = r.started_at;
  rec.target = r.target.base_url;
  rec.model = model_;
  rec.exit_code = exit_code_;
  rec.top_finding = r.diagnosis.empty() ? "" : r.diagnosis.front().rule;
  rec.partial = !r.interrupted_by.empty();
  rec.metrics = metrics_;
  if (auto id = history_.record(rec); !id.ok()) return id.error();
  return {};
}

}  // namespace infdoctor::report
