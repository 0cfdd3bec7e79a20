#pragma once
// What a run will do, computed once from its options and models: which checks, with which
// settings (a profile first, then the sweep flags, then --set), and every step each check will
// take. The plan line printed before a run and `--dry-run` are both read from planned_steps().
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/chat.h"
#include "checks/registry.h"
#include "core/result.h"
#include "run/workload.h"

namespace infdoctor::run {

// The options of a run that shape its plan (flags of `run`, `compare`, `demo`).
struct PlanOptions {
  bool quick = false;
  bool full = false;
  std::string checks;  // comma-separated ids; empty: every check (soak only with soak_minutes)
  std::string prompt_tokens, max_tokens, idle_gaps, concurrency;  // comma lists of the sweeps
  std::string load_levels, load_rates, load_mix;                  // the load ramp's, as load.* takes them
  double soak_minutes = 0;
  int max_concurrency = 0;  // 0: the concurrency check's own cap
  std::vector<std::string> resolvers;
  bool no_system_resolvers = false;
  int max_hops = 0;
  std::vector<std::string> sets;  // CHECK.NAME=VALUE
  double check_timeout_s = 120;
  std::string workload;  // --workload prompt=P,output=O,concurrency=C
  std::string body;      // --body FILE ("-": standard input): bodies of the user's own, for the replay check
  std::string slo;       // --slo NAME=LIMIT,...: the limits a load level's goodput counts requests against
  bool idle_endpoint = false;  // --idle-endpoint: nothing runs inside the idle gaps (RunPlan::idle_endpoint)
};

struct RunPlan {
  // Ids named by --checks; empty, or each +ID: the checks on by default and those added.
  std::vector<std::string> check_ids;
  checks::Options options;
  // The checks the run takes, in run order, each made once from `options` by prepare().
  std::vector<std::shared_ptr<const checks::Check>> checks;
  std::chrono::seconds check_timeout{120};
  // The whole run's deadline (0: none): a check that would start after it is skipped, and one in
  // flight ends at it. The exporter bounds a scheduled run by the target's interval.
  std::chrono::seconds run_timeout{0};
  Workload workload;  // the reference request findings are priced on
  // The idle gaps of a check that waits by design (the cold-start check's) are idle for its model,
  // not for the run: a check that sends nothing to a model (Check::runs_in_idle) is held for them.
  // True keeps them idle for the whole endpoint, for a gateway that scales to zero as a whole.
  bool idle_endpoint = false;
};

// The check `plan.checks[i]` is held for, to run inside its idle gaps: the first later check that
// waits by design, when check i runs in idle and the plan lets it; else nothing (it runs in turn).
std::optional<std::size_t> idle_host(const RunPlan& plan, std::size_t i);
// "path, transport run inside coldstart's idle gaps: ...", with when a check runs in its own turn
// instead (Check::idle_unless), or empty when nothing is held.
std::string idle_line(const RunPlan& plan);

// The text of the bodies --body names: a file, or standard input for "-"; an error when it cannot
// be read or is empty.
core::Result<std::string> read_body(const std::string& path);

// The plan the options ask for, validated; every problem in the error's detail, one a line.
core::Result<RunPlan> make_plan(const PlanOptions& o);

// Validates the plan (unknown check ids, settings against their declarations) before anything is
// sent, every problem in the error's detail, one per line; then makes the checks it takes.
core::Status prepare(RunPlan& plan);

// One step as this run will take it: a network step, a model request step with the model's
// name, or a check that will be skipped and why.
struct PlannedStep {
  std::string check;
  checks::Step step;
  std::string model;    // the model asked; empty for a network step
  std::string skipped;  // why the check's model steps will not run ("no --model"); else empty
};
// Small-model steps without a small model (or with the target as the small one) are left out:
// the check sends them to nobody.
std::vector<PlannedStep> planned_steps(const RunPlan& plan, const checks::Models& models);
checks::Cost planned_cost(const std::vector<PlannedStep>& steps);

// "plan: at most N model requests (coldstart 5, ...), about P prompt and O output tokens; budget B";
// empty when the run sends no model request.
// What the plan cannot see, said before anything is sent: "it cannot judge slowdowns over time
// ..." when it sends fewer requests than the time series needs; empty when it sends enough.
std::string series_blind_spot(const std::vector<PlannedStep>& steps);
std::string plan_line(const std::vector<PlannedStep>& steps, int max_requests);
// Every check's settings from their declarations: default, what the profiles set, what each does
// and accepts (`run --settings`).
std::string settings_text();
// Every step with its model, prompt and output tokens, and the total: `--dry-run`'s report.
std::string dry_run_text(const std::vector<PlannedStep>& steps, const api::Endpoint& ep, int max_requests);

}  // namespace infdoctor::run
