#pragma once
// Runs the chosen checks in registry order against one target and keeps every result.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/flavour.h"
#include "checks/check.h"
#include "run/engine_metrics.h"
#include "core/result.h"
#include "rules/rules.h"
#include "core/progress.h"
#include "run/pacer.h"
#include "run/plan.h"
#include "stats/series.h"

namespace infdoctor::run {

struct RunResult {
  checks::Target target;
  std::string started_at;
  std::string finished_at;
  std::vector<checks::CheckResult> checks;
  std::map<std::string, double> run_metrics;  // run.requests_count, run.rate_limited_count, ...
  std::map<std::string, double> history_metrics;  // history.* against the endpoint's past (--history)
  std::vector<rules::Finding> diagnosis;
  // Set when SIGINT or SIGTERM cut the run short ("SIGINT"): the results are partial.
  std::string interrupted_by;
  // Set when the model could not be reached at all (Pacer::unreachable): the cause and the fix.
  std::string unreachable;
  // With --preset: {"name", "requests", "signals": [{"signal", "seen_in"}]} (preset_signals).
  nlohmann::json preset;
  checks::Models models;  // the target model and the small one, as asked ("" when not)
  // What the run changed in its requests because the endpoint refused them (Pacer::adaptations).
  std::vector<Adaptation> adaptations;
  // With an engine's /metrics scraped (--metrics-url, or the vllm, sglang, tgi and llama.cpp
  // presets): {"url", "engine", "scrapes_count", "failure"}; null without.
  nlohmann::json engine;
};

// "Adapted to the endpoint: max_tokens renamed to max_completion_tokens (it said: ...)"; one line
// per adaptation, empty without any.
std::string describe_adaptations(const std::vector<Adaptation>& adaptations);
// How the model requests went out: the headers that change what intermediaries do with them, and
// the HTTP versions they were answered in ("41 over HTTP/2, 2 over HTTP/1.1"). Empty without any.
std::string describe_requests(const RunResult& r);

// The run's time series (stats/series.h): every model request that decoded enough tokens for a
// time per token and streamed them as they came, parallel ones aside, each normalised by its
// shape; which were slow, in which episodes. The rules read its metrics; report.html marks its
// slow requests.
stats::SeriesReading read_series(const std::vector<checks::CheckResult>& checks, const std::string& target);

// How many of the run's model requests carried each signal the preset expects.
nlohmann::json preset_signals(const api::Preset& preset, const RunResult& r);

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

// The metrics as rules name them: "<check>.<metric>" and "run.<metric>".
std::map<std::string, double> flatten_metrics(const RunResult& r);
// One metric by the name rules use ("baseline.ttft_p50_ms", "run.failed_count"), without
// flattening the run; nothing when it was not measured.
std::optional<double> metric(const RunResult& r, const std::string& name);
// Every name a rule may use: what the registry's checks declare, and the run's own.
std::vector<std::string> known_metrics();

// The rules of `dir`, or the embedded ones when `dir` is empty. Errors: every problem, one a line.
core::Result<rules::RuleSet> load_rules(const std::string& dir, std::vector<std::string>& warnings);

// Limits of the user's own (--slo ttft_p50_ms=2000,itl_p99_ms=80): short names or full metric names.
struct Slo {
  std::string metric;  // full name
  double limit = 0;
};
core::Result<std::vector<Slo>> parse_slos(const std::string& text);
// A violated limit is a warning finding; an unmeasured one is reported in `unmeasured`.
std::vector<rules::Finding> check_slos(const std::vector<Slo>& slos, const std::map<std::string, double>& metrics,
                                       std::vector<std::string>& unmeasured);
void rank(std::vector<rules::Finding>& findings);
// Names the place of the findings at an intermediary by what the run's answers said of it: their
// Server, Via and Content-Encoding headers, each distinct value up to two of a header; and a cold
// start by the words of the 503s that said the model was loading, when it sent any.
void name_places(RunResult& r);

// core/exit_code.h: 0 healthy, 1 degraded (a warning), 2 critical, 3 could not run (nothing
// measured, the model unreachable, or interrupted).
int exit_code(const RunResult& r);

// Reads a results.json (as `run --json` or a bundle writes it) back into a RunResult.
core::Result<RunResult> from_json(const nlohmann::json& j);

// One measured subject: the context its checks see and the pacer of its model requests.
struct Side {
  checks::CheckContext* ctx;
  Pacer* pacer;
  core::Progress* progress = nullptr;  // told which check of how many runs; none in tests
  EngineScraper* engine = nullptr;     // the engine's /metrics, read before and after each check
};

RunResult run_checks(const RunPlan& plan, const Side& side);
// The same plan against several targets, one check at a time against each before the next check,
// the first target rotating from check to check: time of day and this machine's load fall on
// all alike.
std::vector<RunResult> run_interleaved(const RunPlan& plan, const std::vector<Side>& sides);

nlohmann::json to_json(const RunResult& r);

}  // namespace infdoctor::run
