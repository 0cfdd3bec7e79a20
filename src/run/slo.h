#pragma once
// The user's own limits (--slo NAME=LIMIT,...) and the metric names they and the rules may use.
// The plan reads the limits (the load check's goodput counts requests against them) and the run
// checks them (a violated one is a finding): both build on this file, neither on the other.
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/result.h"
#include "rules/rules.h"

namespace infdoctor::run {

// Every name a rule or a limit may use: what the registry's checks declare, and the run's own.
std::vector<std::string> known_metrics();

// Limits of the user's own (--slo ttft_p50_ms=2000,itl_p99_ms=80): short names or full metric names.
struct Slo {
  std::string metric;  // full name
  double limit = 0;
};
core::Result<std::vector<Slo>> parse_slos(const std::string& text);
// A limit on the reference request's latency, each once: the baseline's metric the user names, the
// run's metric of the request the diagnosis is priced on (the workload's shape, --workload or
// --body) on which the limit is judged when the run priced it, how that request is said, and the
// load check's setting that counts each of its requests against the limit (its goodput).
struct RequestLimit {
  const checks::MetricKey& measured;
  const char* priced;
  const char* what;
  const checks::Setting* load;
  // A percentile above the median: the priced request's median plus the baseline's spread from its
  // median to that percentile.
  const checks::MetricKey* median = nullptr;
};
const std::vector<RequestLimit>& request_limits();

// A violated limit is a warning finding; an unmeasured one is reported in `unmeasured`.
std::vector<rules::Finding> check_slos(const std::vector<Slo>& slos, const std::map<std::string, double>& metrics,
                                       std::vector<std::string>& unmeasured);

}  // namespace infdoctor::run
