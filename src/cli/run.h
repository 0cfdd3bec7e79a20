#pragma once
// The options of `infdoctor run`, and running them: shared with `infdoctor demo` and, for the
// plan and the transport flags, `infdoctor compare`.
#include <string>

#include <CLI/CLI.hpp>

#include "api/endpoint_spec.h"
#include "run/plan.h"
#include "run/session.h"

namespace infdoctor::cli {

struct RunOptions {
  api::EndpointSpec endpoint;
  std::string model;
  std::string small_model;
  int max_requests = run::kDefaultMaxRequests;
  std::string metrics_url;  // --metrics-url; the engine presets' /metrics when unset
  run::PlanOptions plan;
  run::Outputs outputs;
  std::string rules_dir;
  std::string slo;
  std::string target_name, vantage;  // the Prometheus labels (--target-name, --vantage)
  bool dry_run = false;
  bool list_settings = false;  // --settings
  bool quiet = false;
  bool verbose = false;
};

// Runs the checklist as `infdoctor run` does and returns its exit code. `command_line` is what
// the bundle records (already redacted).
// `result`, when given, receives the run's results (the demo reads its diagnosis).
int run_with(const RunOptions& o, const std::string& command_line, results::RunResult* result = nullptr);

// The flags that shape the plan (--quick, --full, the sweeps, --checks, --set, --workload, the
// resolvers, --check-timeout...), declared once for run and compare.
void add_plan_flags(CLI::App& cmd, run::PlanOptions& p);

}  // namespace infdoctor::cli
