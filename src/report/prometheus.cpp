#include <cstdio>

#include "report/text.h"

namespace infdoctor::report {
namespace {

std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string render_prometheus(const run::RunResult& r, int exit_code) {
  std::string out;
  char buf[512];
  out += "# HELP infdoctor_metric A measurement of the last run, named as rules name it.\n";
  out += "# TYPE infdoctor_metric gauge\n";
  for (const auto& [name, v] : run::flatten_metrics(r)) {
    const auto dot = name.find('.');
    std::snprintf(buf, sizeof buf, "infdoctor_metric{check=\"%s\",metric=\"%s\"} %.17g\n",
                  label(name.substr(0, dot)).c_str(), label(name.substr(dot + 1)).c_str(), v);
    out += buf;
  }
  out += "# HELP infdoctor_check_status 0 ok, 1 skipped, 2 error.\n# TYPE infdoctor_check_status gauge\n";
  for (const auto& c : r.checks) {
    std::snprintf(buf, sizeof buf, "infdoctor_check_status{check=\"%s\"} %d\n", label(c.id).c_str(),
                  static_cast<int>(c.status));
    out += buf;
  }
  out += "# HELP infdoctor_finding_severity 0 info, 1 warning, 2 critical, per finding.\n"
         "# TYPE infdoctor_finding_severity gauge\n";
  for (const auto& f : r.diagnosis) {
    std::snprintf(buf, sizeof buf, "infdoctor_finding_severity{rule=\"%s\",cause=\"%s\"} %d\n", label(f.rule).c_str(),
                  label(f.cause).c_str(), static_cast<int>(f.severity));
    out += buf;
  }
  out += "# HELP infdoctor_finding_impact_ms Milliseconds a finding attributes to its cause.\n"
         "# TYPE infdoctor_finding_impact_ms gauge\n";
  for (const auto& f : r.diagnosis) {
    std::snprintf(buf, sizeof buf, "infdoctor_finding_impact_ms{rule=\"%s\",cause=\"%s\"} %.17g\n",
                  label(f.rule).c_str(), label(f.cause).c_str(), f.impact_ms);
    out += buf;
  }
  out += "# HELP infdoctor_exit_code 0 healthy, 1 degraded, 2 critical, 3 could not run.\n"
         "# TYPE infdoctor_exit_code gauge\n";
  out += "infdoctor_exit_code " + std::to_string(exit_code) + "\n";
  return out;
}

}  // namespace infdoctor::report
