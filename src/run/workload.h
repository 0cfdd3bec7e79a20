#pragma once
// The reference request a diagnosis prices its causes on: P prompt tokens, O output tokens, C
// streams at once (`--workload prompt=P,output=O,concurrency=C`). Its latency is the sum of the
// run's measured terms, each evaluated at that shape:
//   network   one round trip (the request out, its first byte back on a kept-alive connection)
//   overhead  the prefill fit's intercept less that round trip: the server's fixed cost
//   prefill   the fitted cost per prompt token times P; where TTFT grew faster than a line, the
//             sweep's curve at P (each token costing more the longer the prompt)
//   decode    time per output token at a context of P (the short-prompt median, plus the sweep's
//             growth per 1,000 tokens of context) times O - 1
//   queue     the concurrency check's mean wait for a slot at the measured level nearest C
// The total is the request alone (first token and decode); the queue, like a cold start or a
// retry, comes on top of it. A finding's impact_ms is its term's excess on this request, so findings rank like with like
// and a run's shares are of one request (rules/README.md).
// The defaults are those of vLLM's serving benchmark for random prompts (1,024 in, 128 out); the
// concurrency is the concurrency check's highest level, the load the run itself measured.
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"
#include "core/result.h"

namespace infdoctor::run {

struct Workload {
  int prompt_tokens = 1024;
  int output_tokens = 128;
  int concurrency = 0;  // 0: the concurrency check's highest level
  // Whether --workload named the prompt or the output. Where it did not and the user's own
  // request was replayed (--body), the reference request is theirs: the body's prompt tokens,
  // the output its answers used, its bytes.
  bool sized = false;
};

// "prompt=1024,output=128,concurrency=4", any of the three; empty gives the defaults.
core::Result<Workload> parse_workload(const std::string& text);

// The terms as run metrics (results/run_metrics.h, workload_*): the shape always, each term when what
// it reads was measured, the total when the first token and the decode were.
std::map<std::string, double> price_workload(const Workload& w, const std::vector<checks::CheckResult>& checks);

}  // namespace infdoctor::run
