#include "report/text.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "checks/registry.h"
#include "report/describe.h"
#include "results/requests.h"
#include "results/run_metrics.h"
#include "stats/series.h"
#include "core/strings.h"

namespace infdoctor::report {

namespace rm = results::run_metric;

namespace {

using nlohmann::json;

// A metric as a headline shows it, by the unit its name ends in.
std::string headline_value(const checks::CheckResult& c, const std::string& name, bool percent) {
  auto it = c.metrics.find(name);
  if (it == c.metrics.end()) return "-";
  const double v = it->second;
  // A rate (tokens_per_s, requests_per_s) is no time: its headline names what it counts.
  const bool rate = name.size() > 6 && name.compare(name.size() - 6, 6, "_per_s") == 0;
  const std::string unit = rate ? "" : name.substr(name.rfind('_') + 1);
  char buf[64];
  if (percent) std::snprintf(buf, sizeof buf, "%.0f%%", v * 100);
  else if (unit == "count") std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else if (unit == "ms" || unit == "s" || unit == "bytes") std::snprintf(buf, sizeof buf, "%.1f %s", v, unit.c_str());
  else if (unit == "token") std::snprintf(buf, sizeof buf, "%.1f ms/token", v);
  else if (unit == "mb") std::snprintf(buf, sizeof buf, "%.1f ms/MB", v);
  else std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

// The check's declared headline (checks/check.h, Headline) filled with its metrics.
std::string check_headline(const checks::CheckResult& c) {
  if (c.status != checks::CheckStatus::Ok) return c.reason;
  const checks::CheckInfo* info = checks::find_info(c.id);
  if (!info) return std::to_string(c.metrics.size()) + " metrics";
  for (const auto& h : info->headlines) {
    if (h.when && !c.metric(*h.when)) continue;
    return core::fill_placeholders(h.text, [&](const std::string& placeholder) {
      // "{name}", "{name%}" (a ratio as a percentage) or "{name|noun}" (a count with its noun).
      const auto bar = placeholder.find('|');
      if (bar != std::string::npos) {
        const auto it = c.metrics.find(placeholder.substr(0, bar));
        return it == c.metrics.end() ? std::string("-") : core::count_of(it->second, placeholder.substr(bar + 1));
      }
      const bool percent = !placeholder.empty() && placeholder.back() == '%';
      return headline_value(c, percent ? placeholder.substr(0, placeholder.size() - 1) : placeholder, percent);
    });
  }
  return std::to_string(c.metrics.size()) + " metrics";
}

namespace {

// A check's table: columns of numbers right-aligned, text left-aligned, each as wide as its
// widest cell.
void render_table(std::string& out, const checks::Table& t) {
  std::vector<std::size_t> width(t.columns.size(), 0);
  std::vector<bool> numeric(t.columns.size(), true);
  for (const auto& r : t.rows)
    for (std::size_t i = 0; i < r.size() && i < numeric.size(); ++i)
      if (!r[i].empty() && r[i] != "-" && !std::isdigit(static_cast<unsigned char>(r[i][0])) && r[i][0] != '-' &&
          r[i][0] != '+')
        numeric[i] = false;
  auto fit = [&](const std::vector<std::string>& row) {
    for (std::size_t i = 0; i < row.size() && i < width.size(); ++i) width[i] = std::max(width[i], row[i].size());
  };
  fit(t.columns);
  for (const auto& r : t.rows) fit(r);
  auto line = [&](const std::vector<std::string>& row) {
    std::string l;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string& c = i < row.size() ? row[i] : std::string();
      const std::string pad(width[i] - std::min(width[i], c.size()), ' ');
      l += "  " + (numeric[i] ? pad + c : c + pad);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  out += "\n" + t.title + "\n";
  if (!t.columns.empty()) line(t.columns);
  for (const auto& r : t.rows) line(r);
  if (!t.note.empty()) out += "  " + t.note + "\n";
}

// A metric as a person reads it: what its declaration says it is, with the name the JSON and the
// rules use after it.
// Read afresh each time: a check registered since (checks::Registration) is declared too.
std::string metric_label(const std::string& name) {
  for (const auto& info : results::all_metrics())
    if (info.name == name) return info.help.empty() ? name : info.help + " (" + name + ")";
  return name;
}

}  // namespace

std::string render_diagnosis(const std::vector<rules::Finding>& findings, const std::map<std::string, double>& metrics) {
  std::string out;
  const bool any_issue = std::any_of(findings.begin(), findings.end(),
                                     [](const rules::Finding& f) { return f.severity != rules::Severity::Info; });
  if (!any_issue) core::appendf(out, "DIAGNOSIS: no finding above info; nothing measured explains slowness.\n");
  else core::appendf(out, "DIAGNOSIS (ranked by attributed milliseconds)\n");
  // The reference request the shares are of comes first, so each share's whole is on the page.
  if (const auto priced = report::describe_workload(metrics); !priced.empty()) out += "\n" + priced + "\n";
  int n = 0;
  for (const auto& f : findings) {
    ++n;
    core::appendf(out, "\n%2d. [%s] %s\n", n, std::string(rules::severity_name(f.severity)).c_str(), f.title.c_str());
    core::appendf(out, "    %s: %s, confidence %.2f  (rule %s)\n", rules::cause_and_scope(f).c_str(),
                  rules::describe_impact(f, metrics).c_str(), f.confidence, f.rule.c_str());
    core::appendf(out, "    %s\n", f.explanation.c_str());
    if (!f.evidence.empty()) {
      core::appendf(out, "    evidence:\n");
      for (const auto& [k, v] : f.evidence)
        core::appendf(out, "      %s: %s\n", metric_label(k).c_str(), rules::format_metric(k, v).c_str());
    }
    for (const auto& q : f.ask_provider) core::appendf(out, "    ask the provider: %s\n", q.c_str());
    for (const auto& a : f.actions) core::appendf(out, "    you can: %s\n", a.c_str());
    for (const auto& a : f.also) {
      core::appendf(out, "    also for this cause: [%s] %s: %s, confidence %.2f  (rule %s)\n",
                    std::string(rules::severity_name(a.severity)).c_str(), a.title.c_str(),
                    rules::describe_impact(a, metrics).c_str(), a.confidence, a.rule.c_str());
      core::appendf(out, "      %s\n", a.explanation.c_str());
      for (const auto& q : a.ask_provider) core::appendf(out, "      ask the provider: %s\n", q.c_str());
      for (const auto& x : a.actions) core::appendf(out, "      you can: %s\n", x.c_str());
    }
  }
  return out;
}

std::string render_text(const results::RunResult& r) {
  std::string out;
  core::appendf(out, "infdoctor run  %s  %s\n\n", r.target.base_url.c_str(), r.started_at.c_str());
  // A run that never reached the model has no diagnosis to give: the cause once, then what was
  // measured without the model (DNS, the path, TCP and TLS).
  if (!r.unreachable.empty())
    core::appendf(out,
                  "  COULD NOT MEASURE the model: %s\n  No diagnosis: the checks that need the model did not run. What "
                  "was measured without it follows.\n\n",
                  r.unreachable.c_str());
  if (!r.interrupted_by.empty())
    core::appendf(out, "  PARTIAL: the run was interrupted (%s); what follows is what was measured until then\n\n",
        r.interrupted_by.c_str());
  if (r.unreachable.empty()) out += render_diagnosis(r.diagnosis, results::flatten_metrics(r));
  if (!r.adaptations.empty()) out += report::describe_adaptations(r.adaptations);
  out += report::describe_requests(r);
  out += report::describe_engine(r.engine, r.run_metrics);
  // What the rules could not judge for want of samples is said, not left to silence.
  if (auto n = r.run_metrics.find(rm::series_samples_count);
      n != r.run_metrics.end() && n->second > 0 && n->second < static_cast<double>(stats::kMinSamples))
    core::appendf(out,
                  "Slowdowns over time not judged: the time series has %.0f requests, %zu are needed (the default "
                  "profile or --soak-minutes sends enough).\n",
                  n->second, stats::kMinSamples);
  core::appendf(out, "\n");
  // What the preset's endpoint is known to send, and how often it arrived. Results read back
  // from a file may hold anything here: what is not of the expected type counts as absent.
  if (r.preset.is_object() && r.preset.contains("signals") && r.preset["signals"].is_array() &&
      !r.preset["signals"].empty()) {
    const auto count = [](const json& j, const char* key) -> long long {
      auto it = j.find(key);
      return it != j.end() && it->is_number_integer() ? std::clamp<long long>(it->get<long long>(), 0, 1000000000) : 0;
    };
    const long long n = count(r.preset, "requests");
    std::string seen, missing;
    for (const auto& s : r.preset["signals"]) {
      if (!s.is_object() || !s.contains("signal") || !s["signal"].is_string()) continue;
      const long long k = count(s, "seen_in");
      std::string& list = k > 0 ? seen : missing;
      list += (list.empty() ? "" : ", ") + s["signal"].get<std::string>() + " (" + std::to_string(k) + " of " +
              std::to_string(n) + ")";
    }
    const auto name = r.preset.find("name");
    core::appendf(out, "  preset %s: timing signals seen: %s\n",
        name != r.preset.end() && name->is_string() ? name->get<std::string>().c_str() : "?",
        seen.empty() ? "none" : seen.c_str());
    if (!missing.empty() && n > 0)
      core::appendf(out, "  not seen: %s; a gateway or proxy on the way may strip them\n", missing.c_str());
    core::appendf(out, "\n");
  }
  core::appendf(out, "  %-14s %-8s %9s  %s\n", "check", "status", "took", "result");
  for (const auto& c : r.checks) {
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", c.duration_ms / 1000.0);
    std::string headline = check_headline(c);
    // The cause the run stopped for is said once, above; each check it stopped says so briefly.
    if (!r.unreachable.empty() && c.status != checks::CheckStatus::Ok &&
        (headline.find(r.unreachable) != std::string::npos || c.error == "model_unreachable"))
      headline = "not measured: the model could not be reached (above)";
    // Its time is also in the time of the check whose idle gaps it ran in.
    if (const auto host = c.details.find("ran_inside"); host != c.details.end() && host->is_string())
      headline += " (ran inside " + host->get<std::string>() + "'s idle gaps)";
    core::appendf(out, "  %-14s %-8s %9s  %s\n", c.id.c_str(), std::string(checks::status_name(c.status)).c_str(), took,
        headline.c_str());
  }
  for (const auto& c : r.checks)
    for (const auto& t : c.tables) render_table(out, t);
  return out;
}

}  // namespace infdoctor::report
