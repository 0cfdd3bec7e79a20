#pragma once
// The options of `infdoctor run`, and running them: shared with `infdoctor demo`.
#include <string>
#include <vector>

#include "cli/endpoint_flags.h"
#include "run/runner.h"

namespace infdoctor::cli {

struct RunOptions {
  EndpointFlags endpoint;
  std::string model;
  std::string small_model;
  int max_requests = 500;
  int max_concurrency = 0;  // 0: the concurrency check's own cap (64)
  bool quick = false;
  bool full = false;
  std::string prompt_tokens, max_tokens, idle_gaps, concurrency;
  double soak_minutes = 0;
  std::string checks;
  std::vector<std::string> resolvers;
  bool no_system_resolvers = false;
  std::vector<std::string> sets;
  int max_hops = 0;
  std::string json_out;
  std::string rules_dir;
  std::string slo;
  std::string prom_out;
  std::string bundle;
  std::string history;  // SQLite file of past runs (--history)
  double check_timeout_s = 120;
  bool dry_run = false;
};

// The plan of checks and options the run options ask for, validated; every problem in the
// error's detail.
core::Result<run::RunPlan> make_plan(const RunOptions& o);

// Runs the checklist as `infdoctor run` does and returns its exit code. `command_line` is what
// the bundle records (already redacted).
int run_with(const RunOptions& o, const std::string& command_line);

}  // namespace infdoctor::cli
