#include "run/slo.h"

#include <algorithm>
#include <cstdlib>

#include "core/strings.h"
#include "history/history.h"
#include "results/run_metrics.h"

namespace infdoctor::run {

std::vector<std::string> known_metrics() {
  std::vector<std::string> out;
  for (const auto& m : results::all_metrics()) out.push_back(m.name);
  for (const auto& m : history::history_metric_names()) out.push_back(m);
  return out;
}

namespace {
std::string short_slo_names(const std::vector<checks::MetricInfo>& declared) {
  std::vector<std::string> names;
  for (const auto& m : declared)
    if (m.tags.slo) names.push_back(m.tags.slo);
  return core::join(names);
}
}  // namespace

core::Result<std::vector<Slo>> parse_slos(const std::string& text) {
  std::vector<Slo> out;
  const auto known = known_metrics();
  const auto declared = results::all_metrics();
  for (const auto& item : core::split(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      return core::make_error(core::ErrorCode::InvalidArgument, "--slo wants NAME=LIMIT, got '" + item + "'");
    std::string name = item.substr(0, eq);
    for (const auto& m : declared)
      if (m.tags.slo && name == m.tags.slo) name = m.name;
    if (std::find(known.begin(), known.end(), name) == known.end())
      return core::make_error(core::ErrorCode::InvalidArgument, "--slo: unknown metric '" + item.substr(0, eq) + "'",
                              "short names: " + short_slo_names(declared) + "; or any metric's full name (checks/README.md)");
    char* end = nullptr;
    const std::string v = item.substr(eq + 1);
    const double limit = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(limit >= 0))
      return core::make_error(core::ErrorCode::InvalidArgument,
                              "--slo: '" + v + "' is not a limit (a number, 0 or more, in the metric's unit)");
    out.push_back(Slo{name, limit});
  }
  return out;
}

std::vector<rules::Finding> check_slos(const std::vector<Slo>& slos, const std::map<std::string, double>& metrics,
                                       std::vector<std::string>& unmeasured) {
  std::vector<rules::Finding> out;
  for (const auto& s : slos) {
    auto it = metrics.find(s.metric);
    if (it == metrics.end()) {
      unmeasured.push_back(s.metric);
      continue;
    }
    if (it->second <= s.limit) continue;
    rules::Finding f;
    f.rule = "slo." + s.metric;
    f.severity = rules::Severity::Warning;
    const bool ms = s.metric.size() > 3 && s.metric.compare(s.metric.size() - 3, 3, "_ms") == 0;
    f.impact_ms = ms ? it->second - s.limit : 0;
    f.confidence = 1.0;
    f.title = "Your limit on " + s.metric + " is exceeded";
    f.explanation = s.metric + " is " + rules::format_metric(s.metric, it->second) + " against the limit of " +
                    rules::format_metric(s.metric, s.limit) + ".";
    f.evidence[s.metric] = it->second;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace infdoctor::run
