#pragma once
// The run's model requests as one ledger: every request a check or the run itself sent, in the
// order they were sent, each read by what its sending measured (api::RequestSample: its place in
// the run, the requests in flight beside it, how long its model had been idle before it, its
// phases, its connection and proxy, its token counts and where each came from, the server's own
// timings, its outcome), not by which check sent it. Analyses (the time series, the run's tail,
// pricing the reference request, closing the books) select from it by these properties; the
// bundle's samples.jsonl is the ledger as it was written.
#include <optional>
#include <string>
#include <vector>

#include "results/run_result.h"

namespace infdoctor::results {

struct LedgerEntry {
  std::string sender;  // the check that sent it, or "calibration" for the run's own
  const api::RequestSample* sample = nullptr;
  const nlohmann::json* label = nullptr;  // what the sender varied, for its own tables

  const api::RequestSample& s() const { return *sample; }
  // Sent while no other request of the run was in flight.
  bool alone() const { return sample->in_flight <= 1; }
  // The run's first model request: whatever a model that was not serving costs, it pays.
  bool first() const { return sample->seq == 0; }
  // Its model had been left idle this long before it, by design or not (nothing for the first of
  // a model). A request after a longer idle than any back-to-back one is not a warm request.
  double idle_s() const { return sample->idle_before_ms.value_or(0) / 1000.0; }
};

// In the order sent (seq; requests without a place keep their order after those with one).
std::vector<LedgerEntry> ledger(const std::vector<checks::CheckResult>& checks,
                                const std::vector<checks::LabelledSample>& own = {});
std::vector<LedgerEntry> ledger(const RunResult& r);

// The longest idle gap that counts as back to back: a second, the time a client that sends its
// next request as the last answer ends leaves at most (Python's and Node's HTTP clients keep
// connections for 5 s and more, so nothing closes in it either).
inline constexpr double kBackToBackIdleS = 1.0;

}  // namespace infdoctor::results
