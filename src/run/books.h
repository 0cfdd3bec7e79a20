#pragma once
// Closing the books of a run: for each of the run's requests, what the measured terms predict for
// each phase against what the request took. The terms are what the checks measured apart (the
// path's round trip, the transport check's tunnel and TLS, the sweep's overhead and prefill per
// token, the baseline's decode per token and the sweep's growth with context, the serialization
// check's cost per megabyte, the concurrency check's wait at each level, the cold-start penalty
// after its threshold, the run's slow requests (by the factor the time series measured), a clumped
// stream's hold, the network's stalls);
// the requests are the ledger's (results/ledger.h). Three phases:
//   setup        a new connection's connect, tunnel and TLS;
//   first token  from the request written to its first content event;
//   generation   from the first content event to the last, per output token.
// A phase whose residual (took - predicted) is positive beyond what the run's own spread allows is
// reported as unexplained, in that phase, with the requests that show it: never given to the
// nearest named cause. A residual is beyond the spread when the 95 % lower bound of its median
// (the order statistic a sign test gives) is above both a tenth of the phase's predicted median
// (the share the run may leave unexplained and still explain 90 % of it) and the instrument's own
// error on one request (its parse and hand-off time, 1 ms at least).
// The books also say how much of the run's measured time the terms explain: of the time the
// priced phases took, the part inside their prediction.
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"
#include "results/ledger.h"

namespace infdoctor::run {

// One priced phase of one request.
struct BookLine {
  std::size_t entry = 0;  // index into the ledger given
  std::string phase;      // "setup", "first_token", "generation"
  double took_ms = 0, predicted_ms = 0;
  double per = 1;  // generation: the output tokens after the first; else 1
};

struct Books {
  std::vector<BookLine> lines;
  std::map<std::string, double> metrics;  // results::run_metric::explained_ratio, unexplained_*
};

// `run_metrics` holds the workload's terms already priced (price_workload) and the time series'
// reading; `checks` the measured terms.
Books close_books(const std::vector<results::LedgerEntry>& ledger, const std::vector<checks::CheckResult>& checks,
                  const std::map<std::string, double>& run_metrics, const std::vector<std::string>& slow_request_ids,
                  const std::string& target, const std::string& small);

// The 95 % lower bound of the median of `v` (distribution-free: the order statistic a sign test
// puts under the median with 97.5 % confidence, normal approximation); nothing under 5 values.
std::optional<double> median_lower_bound(std::vector<double> v);

}  // namespace infdoctor::run
