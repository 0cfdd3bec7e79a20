#pragma once
// The run's model requests read together: the time series of their time per token (which were
// slow, in which episodes), and the requests a ticket lists for a cause.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "results/run_result.h"
#include "stats/series.h"

namespace infdoctor::results {

// The run's time series (stats/series.h): every model request that decoded enough tokens for a
// time per token and streamed them as they came, parallel ones aside, each normalised by its
// shape; which were slow, in which episodes. The rules read its metrics; report.html marks its
// slow requests.
stats::SeriesReading read_series(const std::vector<checks::CheckResult>& checks, const std::string& target);

// A model request of the run and the check that sent it.
struct RequestRef {
  const checks::CheckResult* check;
  const api::RequestSample* sample;
};
// The run's model requests that `keep` accepts (all when empty), slowest first by the later of
// first token and end-to-end, at most `n`. With `rank`, highest rank first instead (requests
// it gives no value are left out).
using RequestRank = std::function<std::optional<double>(const api::RequestSample&)>;
// What shows a cause in one request, for ranking the requests a ticket lists: cold starts,
// queueing and prefill in the time to first token, decode and the model in the time per output
// token, the network in connect, DNS and TLS in their phases, buffering in how few separate
// arrivals carried the tokens, errors as failures. `name` is what the ranking says; empty when
// the cause has no per-request signal (the slowest then stand in).
struct CauseSignal {
  std::string name;
  RequestRank rank;
};
CauseSignal signal_of(const std::string& cause);

std::vector<RequestRef> slowest_requests(const RunResult& r, std::size_t n,
                                         const std::function<bool(const api::RequestSample&)>& keep = {},
                                         const RequestRank& rank = {});

}  // namespace infdoctor::results
