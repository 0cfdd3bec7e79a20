#include "run/books.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "checks/baseline.h"
#include "checks/coldstart.h"
#include "checks/path.h"
#include "checks/registry.h"
#include "checks/serialization.h"
#include "checks/sweep.h"
#include "checks/transport.h"
#include "results/run_metrics.h"
#include "stats/fit.h"

namespace infdoctor::run {

namespace rm = results::run_metric;

namespace {

std::optional<double> finite(const std::vector<checks::CheckResult>& checks, const checks::MetricKey& m) {
  const auto v = checks::metric_of(checks, m);
  return v && std::isfinite(*v) ? v : std::nullopt;
}

// The measured terms, read once.
struct Terms {
  std::optional<double> rtt, tunnel, tls, transport_connect;
  std::optional<double> slope, intercept, growth, decode_growth;
  std::optional<double> target_ttft, small_ttft, target_tpot, small_tpot;
  std::optional<double> body_ms_per_mb, cold_penalty, cold_threshold_s, slow_excess, slow_factor;
  std::map<int, double> queue;

  explicit Terms(const std::vector<checks::CheckResult>& c, const std::map<std::string, double>& run) {
    rtt = finite(c, checks::path_metric::tcp_rtt_p50_ms);
    tunnel = finite(c, checks::transport_metric::tunnel_p50_ms);
    tls = finite(c, checks::transport_metric::tls_p50_ms);
    transport_connect = finite(c, checks::transport_metric::connect_p50_ms);
    growth = finite(c, checks::sweep_metric::prefill_growth_ms_per_1k_tokens);
    slope = growth ? finite(c, checks::sweep_metric::prefill_quad_ms_per_token) : finite(c, checks::sweep_metric::prefill_ms_per_token);
    intercept = growth ? finite(c, checks::sweep_metric::prefill_quad_overhead_ms) : finite(c, checks::sweep_metric::prefill_overhead_ms);
    decode_growth = finite(c, checks::sweep_metric::decode_context_ms_per_1k_tokens);
    target_ttft = finite(c, checks::baseline_metric::ttft_p50_ms);
    small_ttft = finite(c, checks::baseline_metric::small_ttft_p50_ms);
    target_tpot = finite(c, checks::baseline_metric::tpot_p50_ms);
    small_tpot = finite(c, checks::baseline_metric::small_tpot_p50_ms);
    body_ms_per_mb = finite(c, checks::serialization_metric::upload_parse_ms_per_mb);
    cold_penalty = finite(c, checks::coldstart_metric::penalty_ms);
    cold_threshold_s = finite(c, checks::coldstart_metric::threshold_s);
    if (auto it = run.find(rm::slow_tpot_excess_ms_per_token); it != run.end()) slow_excess = it->second;
    if (auto it = run.find(rm::slow_factor_ratio); it != run.end()) slow_factor = it->second;
    queue = checks::level_queue_waits(c);
  }
};

struct Phase {
  const char* name;
  const char* ms;
  const char* count;
  const char* of;
};
constexpr Phase kPhases[] = {
    {"setup", rm::unexplained_setup_ms, rm::unexplained_setup_count, rm::unexplained_setup_of_count},
    {"first_token", rm::unexplained_first_token_ms, rm::unexplained_first_token_count, rm::unexplained_first_token_of_count},
    {"generation", rm::unexplained_generation_ms_per_token, rm::unexplained_generation_count,
     rm::unexplained_generation_of_count},
};

}  // namespace

std::optional<double> median_lower_bound(std::vector<double> v) {
  const std::size_t n = v.size();
  if (n < 5) return std::nullopt;
  std::sort(v.begin(), v.end());
  // Under the median with 97.5 % confidence: the k-th smallest, k = (n - 1.96 sqrt(n)) / 2
  // (the binomial(n, 1/2) count of values under the median, normally approximated).
  const double k = std::floor((static_cast<double>(n) - 1.96 * std::sqrt(static_cast<double>(n))) / 2.0);
  return v[static_cast<std::size_t>(std::clamp(k, 0.0, static_cast<double>(n - 1)))];
}

Books close_books(const std::vector<results::LedgerEntry>& ledger, const std::vector<checks::CheckResult>& checks,
                  const std::map<std::string, double>& run_metrics, const std::vector<std::string>& slow_request_ids,
                  const std::string& target, const std::string& small) {
  Books b;
  const Terms t(checks, run_metrics);
  const std::set<std::string> slow(slow_request_ids.begin(), slow_request_ids.end());
  std::vector<double> instrument;
  for (std::size_t i = 0; i < ledger.size(); ++i) {
    const results::LedgerEntry& e = ledger[i];
    const api::RequestSample& s = e.s();
    const bool is_target = s.model == target, is_small = !small.empty() && s.model == small;
    if (!s.ok || (!is_target && !is_small)) continue;
    instrument.push_back(s.client_parse_ms + s.client_start_lag_ms.value_or(0));
    const double prompt = static_cast<double>(s.prompt_tokens.value_or(0));

    // A new connection: one round trip to connect, the proxy's tunnel, the handshake. Closed when
    // the path and transport checks measured them apart, one connection at a time; connections
    // opened beside others contend for the same path and proxy, which no term measured.
    if (e.alone() && !s.connection_reused && s.connect_ms && t.rtt && t.transport_connect) {
      const double took = *s.connect_ms + s.tunnel_ms.value_or(0) + s.tls_ms.value_or(0);
      const double predicted = *t.rtt + (s.tunnel_ms ? t.tunnel.value_or(0) : 0) + (s.tls_ms ? t.tls.value_or(0) : 0);
      b.lines.push_back({i, "setup", took, predicted, 1});
    }

    // The first token, from the request written.
    if (const auto first = checks::server_ttft_ms(s)) {
      std::optional<double> predicted;
      if (is_target && t.slope && t.intercept && s.prompt_tokens) {
        const double per_token = std::max(0.0, *t.slope + t.growth.value_or(0) * prompt / 1000.0);
        const double cached = static_cast<double>(std::min(s.cached_tokens.value_or(0), *s.prompt_tokens));
        predicted = *t.intercept + per_token * (prompt - cached);
      } else if (is_target && t.target_ttft) {
        predicted = t.target_ttft;
      } else if (is_small && t.small_ttft) {
        predicted = t.small_ttft;
      }
      // A request the time series marked slow (a slow replica, a neighbour's burst) is slower to its
      // first token too, by the factor the series measured on its tokens.
      if (predicted && t.slow_factor && slow.count(s.request_id)) *predicted *= std::max(1.0, *t.slow_factor);
      if (predicted && t.body_ms_per_mb) *predicted += std::max(0.0, *t.body_ms_per_mb) * static_cast<double>(s.bytes_sent) / 1e6;
      // Sent beside others: the wait the concurrency check measured at that many streams; a load
      // it did not measure has no term, and the request is left out rather than guessed at.
      if (predicted && !e.alone()) {
        const auto q = t.queue.find(s.in_flight);
        predicted = q == t.queue.end() ? std::nullopt : std::optional<double>(*predicted + std::max(0.0, q->second));
      }
      const nlohmann::json& label = *e.label;
      if (predicted && t.cold_penalty && t.cold_threshold_s && label.is_object() && label.contains("gap_s") &&
          label["gap_s"].is_number() && label["gap_s"].get<double>() >= *t.cold_threshold_s)
        *predicted += *t.cold_penalty;
      if (predicted && !api::arrived_as_generated(s))
        if (const auto c = api::clumps(s)) *predicted += c->first_token_wait_ms;
      if (predicted) b.lines.push_back({i, "first_token", *first, *predicted, 1});
    }

    // Generation, one stream alone that arrived as generated: the decode per token at its context,
    // a slow period's excess where the time series marked it, and the network's stalls.
    const auto tokens = api::arrived_tokens(s);
    const auto tpot = is_target ? t.target_tpot : t.small_tpot;
    if (e.alone() && api::arrived_as_generated(s) && tokens && *tokens >= 2 && s.ttft_ms && s.total_ms && tpot) {
      const double after_first = *tokens - 1;
      double per_token = *tpot + (is_target ? std::max(0.0, t.decode_growth.value_or(0)) * prompt / 1000.0 : 0.0);
      if (t.slow_excess && slow.count(s.request_id)) per_token += std::max(0.0, *t.slow_excess);
      b.lines.push_back({i, "generation", *s.total_ms - *s.ttft_ms, per_token * after_first + s.network_stall_ms, after_first});
    }
  }

  const double instrument_ms = std::max(1.0, stats::median(instrument).value_or(0.0));
  double took = 0, inside = 0;
  std::set<std::size_t> entries;
  for (const Phase& p : kPhases) {
    std::vector<double> residual, predicted;
    double per_median = 1;
    std::vector<double> pers;
    for (const auto& l : b.lines) {
      if (l.phase != p.name) continue;
      residual.push_back((l.took_ms - l.predicted_ms) / l.per);
      predicted.push_back(l.predicted_ms / l.per);
      pers.push_back(l.per);
    }
    if (auto m = stats::median(pers)) per_median = *m;
    const auto low = median_lower_bound(residual);
    const double bar = std::max(0.1 * stats::median(predicted).value_or(0.0), instrument_ms / per_median);
    if (!low || *low <= bar) continue;
    b.metrics[p.ms] = *stats::median(residual);
    b.metrics[p.count] = static_cast<double>(std::count_if(residual.begin(), residual.end(), [&](double r) { return r > bar; }));
    b.metrics[p.of] = static_cast<double>(residual.size());
  }
  for (const auto& l : b.lines) {
    if (l.took_ms <= 0) continue;
    took += l.took_ms;
    inside += std::clamp(l.predicted_ms, 0.0, l.took_ms);
    entries.insert(l.entry);
  }
  b.metrics[rm::books_requests_count] = static_cast<double>(entries.size());
  if (took > 0) b.metrics[rm::explained_ratio] = inside / took;
  return b;
}

}  // namespace infdoctor::run
