#include "results/requests.h"

#include <algorithm>
#include <cstdlib>

#include "checks/sweep.h"
#include "core/clock.h"
#include "http/client.h"
#include "results/ledger.h"

namespace infdoctor::results {
namespace {

// The replica a header named ("x-served-by replica-2"), or "".
std::string replica_of(const api::RequestSample& s) {
  for (const auto name : http::kReplicaHeaders)
    if (auto it = s.headers.find(std::string(name)); it != s.headers.end() && !it->second.empty())
      return std::string(name) + " " + it->second;
  return {};
}

}  // namespace

// Requests that go into the run's time series: every model request that decoded enough tokens
// for a time per token and streamed them as they came, except the concurrency check's parallel
// ones, whose tokens are slower by design (its own rules read them). Each is normalised by its
// shape: the target model's time per token less what its context adds (the sweep's slope per
// 1,000 prompt tokens), so a long prompt's slower decode is not read as a slow moment.
stats::SeriesReading read_series(const std::vector<checks::CheckResult>& checks, const std::string& target) {
  double per_context_token_ms = 0;
  if (auto v = checks::metric_of(checks, checks::sweep_metric::decode_context_ms_per_1k_tokens))
    per_context_token_ms = std::max(0.0, *v) / 1000.0;
  std::vector<stats::SeriesPoint> points;
  for (const auto& e : ledger(checks)) {
    const api::RequestSample& s = e.s();
    if (!s.ok || !s.tpot_ms || !s.output_tokens || *s.output_tokens < 8) continue;
    // A stream that arrived in clumps (an intermediary holding it) times the clumps, not the
    // decode: its time per token is left out, as the buffering rules read it.
    if (!api::arrived_as_generated(s)) continue;
    // Requests sent while others were in flight decode in a batch with them: their pace is the
    // concurrency's (the concurrency and load checks read it), not the clock's.
    if (!e.alone()) continue;
    const auto at = core::parse_rfc3339_utc(s.started_at);
    if (!at) continue;
    double tpot = *s.tpot_ms;
    if (s.model == target && s.prompt_tokens) tpot -= per_context_token_ms * static_cast<double>(*s.prompt_tokens);
    points.push_back({*at, s.model, std::max(0.0, tpot), s.request_id, replica_of(s), stats::speed_turn(s.itl_ms, {api::kStallMinMs, api::kStallOverMedian})});
  }
  return stats::read_series(std::move(points));
}

CauseSignal signal_of(const std::string& cause) {
  using S = api::RequestSample;
  const auto field = [](std::optional<double> S::*m) { return [m](const S& s) { return s.*m; }; };
  // The errors family has no cause of its own: its requests are the failed ones.
  const std::string_view signal = cause == "errors" ? "failed" : rules::cause_signal(cause);
  // A first token shows the cause net of what others made it wait: the queue the server reported
  // for it (Server-Timing's queue, TGI's x-queue-time), and, but for queueing itself, requests
  // sent beside others are not the ones to show (their wait is the concurrency's).
  if (signal == "ttft")
    return {"time to first token, net of the server's queue",
            [queueing = cause == "queueing"](const S& s) -> std::optional<double> {
              if (!s.ttft_ms || (!queueing && s.in_flight > 1)) return std::nullopt;
              double queue = 0;
              if (auto it = s.server_timing_ms.find("queue"); it != s.server_timing_ms.end()) queue = it->second;
              else if (auto h = s.headers.find("x-queue-time"); h != s.headers.end()) queue = std::atof(h->second.c_str());
              return queueing ? *s.ttft_ms : *s.ttft_ms - queue;
            }};
  if (signal == "tpot") return {"time per output token", field(&S::tpot_ms)};
  if (signal == "total") return {"end-to-end time", field(&S::total_ms)};
  if (signal == "connect") return {"connect time", field(&S::connect_ms)};
  if (signal == "dns") return {"DNS time", field(&S::dns_ms)};
  if (signal == "tls") return {"TLS time", field(&S::tls_ms)};
  if (signal == "network_stall")
    return {"network stall", [](const S& s) -> std::optional<double> { return s.network_stall_ms; }};
  if (signal == "shed") return {"shed first", [](const S& s) -> std::optional<double> { return s.overloaded ? 1.0 : 0.0; }};
  if (signal == "arrivals")  // tokens per separate arrival: high when the stream comes in clumps
    return {"tokens per arrival", [](const S& s) -> std::optional<double> {
              const auto a = api::arrivals_per_token(s);
              if (!a || *a <= 0) return std::nullopt;
              return 1.0 / *a;
            }};
  if (signal == "failed") return {"failed first", [](const S& s) -> std::optional<double> { return s.ok ? 0.0 : 1.0; }};
  return {};
}

std::vector<RequestRef> slowest_requests(const RunResult& r, std::size_t n,
                                         const std::function<bool(const api::RequestSample&)>& keep,
                                         const RequestRank& rank) {
  std::vector<RequestRef> out;
  for (const auto& c : r.checks)
    for (const auto& req : c.requests)
      if ((!keep || keep(req.sample)) && (!rank || rank(req.sample))) out.push_back({&c, &req.sample});
  const auto took = [&](const RequestRef& x) {
    if (rank) return *rank(*x.sample);
    return std::max(x.sample->ttft_ms.value_or(-1), x.sample->total_ms.value_or(-1));
  };
  std::stable_sort(out.begin(), out.end(), [&](const RequestRef& a, const RequestRef& b) { return took(a) > took(b); });
  if (out.size() > n) out.resize(n);
  return out;
}

}  // namespace infdoctor::results
