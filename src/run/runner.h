#pragma once
// Runs the chosen checks in registry order against one target and keeps every result.
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/result.h"

namespace infdoctor::run {

struct RunResult {
  checks::Target target;
  std::string started_at;
  std::string finished_at;
  std::vector<checks::CheckResult> checks;
};

struct RunPlan {
  std::vector<std::string> check_ids;  // empty: every registered check
  checks::Options options;
  std::chrono::seconds check_timeout{120};
};

// Validates the plan (unknown check ids, bad options) before anything is sent; every problem is
// in the error's detail, one per line.
core::Status validate(const RunPlan& plan);

RunResult run_checks(const RunPlan& plan, checks::CheckContext& ctx);

nlohmann::json to_json(const RunResult& r);

}  // namespace infdoctor::run
