#pragma once
// Runs the chosen checks in registry order against one target and keeps every result.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/flavour.h"
#include "checks/check.h"
#include "run/engine_metrics.h"
#include "core/result.h"
#include "rules/rules.h"
#include "core/progress.h"
#include "run/pacer.h"
#include "run/plan.h"
#include "results/run_result.h"

namespace infdoctor::run {

// How many of the run's model requests carried each signal the preset expects.
nlohmann::json preset_signals(const api::Preset& preset, const results::RunResult& r);

// The rules of `dir`, or the embedded ones when `dir` is empty. Errors: every problem, one a line.
core::Result<rules::RuleSet> load_rules(const std::string& dir, std::vector<std::string>& warnings);

void rank(std::vector<rules::Finding>& findings);
// Names the place of the findings at an intermediary by what the run's answers said of it: their
// Server, Via and Content-Encoding headers, each distinct value up to two of a header; and a cold
// start by the words of the 503s that said the model was loading, when it sent any.
void name_places(results::RunResult& r);

// One measured subject: the context its checks see and the pacer of its model requests.
struct Side {
  checks::CheckContext* ctx;
  Pacer* pacer;
  core::Progress* progress = nullptr;  // told which check of how many runs; none in tests
  EngineScraper* engine = nullptr;     // the engine's /metrics, read before and after each check
};

results::RunResult run_checks(const RunPlan& plan, const Side& side);
// The same plan against several targets, one check at a time against each before the next check,
// the first target rotating from check to check: time of day and this machine's load fall on
// all alike.
std::vector<results::RunResult> run_interleaved(const RunPlan& plan, const std::vector<Side>& sides);

}  // namespace infdoctor::run
