#include "results/run_result.h"

#include <algorithm>

#include "checks/registry.h"
#include "core/exit_code.h"
#include "core/json_text.h"
#include "core/version.h"
#include "results/run_metrics.h"

namespace infdoctor::results {

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json checks = nlohmann::json::object();
  for (const auto& c : r.checks) checks[c.id] = checks::to_json(c);
  nlohmann::json run_metrics = nlohmann::json::object();
  for (const auto& [k, v] : r.run_metrics) run_metrics[k.substr(4)] = v;  // without "run."
  nlohmann::json run_requests = nlohmann::json::array();
  for (const auto& s : r.run_requests) run_requests.push_back(checks::to_json(s));
  nlohmann::json history = nlohmann::json::object();
  for (const auto& [k, v] : r.history_metrics) history[k.substr(8)] = v;  // without "history."
  nlohmann::json adaptations = nlohmann::json::array();
  for (const auto& a : r.adaptations)
    adaptations.push_back({{"parameter", a.parameter}, {"change", a.change}, {"provider_said", a.provider_said}});
  return {{"schema", "infdoctor.results/1"},
          {"infdoctor_version", core::kVersion},
          {"exit_code", exit_code(r)},
          {"models", {{"target", core::text_or_null(r.models.target)}, {"small", core::text_or_null(r.models.small)}}},
          {"run", {{"metrics", run_metrics}, {"requests", run_requests}}},
          {"diagnosis", rules::to_json(r.diagnosis)},
          {"target",
           {{"base_url", r.target.base_url},
            {"scheme", r.target.scheme},
            {"host", r.target.host},
            {"port", r.target.port}}},
          {"started_at", r.started_at},
          {"finished_at", r.finished_at},
          {"partial", !r.interrupted_by.empty()},
          {"history", history},
          {"preset", r.preset},
          {"adaptations", adaptations},
          {"engine", r.engine},
          {"interrupted_by", core::text_or_null(r.interrupted_by)},
          {"unreachable", core::text_or_null(r.unreachable)},
          {"checks", checks}};
}

std::map<std::string, double> flatten_metrics(const RunResult& r) {
  std::map<std::string, double> out = r.run_metrics;
  out.insert(r.history_metrics.begin(), r.history_metrics.end());
  for (const auto& c : r.checks)
    for (const auto& [k, v] : c.metrics) out[c.id + "." + k] = v;
  return out;
}

std::optional<double> metric(const RunResult& r, const std::string& name) {
  const auto in = [&](const std::map<std::string, double>& m, const std::string& key) -> std::optional<double> {
    auto it = m.find(key);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  const auto dot = name.find('.');
  if (dot == std::string::npos) return std::nullopt;
  const std::string owner = name.substr(0, dot);
  if (owner == "run") return in(r.run_metrics, name);
  if (owner == "history") return in(r.history_metrics, name);
  for (const auto& c : r.checks)
    if (c.id == owner) return in(c.metrics, name.substr(dot + 1));
  return std::nullopt;
}

int exit_code(const RunResult& r) {
  const bool any_ok = std::any_of(r.checks.begin(), r.checks.end(),
                                  [](const checks::CheckResult& c) { return c.status == checks::CheckStatus::Ok; });
  const bool any_error = std::any_of(r.checks.begin(), r.checks.end(),
                                     [](const checks::CheckResult& c) { return c.status == checks::CheckStatus::Error; });
  // Failed model requests are measurements of the provider (a 5xx, a timeout): they are diagnosed.
  // Checks that all failed without one could measure nothing.
  const auto failed = r.run_metrics.find(run_metric::failed_count);
  const bool measured_failures = failed != r.run_metrics.end() && failed->second > 0;
  if (!r.interrupted_by.empty() || !r.unreachable.empty() || (!any_ok && any_error && !measured_failures))
    return core::kExitCouldNotRun;
  int code = core::kExitOk;
  for (const auto& f : r.diagnosis) {
    if (f.severity == rules::Severity::Critical) code = core::kExitCritical;
    else if (f.severity == rules::Severity::Warning) code = std::max(code, core::kExitDegraded);
  }
  return code;
}

core::Result<RunResult> from_json(const nlohmann::json& j) {
  using core::ErrorCode;
  if (!j.is_object() || !j.contains("schema") || j["schema"] != "infdoctor.results/1")
    return core::make_error(ErrorCode::ConfigError, "not an infdoctor results file (schema infdoctor.results/1)");
  RunResult r;
  try {
    const auto& t = j.at("target");
    r.target.base_url = t.at("base_url").get<std::string>();
    r.target.scheme = t.at("scheme").get<std::string>();
    r.target.host = t.at("host").get<std::string>();
    r.target.port = core::get_checked<int>(t.at("port"));
    r.started_at = j.at("started_at").get<std::string>();
    r.finished_at = j.at("finished_at").get<std::string>();
    if (auto it = j.find("interrupted_by"); it != j.end() && it->is_string()) r.interrupted_by = it->get<std::string>();
    if (auto it = j.find("unreachable"); it != j.end() && it->is_string()) r.unreachable = it->get<std::string>();
    if (auto m = j.find("models"); m != j.end() && m->is_object()) {
      if (auto t = m->find("target"); t != m->end() && t->is_string()) r.models.target = t->get<std::string>();
      if (auto s = m->find("small"); s != m->end() && s->is_string()) r.models.small = s->get<std::string>();
    }
    if (j.contains("run")) {
      for (const auto& [k, v] : j.at("run").at("metrics").items())
        if (v.is_number()) r.run_metrics["run." + k] = v.get<double>();
      for (const auto& smp : j.at("run").value("requests", nlohmann::json::array()))
        if (auto typed = api::sample_from_json(smp); typed.ok())
          r.run_requests.push_back({std::move(typed.value()), smp.value("label", nlohmann::json())});
    }
    if (auto p = j.find("preset"); p != j.end() && p->is_object()) r.preset = *p;
    if (auto e = j.find("engine"); e != j.end() && e->is_object()) r.engine = *e;
    if (auto a = j.find("adaptations"); a != j.end() && a->is_array())
      for (const auto& e : *a)
        if (e.is_object())
          r.adaptations.push_back({e.value("parameter", std::string()), e.value("change", std::string()),
                                   e.value("provider_said", std::string())});
    if (auto h = j.find("history"); h != j.end() && h->is_object())
      for (const auto& [k, v] : h->items())
        if (v.is_number()) r.history_metrics["history." + k] = v.get<double>();
    for (const auto& [id, c] : j.at("checks").items()) {
      checks::CheckResult cr;
      cr.id = id;
      const std::string st = c.at("status").get<std::string>();
      cr.status = core::value_of(checks::kCheckStatusNames, st).value_or(checks::CheckStatus::Error);
      if (c.at("reason").is_string()) cr.reason = c.at("reason").get<std::string>();
      if (c.at("error").is_string()) cr.error = c.at("error").get<std::string>();
      for (const auto& [k, v] : c.at("metrics").items())
        if (v.is_number()) cr.metrics[k] = v.get<double>();
      // Model requests (they name their model) come back typed; a malformed one, and every
      // network probe's sample, stays as it was written.
      for (const auto& smp : c.value("samples", nlohmann::json::array())) {
        auto typed = smp.is_object() && smp.contains("model") ? api::sample_from_json(smp)
                                                               : core::Result<api::RequestSample>(core::make_error(core::ErrorCode::ConfigError, "not a model request"));
        if (typed.ok()) cr.requests.push_back({std::move(typed.value()), smp.value("label", nlohmann::json())});
        else cr.samples.push_back(smp);
      }
      cr.details = c.value("details", nlohmann::json::object());
      if (auto t = c.find("tables"); t != c.end() && t->is_array())
        for (const auto& table : *t) cr.tables.push_back(checks::table_from_json(table));
      if (auto ch = c.find("charts"); ch != c.end() && ch->is_array())
        for (const auto& chart : *ch) cr.charts.push_back(checks::chart_from_json(chart));
      cr.duration_ms = c.value("duration_ms", 0.0);
      r.checks.push_back(std::move(cr));
    }
    // Keep the registry's order: it is the order the checks ran in.
    std::vector<checks::CheckResult> ordered;
    for (const auto& e : checks::registry())
      for (auto& c : r.checks)
        if (c.id == e.id) ordered.push_back(std::move(c));
    r.checks = std::move(ordered);
    for (const auto& f : j.value("diagnosis", nlohmann::json::array()))
      if (auto parsed = rules::finding_from_json(f)) r.diagnosis.push_back(*parsed);
  } catch (const std::exception& e) {
    return core::make_error(ErrorCode::ConfigError, "malformed results file", e.what());
  }
  return r;
}

}  // namespace infdoctor::results
