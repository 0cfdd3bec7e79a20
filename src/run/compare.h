#pragma once
// Provider A against provider B, layer by layer: the two values, their ratio, whether the
// difference is significant, and how many milliseconds of the end-to-end gap each layer explains.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run/runner.h"
#include "run/session.h"

namespace infdoctor::run {

// One term of the reference request on each side (run/workload.h).
struct TermDiff {
  std::string term;
  std::optional<double> a, b;
};

struct LayerDiff {
  std::string layer;   // "decode per token"
  std::string metric;  // as rules name it: baseline.tpot_p50_ms
  std::string unit;    // of a and b: "ms", "ms a token"
  std::string scope;   // where it costs: "every request", "per output token", "new connections", ...
  std::optional<double> a, b, ratio;  // ratio = b / a
  // "yes": the 95 % intervals do not overlap and the values differ by more than 5 %; "no": they
  // overlap, or the values are within 5 % of each other; "likely": no interval, but B and A
  // differ by 1.5x and 5 ms or more (per-token costs: 5 ms on the priced request); for a fitted
  // slope whose fits both explain their points (R² 0.9 or more), "yes" or "no" by the same bar;
  // "unclear": no interval and a smaller difference; "" unmeasured.
  std::string significant;
  double explains_ms = 0;  // of the typical request's end-to-end gap (B - A); 0 for layers outside it
};

struct Comparison {
  std::string name_a, name_b;
  // The end-to-end time of the request both sides are priced on: the reference request
  // (run.workload_total_ms) when both runs priced the same one, else the baseline's median.
  std::optional<double> total_a, total_b;
  std::string priced_on;  // which request that is, in words
  std::vector<LayerDiff> layers;
  std::string slower;                   // name of the slower side, "" when equal or unmeasured
  std::vector<std::string> explaining;  // layers that explain the gap, largest first
  // Where both priced the same reference request: its terms on each side (setup, network,
  // overhead, prefill, decode, what no term holds, the total, and the queue on top).
  std::vector<TermDiff> terms;
};

Comparison compare_runs(const results::RunResult& a, const results::RunResult& b, const std::string& name_a, const std::string& name_b);
nlohmann::json to_json(const Comparison& c);
std::string render_comparison(const Comparison& c);
// Ticket-ready summary addressed to the slower provider.
std::string render_comparison_summary(const Comparison& c, const results::RunResult& a, const results::RunResult& b);

// `infdoctor compare` after its two sessions opened: both measured together and diagnosed, the
// comparison on stdout (or as JSON to outputs.json), each side's own outputs, and with
// outputs.bundle comparison.json and summary.md beside the sides' bundles. The exit code: 0
// within 5 % end to end, 1 one side slower, 3 could not run.
int measure_and_compare(Session& a, Session& b, const std::string& name_a, const std::string& name_b,
                        const Outputs& outputs, int max_requests);

}  // namespace infdoctor::run
