#pragma once
// The terminal report: one aligned row per check, then each check's tables (resolvers, an
// mtr-like hop table, per-address transport timings).
#include <string>

#include "results/run_result.h"

namespace infdoctor::report {

std::string render_text(const results::RunResult& r);

// A check's one line: its declared headline filled with its metrics, or why it did not run.
std::string check_headline(const checks::CheckResult& c);

// The ranked diagnosis alone (what `explain` prints).
std::string render_diagnosis(const std::vector<rules::Finding>& findings, const std::map<std::string, double>& metrics);

}  // namespace infdoctor::report
