#pragma once
// The results model: what a run measured and concluded, in one place. run/ fills it; report/,
// bundle/ and the commands read it, and results.json is its text, written and read back here.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/check.h"
#include "core/result.h"
#include "rules/rules.h"

namespace infdoctor::results {

// A change the run made to its requests because the endpoint refused them as they were.
struct Adaptation {
  std::string parameter;     // "max_tokens", "temperature"
  std::string change;        // "renamed to max_completion_tokens", "left out: the model takes only its default"
  std::string provider_said; // the refusal's message
};

struct RunResult {
  checks::Target target;
  std::string started_at;
  std::string finished_at;
  std::vector<checks::CheckResult> checks;
  std::map<std::string, double> run_metrics;  // run.requests_count, run.rate_limited_count, ...
  // Model requests the run sent on its own account, not a check's (a model's token calibration):
  // in the ledger with the checks' requests (results/ledger.h).
  std::vector<checks::LabelledSample> run_requests;
  std::map<std::string, double> history_metrics;  // history.* against the endpoint's past (--history)
  std::vector<rules::Finding> diagnosis;
  // Set when SIGINT or SIGTERM cut the run short ("SIGINT"): the results are partial.
  std::string interrupted_by;
  // Set when the model could not be reached at all (Pacer::unreachable): the cause and the fix.
  std::string unreachable;
  // With --preset: {"name", "requests", "signals": [{"signal", "seen_in"}]} (run::preset_signals).
  nlohmann::json preset;
  checks::Models models;  // the target model and the small one, as asked ("" when not)
  // What the run changed in its requests because the endpoint refused them.
  std::vector<Adaptation> adaptations;
  // With an engine's /metrics scraped (--metrics-url, or the vllm, sglang, tgi and llama.cpp
  // presets): {"url", "engine", "scrapes_count", "failure"}; null without.
  nlohmann::json engine;
};

// results.json (schema infdoctor.results/1), and back: an error names what is malformed.
nlohmann::json to_json(const RunResult& r);
core::Result<RunResult> from_json(const nlohmann::json& j);

// The metrics as rules name them: "<check>.<metric>", "run.<metric>" and "history.<metric>".
std::map<std::string, double> flatten_metrics(const RunResult& r);
// One metric by the name rules use (baseline.ttft_p50_ms, run.failed_count), without
// flattening the run; nothing when it was not measured.
std::optional<double> metric(const RunResult& r, const std::string& name);

// core/exit_code.h: 0 healthy, 1 degraded (a warning), 2 critical, 3 could not run (nothing
// measured, the model unreachable, or interrupted).
int exit_code(const RunResult& r);

}  // namespace infdoctor::results
