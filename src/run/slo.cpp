#include "run/slo.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "checks/baseline.h"
#include "checks/load.h"
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

const std::vector<RequestLimit>& request_limits() {
  namespace bm = checks::baseline_metric;
  namespace ls = checks::load_setting;
  namespace rm = results::run_metric;
  static const std::vector<RequestLimit> limits = {
      {bm::ttft_p50_ms, rm::workload_ttft_ms, "the reference request's first token", &ls::slo_ttft_ms},
      {bm::ttft_p90_ms, rm::workload_ttft_ms, "the reference request's first token at the baseline's 90th percentile",
       &ls::slo_ttft_ms, &bm::ttft_p50_ms},
      {bm::tpot_p50_ms, rm::workload_tpot_ms_per_token, "the reference request's time per output token",
       &ls::slo_tpot_ms},
      {bm::total_p50_ms, rm::workload_total_ms, "the reference request end to end", &ls::slo_total_ms},
  };
  return limits;
}

std::vector<rules::Finding> check_slos(const std::vector<Slo>& slos, const std::map<std::string, double>& metrics,
                                       std::vector<std::string>& unmeasured) {
  namespace rm = results::run_metric;
  auto read = [&](const std::string& name) -> std::optional<double> {
    if (auto it = metrics.find(name); it != metrics.end()) return it->second;
    return std::nullopt;
  };
  std::vector<rules::Finding> out;
  for (const auto& s : slos) {
    const RequestLimit* request = nullptr;
    for (const auto& r : request_limits())
      if (s.metric == r.measured.name) request = &r;
    std::string name = s.metric, what = s.metric;
    std::optional<double> value = read(s.metric);
    if (request && read(request->priced)) {
      name = request->priced;
      what = request->what;
      value = read(name);
      if (request->median)
        if (auto hi = read(request->measured.name), mid = read(request->median->name); hi && mid)
          *value += std::max(0.0, *hi - *mid);
      // A request end to end waits for the others too: the queue at its concurrency counts.
      if (name == rm::workload_total_ms) *value += read(rm::workload_queue_ms).value_or(0);
    }
    if (!value) {
      // The load check counted each of its requests against this limit (its goodput, a finding of
      // its own when low): judged there, not unmeasured.
      if (!request || read(checks::load_metric::slo_limits_count.name).value_or(0) <= 0)
        unmeasured.push_back(s.metric);
      continue;
    }
    if (*value <= s.limit) continue;
    rules::Finding f;
    f.rule = "slo." + s.metric;
    f.severity = rules::Severity::Warning;
    const bool ms = s.metric.size() > 3 && s.metric.compare(s.metric.size() - 3, 3, "_ms") == 0;
    f.impact_ms = ms ? *value - s.limit : 0;
    f.impact_is = "over your limit of " + rules::format_metric(s.metric, s.limit);
    f.confidence = 1.0;
    f.title = "Your limit on " + s.metric + " is exceeded";
    f.explanation = "Your limit on " + s.metric + " is " + rules::format_metric(s.metric, s.limit) + "; " + what +
                    " is " + rules::format_metric(s.metric, *value) + ", " +
                    rules::format_metric(s.metric, *value - s.limit) + " over it.";
    f.evidence[name] = *value;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace infdoctor::run
