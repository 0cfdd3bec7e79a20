#pragma once
// How the exporter measures a target, apart from when (its schedule) and for whom (its HTTP):
// one streamed request (the probe module, /probe) or a whole checklist run (quick, default,
// full), each with its evidence bundle when asked for.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "api/chat.h"
#include "checks/check.h"
#include "core/exit_code.h"
#include "core/result.h"
#include "results/run_result.h"
#include "run/plan.h"
#include "serve/exporter.h"
#include "serve/targets.h"

namespace infdoctor::serve {

// What one measurement gave: the run (nothing when it could not start), its exit code, its length.
struct Outcome {
  std::shared_ptr<results::RunResult> result;
  int exit_code = core::kExitCouldNotRun;
  double seconds = 0;
};

// Where a measurement's log lines go: level, message and typed fields.
using Log = std::function<void(const std::string& level, const std::string& msg, const LogFields& fields)>;

// The plan a module runs: `run`'s profiles (a probe has none).
run::PlanOptions plan_options(const std::string& module);

// One streamed request to `ep`, cut at `timeout`.
Outcome probe_at(core::Result<api::Endpoint> ep, const checks::Models& models, std::chrono::milliseconds timeout);
// A probe's evidence bundle, as a run's: its one request, results.json, summary.md, repro.sh. A
// probe writes none of its own: whether it is worth keeping is known only when it has ended.
void write_probe_bundle(const std::string& path, const std::string& name, const api::Endpoint& ep,
                        const results::RunResult& r, const Log& log);

struct ChecklistOptions {
  std::string rules_dir;  // empty: the built-in rules
  std::string vantage;
};
// The target's module as a run does it, within `max_requests` and the target's interval; its
// bundle written to `bundle` unless that is empty. Nothing in `result` when it could not start.
Outcome run_checklist(const ServeTarget& t, const ChecklistOptions& options, int max_requests, const std::string& bundle,
                      const Log& log);

}  // namespace infdoctor::serve
