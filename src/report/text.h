#pragma once
// The terminal report: one aligned row per check, then each check's tables (resolvers, an
// mtr-like hop table, per-address transport timings).
#include <string>

#include "run/runner.h"

namespace infdoctor::report {

std::string render_text(const run::RunResult& r);

}  // namespace infdoctor::report
