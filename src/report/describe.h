#pragma once
// The prose of a run, written once and read by the text report, summary.md and report.html: the
// reference request it was priced on, what it adapted to, how its requests went out, what the
// engine's own metrics said.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/run_result.h"

namespace infdoctor::report {

// "Priced on a reference request of 1024 prompt and 128 output tokens at 16 streams: ..." from
// the run's metrics (a bundle read back, too); empty when the run priced none.
std::string describe_workload(const std::map<std::string, double>& run_metrics);
// "Adapted to the endpoint: max_tokens renamed to max_completion_tokens (it said: ...)"; one line
// per adaptation, empty without any.
std::string describe_adaptations(const std::vector<results::Adaptation>& adaptations);
// How the model requests went out: the headers that change what intermediaries do with them, and
// the HTTP versions they were answered in ("answered 41 over HTTP/2 and 2 over HTTP/1.1"). Empty
// without any.
std::string describe_requests(const results::RunResult& r);
// One line from results.json's "engine" and the run metrics: what the engine said, or why its
// /metrics could not be read. Empty when none was scraped.
std::string describe_engine(const nlohmann::json& engine, const std::map<std::string, double>& metrics);

}  // namespace infdoctor::report
