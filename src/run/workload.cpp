#include "run/workload.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "api/openai.h"
#include "checks/baseline.h"
#include "checks/concurrency.h"
#include "checks/load.h"
#include "checks/registry.h"
#include "checks/replay.h"
#include "checks/sweep.h"
#include "core/strings.h"
#include "results/ledger.h"
#include "results/run_metrics.h"
#include "stats/fit.h"

namespace infdoctor::run {

namespace rm = results::run_metric;

namespace {

constexpr const char* kWant = "--workload wants prompt=P,output=O,concurrency=C (any of them), e.g. prompt=1024,output=128";

// A check's metric, when it is a finite number.
std::optional<double> metric(const std::vector<checks::CheckResult>& checks, const checks::MetricKey& m) {
  const auto v = checks::metric_of(checks, m);
  return v && std::isfinite(*v) ? v : std::nullopt;
}

// The mean wait for a slot at the measured level of parallel streams nearest `streams` (the
// lower one on a tie); at one stream nobody waits, and the level reads its own spread (mean over
// median), near 0.
std::optional<double> queue_wait_at(const std::vector<checks::CheckResult>& checks, int streams) {
  std::optional<double> best;
  int best_distance = INT_MAX;
  for (const auto& [level, wait] : checks::level_queue_waits(checks))
    if (const int d = std::abs(level - streams); d < best_distance) {
      best_distance = d;
      best = wait;
    }
  return best;
}

// The reference request's connection setup, from the run's own requests sent one at a time and
// back to back (the cadence of a client that sends its next request as the last answer ends; the
// run's first request and those after a deliberate idle gap aside): the share that opened a new
// connection, and the median connect, tunnel and TLS of the new connections of the whole run.
// A server or proxy that keeps connections pays them rarely; one that closes each pays them on
// every request. The terms go into `out`; the setup a request pays on average comes back.
double price_setup(const std::vector<checks::CheckResult>& checks, std::map<std::string, double>& out) {
  int cadence = 0, opened = 0;
  std::vector<double> connect, tunnel, tls;
  for (const auto& e : results::ledger(checks)) {
    const api::RequestSample& s = e.s();
    if (!s.ok) continue;
    if (!s.connection_reused) {
      if (s.connect_ms) connect.push_back(*s.connect_ms);
      if (s.tunnel_ms) tunnel.push_back(*s.tunnel_ms);
      if (s.tls_ms) tls.push_back(*s.tls_ms);
    }
    if (e.first() || !e.alone() || e.idle_s() > results::kBackToBackIdleS) continue;
    if (e.label->is_object() && e.label->contains("gap_s")) continue;
    ++cadence;
    opened += !s.connection_reused;
  }
  if (cadence == 0) return 0;
  const double share = static_cast<double>(opened) / cadence;
  out[rm::workload_new_connection_ratio] = share;
  double setup = 0;
  for (const auto& [name, values] : {std::pair{rm::workload_connect_ms, &connect}, {rm::workload_tunnel_ms, &tunnel},
                                     {rm::workload_tls_ms, &tls}})
    if (auto v = stats::median(*values)) {
      out[name] = *v;
      setup += *v;
    }
  out[rm::workload_setup_ms] = share * setup;
  return share * setup;
}

}  // namespace

core::Result<Workload> parse_workload(const std::string& text) {
  Workload w;
  for (const auto& item : core::split(text)) {
    const auto eq = item.find('=');
    const std::string key = item.substr(0, eq);
    int* field = key == "prompt" ? &w.prompt_tokens : key == "output" ? &w.output_tokens : key == "concurrency" ? &w.concurrency : nullptr;
    if (!field || eq == std::string::npos)
      return core::make_error(core::ErrorCode::InvalidArgument, "--workload: '" + item + "' is not KEY=N", kWant);
    const std::string v = item.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(v.c_str(), &end, 10);
    const long low = key == "prompt" ? 0 : 1;
    if (v.empty() || *end != '\0' || errno != 0 || n < low || n > 10'000'000)
      return core::make_error(core::ErrorCode::InvalidArgument,
                              "--workload: " + key + " must be a whole number from " + std::to_string(low) + ", got '" + v + "'",
                              kWant);
    *field = static_cast<int>(n);
    if (key != "concurrency") w.sized = true;
  }
  return w;
}

std::map<std::string, double> price_workload(const Workload& given, const std::vector<checks::CheckResult>& checks) {
  std::map<std::string, double> out;
  Workload w = given;
  // The user's own request, replayed, is the reference request unless --workload sized another.
  const auto body_prompt = metric(checks, checks::replay_metric::prompt_tokens_count),
             body_output = metric(checks, checks::replay_metric::output_tokens_p50_count),
             body_bytes = metric(checks, checks::replay_metric::body_bytes);
  const bool body = !w.sized && body_prompt && body_output && body_bytes;
  if (body) {
    w.prompt_tokens = static_cast<int>(std::lround(*body_prompt));
    w.output_tokens = std::max(1, static_cast<int>(std::lround(*body_output)));
  }
  const double prompt = w.prompt_tokens, output = w.output_tokens;
  out[rm::workload_prompt_tokens_count] = prompt;
  out[rm::workload_output_tokens_count] = output;
  if (body) out[rm::workload_from_body_count] = 1;
  // Unless the workload says, its streams are the concurrency check's highest level, else the load
  // ramp's highest (the load the run was asked to try), else one.
  int streams = w.concurrency;
  if (streams == 0)
    streams = static_cast<int>(metric(checks, checks::concurrency_metric::max_level_count)
                                   .value_or(metric(checks, checks::load_metric::max_level_count).value_or(1)));
  out[rm::workload_concurrency_count] = streams;
  // Its request body as the run would send it: the per-megabyte costs are priced on these bytes.
  api::ChatRequest request;
  request.prompt = api::synthetic_prompt(w.prompt_tokens);
  request.max_tokens = w.output_tokens;
  out[rm::workload_body_bytes] = body ? *body_bytes : static_cast<double>(api::build_chat_body(request).size());

  // The network term: the round trip the requests take (through a proxy, the tunnel's).
  const auto rtt = checks::endpoint_round_trip_ms(checks);
  if (rtt) {
    out[rm::workload_network_ms] = *rtt;
    out[rm::path_rtt_ms] = *rtt;
  }
  // The first token: the prefill fit at P where the sweep ran, else the baseline's short prompt.
  std::optional<double> first;
  // Where TTFT grew faster than a line, the sweep's curve: each prompt token costs more the longer
  // the prompt, (b + growth x P / 1000) x P.
  const auto growth = metric(checks, checks::sweep_metric::prefill_growth_ms_per_1k_tokens);
  const auto slope = growth ? metric(checks, checks::sweep_metric::prefill_quad_ms_per_token) : metric(checks, checks::sweep_metric::prefill_ms_per_token);
  const auto intercept = growth ? metric(checks, checks::sweep_metric::prefill_quad_overhead_ms) : metric(checks, checks::sweep_metric::prefill_overhead_ms);
  if (slope && intercept) {
    const double prefill = std::max(0.0, *slope + growth.value_or(0.0) * prompt / 1000.0) * prompt;
    out[rm::workload_prefill_ms] = prefill;
    out[rm::workload_overhead_ms] = std::max(0.0, *intercept - rtt.value_or(0.0));
    first = std::max(0.0, *intercept) + prefill;
  } else if (auto t = metric(checks, checks::baseline_metric::ttft_p50_ms)) {
    first = *t;
  }
  std::optional<double> decode;
  if (auto tpot = metric(checks, checks::baseline_metric::tpot_p50_ms)) {
    const double growth = std::max(0.0, metric(checks, checks::sweep_metric::decode_context_ms_per_1k_tokens).value_or(0.0));
    const double at_context = *tpot + growth * prompt / 1000.0;
    out[rm::workload_tpot_ms_per_token] = at_context;
    decode = at_context * std::max(0.0, output - 1);
    out[rm::workload_decode_ms] = *decode;
  }
  // Where the load ramp ran, its requests (of the workload's shape, users in a closed loop) price
  // the wait: by the interactive response-time law a user of C waits R = C / X for each answer at
  // the throughput X the server reaches, so the queue is C / X less the service time S alone. It
  // replaces the concurrency check's reading from short requests: one queue, measured once. Of
  // that excess only the share the ramp's highest level spent before its first token is a wait;
  // the rest is each token slower beside the others (an engine that batches), not a queue.
  std::optional<double> queue;
  const auto peak = metric(checks, checks::load_metric::peak_requests_per_s),
             service = metric(checks, checks::load_metric::reference_total_p50_ms);
  if (peak && service && *peak > 0)
    queue = std::max(0.0, streams * 1000.0 / *peak - *service) *
            metric(checks, checks::load_metric::wait_share_ratio).value_or(0.0);
  else queue = queue_wait_at(checks, streams);
  if (queue) out[rm::workload_queue_ms] = *queue;
  const double setup = price_setup(checks, out);
  if (first) out[rm::workload_ttft_ms] = setup + *first;
  if (first && decode) out[rm::workload_total_ms] = setup + *first + *decode;
  return out;
}

}  // namespace infdoctor::run
