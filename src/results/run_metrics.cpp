#include "results/run_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "checks/registry.h"
#include "core/strings.h"
#include "results/ledger.h"
#include "results/requests.h"
#include "stats/fit.h"

namespace infdoctor::results {
namespace {

// The run's own tail of time to first token: every request of a shape sent three times or more
// (the same check, model, prompt tokens and body size, one stream at a time) against the median of
// its shape. The run's first model request and the requests sent after a deliberate idle gap are
// left out: they are what the tail is held against (coldstart.first_request_beyond_tail).
std::map<std::string, double> ttft_tail_metrics(const std::vector<checks::CheckResult>& checks) {
  std::map<std::string, std::vector<double>> shapes;
  for (const auto& e : ledger(checks)) {
    const api::RequestSample& s = e.s();
    if (e.first() || !e.alone() || !s.ok) continue;
    const nlohmann::json& label = *e.label;
    if (label.is_object() && (label.contains("gap_s") || label.value("phase", "") == "first")) continue;
    const auto t = checks::server_ttft_ms(s);
    if (!t || !s.prompt_tokens) continue;
    shapes[e.sender + "|" + s.model + "|" + std::to_string(*s.prompt_tokens) + "|" + std::to_string(s.bytes_sent / 256)]
        .push_back(*t);
  }
  std::vector<double> ratios;
  for (const auto& [_, ttfts] : shapes) {
    if (ttfts.size() < 3) continue;
    const double med = *stats::median(ttfts);
    if (med <= 0) continue;
    for (const double t : ttfts) ratios.push_back(t / med);
  }
  std::map<std::string, double> m;
  m[run_metric::ttft_tail_samples_count] = static_cast<double>(ratios.size());
  if (!ratios.empty()) m[run_metric::ttft_worst_ratio] = *std::max_element(ratios.begin(), ratios.end());
  return m;
}

// The share of the run's model requests answered "overloaded", over all of them, over those sent
// one at a time and over the concurrency check's parallel ones: capacity that sheds load as
// concurrency grows shows more of it in the parallel share.
std::map<std::string, double> overload_metrics(const std::vector<checks::CheckResult>& checks) {
  int all = 0, shed = 0, parallel = 0, parallel_shed = 0;
  for (const auto& e : ledger(checks)) {
    const api::RequestSample& s = e.s();
    if (!s.ok && !api::is_failure(s)) continue;  // a stated limit or the run's own deadline
    const bool many = !e.alone();
    ++all;
    parallel += many;
    shed += s.overloaded;
    parallel_shed += many && s.overloaded;
  }
  std::map<std::string, double> m;
  if (all > 0) m[run_metric::overloaded_share_ratio] = static_cast<double>(shed) / all;
  if (parallel > 0) m[run_metric::overloaded_parallel_share_ratio] = static_cast<double>(parallel_shed) / parallel;
  if (all > parallel) m[run_metric::overloaded_sequential_share_ratio] = static_cast<double>(shed - parallel_shed) / (all - parallel);
  return m;
}

// The path's loss as the run's own connections saw it (http/tcp_info.h): retransmissions and
// out-of-order arrivals, connects that waited out a lost SYN (Linux's first SYN timeout is 1 s),
// and the streams' gaps: the network's (the loss counters rose across them) and the server's
// stalls (api::RequestSample::stalls). Each gap is about one segment: the share of gaps the
// network held is the path's loss as the stream met it.
std::map<std::string, double> loss_metrics(const std::vector<checks::CheckResult>& checks) {
  double retransmits = 0, out_of_order = 0, with_loss = 0, measured = 0, slow_connects = 0, connects = 0;
  double streams = 0, gaps = 0, stalls = 0, network_stalls = 0, stall_ms = 0, network_stall_ms = 0;
  std::vector<double> rtts;
  for (const auto& c : checks)
    for (const auto& labelled : c.requests) {
      const api::RequestSample& s = labelled.sample;
      if (s.connect_ms) {
        ++connects;
        if (*s.connect_ms >= 1000) ++slow_connects;
      }
      if (s.tcp_rtt_ms && *s.tcp_rtt_ms > 0) rtts.push_back(*s.tcp_rtt_ms);
      if (s.tcp_retransmits && s.tcp_out_of_order) {
        ++measured;
        retransmits += static_cast<double>(*s.tcp_retransmits);
        out_of_order += static_cast<double>(*s.tcp_out_of_order);
        with_loss += *s.tcp_retransmits + *s.tcp_out_of_order > 0;
      }
      if (s.ok && s.itl_ms.size() >= 3 && api::arrived_as_generated(s)) {
        ++streams;
        gaps += static_cast<double>(s.itl_ms.size());
        stalls += static_cast<double>(s.stalls);
        network_stalls += static_cast<double>(s.network_stalls);
        stall_ms += s.stall_ms;
        network_stall_ms += s.network_stall_ms;
      }
    }
  std::map<std::string, double> m;
  if (measured > 0) {
    m[run_metric::tcp_measured_count] = measured;
    m[run_metric::tcp_retransmits_count] = retransmits;
    m[run_metric::tcp_out_of_order_count] = out_of_order;
    m[run_metric::tcp_loss_requests_ratio] = with_loss / measured;
  }
  if (connects > 0) m[run_metric::slow_connects_count] = slow_connects;
  if (auto v = stats::median(rtts)) m[run_metric::tcp_rtt_p50_ms] = *v;
  if (streams > 0) {
    m[run_metric::stall_streams_count] = streams;
    m[run_metric::stalls_count] = stalls;
    m[run_metric::network_stalls_count] = network_stalls;
    m[run_metric::network_stall_per_stream_ms] = network_stall_ms / streams;
    m[run_metric::server_stall_per_stream_ms] = stall_ms / streams;
    if (gaps > 0) m[run_metric::loss_gap_ratio] = network_stalls / gaps;
  }
  return m;
}

// What gateways say of themselves in their response headers, over the run's model requests.
std::map<std::string, double> gateway_metrics(const std::vector<checks::CheckResult>& checks) {
  std::vector<double> overhead, utilization, remaining, limit;
  int cache_hits = 0;
  const auto number = [](const std::string& v) -> std::optional<double> {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || !std::isfinite(x)) return std::nullopt;
    return x;
  };
  for (const auto& c : checks)
    for (const auto& labelled : c.requests) {
      const api::RequestSample& s = labelled.sample;  // a lambda may not capture a structured binding (C++17)
      const auto h = [&](const char* name) -> const std::string* {
        auto it = s.headers.find(name);
        return it == s.headers.end() ? nullptr : &it->second;
      };
      if (auto* v = h("x-litellm-overhead-duration-ms"))
        if (auto x = number(*v)) overhead.push_back(*x);
      if (auto* v = h("cf-aig-cache-status"); v && core::lower(*v) == "hit") ++cache_hits;
      if (auto* v = h("azure-openai-deployment-utilization"))  // a percentage, "12.5%"
        if (auto x = number(*v)) utilization.push_back(*x / 100.0);
      for (const char* name : {"x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-remaining"})
        if (auto* v = h(name))
          if (auto x = number(*v)) remaining.push_back(*x);
      for (const char* name : {"x-ratelimit-limit-tokens", "anthropic-ratelimit-tokens-limit"})
        if (auto* v = h(name))
          if (auto x = number(*v); x && *x > 0) limit.push_back(*x);
    }
  std::map<std::string, double> m;
  if (auto v = stats::median(overhead)) m[run_metric::gateway_overhead_p50_ms] = *v;
  m[run_metric::gateway_cache_hits_count] = cache_hits;
  if (!utilization.empty()) m[run_metric::deployment_utilization_max_ratio] = *std::max_element(utilization.begin(), utilization.end());
  if (!remaining.empty()) m[run_metric::ratelimit_remaining_tokens_min_count] = *std::min_element(remaining.begin(), remaining.end());
  if (!limit.empty()) m[run_metric::ratelimit_limit_tokens_count] = *std::min_element(limit.begin(), limit.end());
  return m;
}

// The run's time series (stats/series.h) as metrics.
std::map<std::string, double> series_metrics(const stats::SeriesReading& series) {
  std::map<std::string, double> m;
  m[run_metric::series_samples_count] = static_cast<double>(series.samples);
  if (series.samples > 0) m[run_metric::series_span_s] = series.span_s;
  if (series.runs_expected) {
    m[run_metric::slow_runs_count] = static_cast<double>(series.runs);
    m[run_metric::slow_runs_expected_count] = *series.runs_expected;
    m[run_metric::slow_runs_sd_count] = *series.runs_sd;
  }
  if (!series.slow_share) return m;  // the rest from kMinSamples requests on
  m[run_metric::slow_share_ratio] = *series.slow_share;
  m[run_metric::slow_share_low_ratio] = *series.slow_share_low;
  m[run_metric::slow_episodes_count] = static_cast<double>(series.episodes);
  if (series.slow_excess_ms_per_token) m[run_metric::slow_tpot_excess_ms_per_token] = *series.slow_excess_ms_per_token;
  if (series.period_s) m[run_metric::slow_period_s] = *series.period_s;
  if (series.slow_factor) m[run_metric::slow_factor_ratio] = *series.slow_factor;
  m[run_metric::turned_slow_count] = static_cast<double>(series.turned_slow);
  m[run_metric::turned_fast_count] = static_cast<double>(series.turned_fast);
  m[run_metric::replicas_count] = static_cast<double>(series.replicas.size());
  if (series.worst_replica_share) {
    m[run_metric::slow_replica_share_ratio] = *series.worst_replica_share;
    m[run_metric::slow_elsewhere_share_low_ratio] = *series.elsewhere_share_low;
  }
  return m;
}

// Where the run's token counts came from, and what the target's streams say of tokens: the
// bytes of text per token where usage gave both, the events per token where the count is known.
std::map<std::string, double> token_metrics(const std::vector<checks::CheckResult>& checks, const std::string& target) {
  double calibrated = 0, unknown = 0;
  std::vector<double> bytes, events;
  for (const auto& e : ledger(checks)) {
    const api::RequestSample& s = e.s();
    if (!s.ok || s.content_events == 0) continue;
    if (s.output_tokens_source == api::kTokensCalibrated) ++calibrated;
    if (!s.output_tokens) ++unknown;
    if (s.model != target) continue;
    if (auto b = api::bytes_per_token(s)) bytes.push_back(*b);
    if (s.events_per_token) events.push_back(*s.events_per_token);
  }
  std::map<std::string, double> m;
  m[run_metric::tokens_calibrated_count] = calibrated;
  m[run_metric::tokens_unknown_count] = unknown;
  if (auto v = stats::median(bytes)) m[run_metric::bytes_per_token_ratio] = *v;
  if (auto v = stats::median(events)) m[run_metric::events_per_token_ratio] = *v;
  return m;
}

// The route the requests took: how many went through a proxy, and what its tunnels cost.
std::map<std::string, double> route_metrics(const std::vector<checks::CheckResult>& checks) {
  double via = 0;
  std::vector<double> tunnels;
  for (const auto& e : ledger(checks)) {
    via += !e.s().proxy.empty();
    if (e.s().tunnel_ms) tunnels.push_back(*e.s().tunnel_ms);
  }
  std::map<std::string, double> m;
  m[run_metric::via_proxy_count] = via;
  if (auto v = stats::median(tunnels)) m[run_metric::tunnel_p50_ms] = *v;
  return m;
}

// The run's first request against its own evidence, so that a slow first token is not taken for
// the server's start-up unless the server says so: what the server reported spending on it over
// what it reported for the same shape afterwards, and the segments its connection lost before the
// first response byte (each costs a retransmission timeout, 1 s for a SYN, RFC 6298).
std::map<std::string, double> first_request_metrics(const std::vector<checks::CheckResult>& checks) {
  std::map<std::string, double> m;
  const auto book = ledger(checks);
  if (book.empty() || !book.front().first()) return m;
  const api::RequestSample& first = book.front().s();
  if (first.tcp_loss_before_first_byte) m[run_metric::first_request_loss_count] = static_cast<double>(*first.tcp_loss_before_first_byte);
  if (!first.ok || !first.server_processing_ms) return m;
  std::vector<double> others;
  for (const auto& e : book) {
    const api::RequestSample& s = e.s();
    if (e.first() || !e.alone() || !s.ok || !s.server_processing_ms || e.sender != book.front().sender || s.model != first.model ||
        s.prompt_tokens != first.prompt_tokens || s.bytes_sent / 256 != first.bytes_sent / 256)
      continue;
    others.push_back(*s.server_processing_ms);
  }
  if (auto v = stats::median(others)) m[run_metric::first_request_server_excess_ms] = *first.server_processing_ms - *v;
  return m;
}

}  // namespace

const std::vector<checks::MetricInfo>& run_metrics() {
  static const std::vector<checks::MetricInfo> k = {
      {run_metric::requests_count, "count", "model requests sent", {.history = true}},
      {run_metric::failed_count, "count", "model requests that failed, all kinds", {.history = true}},
      {run_metric::timeout_count, "count", "model requests that timed out"},
      {run_metric::broken_stream_count, "count", "streams closed, reset, malformed, cut by an error event, ended without their terminator, or too large"},
      {run_metric::server_error_count, "count", "answers with an HTTP 5xx status"},
      {run_metric::tls_failed_count, "count", "requests whose TLS handshake or verification failed"},
      {run_metric::tls_verify_off, "flag", "1 when certificates were not verified (--insecure over https)"},
      {run_metric::client_wakes_count, "count", "wakes of infdoctor's own watch thread over the run, one asked every 10 ms (run/wake_watch.h)"},
      {run_metric::client_wake_late_p50_ms, "ms", "how late the client host woke infdoctor's watch thread, median: the wait for a CPU its timings meet too"},
      {run_metric::client_wake_late_p99_ms, "ms", "how late the client host woke infdoctor's watch thread, 99th percentile"},
      {run_metric::client_wake_late_max_ms, "ms", "how late the client host woke infdoctor's watch thread, at worst"},
      {run_metric::rate_limited_count, "count", "answers with HTTP 429"},
      {run_metric::rate_limited_tokens_count, "count", "of those 429s, the ones that named the token quota (tokens per minute) in their words or headers"},
      {run_metric::retry_wait_ms, "ms", "time spent waiting out Retry-After and backoff"},
      {run_metric::overloaded_count, "count",
       "answers that said the provider is overloaded: 503 with its words (overloaded, capacity), or Anthropic's 529"},
      {run_metric::overload_wait_ms, "ms", "the waits those answers asked for (Retry-After, else the backoff), added up"},
      {run_metric::overloaded_share_ratio, "ratio", "share of the run's model requests answered overloaded"},
      {run_metric::overloaded_sequential_share_ratio, "ratio", "the same share over the requests sent one at a time"},
      {run_metric::overloaded_parallel_share_ratio, "ratio", "the same share over the concurrency check's parallel requests"},
      {run_metric::model_loading_count, "count", "answers of 503 that said the model is loading (the run waited and sent the request again)"},
      {run_metric::model_loading_wait_max_ms, "ms", "the longest a request waited, from its first try, for the model to load before it was answered"},
      {run_metric::cached_prompts_count, "count",
       "answers that reported prompt tokens served from the provider's cache (every prompt of a run is unique)"},
      // The run's requests as one time series (stats/series.h).
      {run_metric::series_samples_count, "count", "requests in the time series: every one with 8 or more output tokens that arrived as they came, parallel ones aside"},
      {run_metric::series_span_s, "s", "from the first request of the time series to its last"},
      {run_metric::slow_share_ratio, "ratio", "share of the time series at twice its model's usual time per token (its 25th percentile) or more (from 20 requests on)"},
      {run_metric::slow_share_low_ratio, "ratio", "the 95 % lower bound of that share (Wilson score interval)"},
      {run_metric::slow_episodes_count, "count", "runs of slow requests in a row"},
      {run_metric::slow_period_s, "s", "median gap between the starts of slow episodes (three or more)"},
      {run_metric::slow_tpot_excess_ms_per_token, "ms", "median extra time per token of the slow requests over their model's usual time per token"},
      {run_metric::slow_factor_ratio, "ratio", "median over the slow requests of their time per token over their model's usual time per token"},
      {run_metric::slow_runs_count, "count", "runs of slow requests in a row in each model's own order, added up (models with two slow and two usual requests or more)"},
      {run_metric::slow_runs_expected_count, "count", "the runs the same slow requests would make if each were slow by chance, in a random order (from 20 requests)"},
      {run_metric::slow_runs_sd_count, "count", "that number's standard deviation"},
      {run_metric::turned_slow_count, "count", "requests of the time series whose stream fell to half its pace or less in mid-stream (stats/series.h: the split that differs most, 12 gaps or more each side; from 20 requests)"},
      {run_metric::turned_fast_count, "count", "requests of the time series whose stream ran twice its pace or more in mid-stream (from 20 requests)"},
      {run_metric::replicas_count, "count", "replicas the answers named in x-served-by, x-replica, fly-instance or x-backend-server"},
      {run_metric::slow_replica_share_ratio, "ratio", "with two named replicas or more: the share of slow requests on the replica with the most of them"},
      {run_metric::slow_elsewhere_share_low_ratio, "ratio", "the 95 % lower bound (Wilson) of the share of slow requests on the other replicas"},
      // The run's own tail of time to first token (run/runner.cpp).
      {run_metric::ttft_tail_samples_count, "count",
       "requests of shapes sent three times or more, one stream at a time, held against their shape's median TTFT (the run's first request and those after idle gaps aside)"},
      {run_metric::ttft_worst_ratio, "ratio", "the slowest of them over its shape's median TTFT: the worst tail this run saw"},
      // The path's loss as the run's own connections saw it (TCP_INFO, http/tcp_info.h).
      {run_metric::tcp_measured_count, "count", "model requests whose connection's TCP counters were read before and after"},
      {run_metric::tcp_retransmits_count, "count", "segments this end sent again over those requests (tcpi_total_retrans), SYNs included"},
      {run_metric::tcp_out_of_order_count, "count", "segments that arrived past a hole over those requests (tcpi_rcv_ooopack): the peer's lost ones"},
      {run_metric::tcp_loss_requests_ratio, "ratio", "share of those requests with a retransmission or an out-of-order segment"},
      {run_metric::tcp_rtt_p50_ms, "ms", "median smoothed round trip (tcpi_rtt) of the requests' connections at their end"},
      {run_metric::slow_connects_count, "count", "TCP connects that took a second or more: a lost SYN waits out Linux's first SYN timeout of 1 s"},
      {run_metric::stall_streams_count, "count", "streams that arrived as generated, read for stalls"},
      {run_metric::network_stalls_count, "count", "gaps between content events across which the connection's retransmissions or out-of-order segments rose: the network's"},
      {run_metric::loss_gap_ratio, "ratio", "those gaps over all the streams' gaps (about one segment each): the path's loss as the streams met it"},
      {run_metric::network_stall_per_stream_ms, "ms", "what those gaps took beyond the stream's median gap, per stream"},
      {run_metric::stalls_count, "count", "the server's stalls: gaps of 200 ms (TCP_RTO_MIN) and four times the stream's median gap or more, without a loss sign"},
      {run_metric::server_stall_per_stream_ms, "ms", "what those stalls took beyond the median gap, per stream"},
      // What gateways say of themselves in response headers.
      {run_metric::gateway_overhead_p50_ms, "ms", "median x-litellm-overhead-duration-ms: the time LiteLLM's proxy says it added"},
      {run_metric::gateway_cache_hits_count, "count", "answers Cloudflare AI Gateway served from its cache (cf-aig-cache-status: HIT)"},
      {run_metric::deployment_utilization_max_ratio, "ratio", "highest azure-openai-deployment-utilization: the Azure deployment's load"},
      {run_metric::ratelimit_remaining_tokens_min_count, "count",
       "lowest x-ratelimit-remaining-tokens (anthropic-ratelimit-tokens-remaining): the token budget left in the window"},
      {run_metric::ratelimit_limit_tokens_count, "count", "x-ratelimit-limit-tokens (anthropic-ratelimit-tokens-limit): the account's tokens-per-minute quota"},
      // The engine's own /metrics, scraped before and after each check (run/engine_metrics.h).
      {run_metric::engine_scrapes_count, "count", "scrapes of the engine's /metrics that were read"},
      {run_metric::engine_waiting_max_count, "count", "most requests the engine had waiting at any scrape"},
      {run_metric::engine_running_max_count, "count", "most requests the engine had running at any scrape"},
      {run_metric::engine_kv_cache_usage_max_ratio, "ratio", "the engine's largest KV cache use at any scrape"},
      {run_metric::engine_preemptions_count, "count", "sequences the engine preempted during the run"},
      {run_metric::engine_queue_time_mean_ms, "ms", "the engine's mean queue time of the requests it finished during the run"},
      {run_metric::engine_ttft_mean_ms, "ms", "the engine's mean time to first token (from arrival) during the run"},
      {run_metric::engine_prefix_cache_hit_ratio, "ratio", "prompt tokens the engine found in its prefix cache during the run, of those it looked up"},
      {run_metric::engine_spec_draft_tokens_count, "count", "draft tokens the engine's speculative decoding proposed during the run"},
      {run_metric::engine_spec_acceptance_ratio, "ratio",
       "of those, the share the target model accepted: on the run's high-entropy prompts, near what real traffic gets"},
      {run_metric::engine_concurrency_requests_count, "count", "requests the engine finished during the concurrency check"},
      {run_metric::engine_concurrency_queue_time_mean_ms, "ms", "the engine's mean queue time of those requests"},
      // The reference request findings are priced on (--workload, run/workload.h).
      {run_metric::workload_prompt_tokens_count, "count", "the reference request's prompt tokens (--workload prompt=, default 1024)"},
      {run_metric::workload_output_tokens_count, "count", "the reference request's output tokens (--workload output=, default 128)"},
      {run_metric::workload_concurrency_count, "count", "the reference request's streams at once (--workload concurrency=, default the concurrency check's highest level)"},
      {run_metric::workload_body_bytes, "bytes", "the reference request's body, as the run sends a prompt of that length"},
      {run_metric::workload_from_body_count, "count",
       "1 when the reference request is the user's own (--body, without --workload sizing another): its prompt, output and bytes"},
      {run_metric::workload_network_ms, "ms", "the reference request's network time: one round trip of the path"},
      {run_metric::path_rtt_ms, "ms",
       "the round trip the requests cross to the endpoint: the path check's TCP round trip, or through a proxy, a request and its answer over an open tunnel (the transport check's reused first byte), since the path check then reaches only the proxy"},
      {run_metric::workload_overhead_ms, "ms", "the reference request's fixed cost before its first token: the prefill fit's intercept less the round trip"},
      {run_metric::workload_prefill_ms, "ms", "the reference request's prefill: the fitted cost per prompt token times its prompt tokens"},
      {run_metric::workload_tpot_ms_per_token, "ms", "the reference request's time per output token at its context: the baseline's, plus the sweep's growth with context"},
      {run_metric::workload_decode_ms, "ms", "the reference request's decode: that time per token times its output tokens after the first"},
      {run_metric::workload_ttft_ms, "ms", "the reference request's first token: its connection setup, then the first token at its prompt"},
      {run_metric::workload_queue_ms, "ms", "the reference request's mean wait for a slot at the concurrency check's level nearest its streams"},
      {run_metric::workload_total_ms, "ms", "the reference request's end-to-end time alone: its connection setup, its first token, then decode (the queue comes on top)"},
      {run_metric::typical_total_ms, "ms",
       "the median end-to-end time of the requests sent as the user sends them (the baseline's target model): what findings are shares of where no reference request was priced"},
      {run_metric::workload_new_connection_ratio, "ratio",
       "of the run's requests sent one at a time, back to back (the run's first aside), the share that opened a new connection: how often the reference request pays its connection's setup"},
      {run_metric::workload_connect_ms, "ms", "median TCP connect of the run's new connections (to the proxy, through one)"},
      {run_metric::workload_tunnel_ms, "ms", "median time the proxy took to open a tunnel (CONNECT) on the run's new connections"},
      {run_metric::workload_tls_ms, "ms", "median TLS handshake of the run's new connections"},
      {run_metric::workload_setup_ms, "ms",
       "the reference request's connection setup: connect, tunnel and TLS times the share of requests that opened a connection"},
      {run_metric::tunnel_p50_ms, "ms", "median tunnel setup through the proxy, over the run's model requests that opened one"},
      {run_metric::via_proxy_count, "count", "model requests that went through a proxy"},
      {run_metric::tokens_calibrated_count, "count",
       "model requests whose stream carried no usage and whose output tokens were counted from their text, at the bytes per token of the same model's answer that carried usage"},
      {run_metric::tokens_unknown_count, "count",
       "streamed model requests with content whose output tokens could not be counted (no usage, no calibration): no time per token is read from them"},
      {run_metric::bytes_per_token_ratio, "ratio", "the target model's bytes of answer text per output token, where usage gave both"},
      {run_metric::events_per_token_ratio, "ratio", "the target model's streamed content events per output token (median)"},
      {run_metric::explained_ratio, "ratio",
       "of the time the run's priced requests took (connection setup, first token, generation), the share the measured terms explain"},
      {run_metric::books_requests_count, "count", "the run's requests the books were closed over"},
      {run_metric::unexplained_setup_ms, "ms",
       "median time a new connection's setup took beyond what the path's round trip, the proxy's tunnel and the TLS handshake measured apart explain, set when the run's own spread cannot account for it"},
      {run_metric::unexplained_setup_count, "count", "new connections whose setup took that long beyond the terms"},
      {run_metric::unexplained_setup_of_count, "count", "new connections the setup's books were closed over"},
      {run_metric::unexplained_first_token_ms, "ms",
       "median time from the request written to its first token beyond what the overhead, prefill, body, queue, cold start and holds explain, set when the run's own spread cannot account for it"},
      {run_metric::unexplained_first_token_count, "count", "requests whose first token came that much later than the terms"},
      {run_metric::unexplained_first_token_of_count, "count", "requests the first token's books were closed over"},
      {run_metric::unexplained_generation_ms_per_token, "ms",
       "median time per output token beyond the decode the baseline and the sweep measured (at the request's context), set when the run's own spread cannot account for it"},
      {run_metric::unexplained_generation_count, "count", "streams whose generation took that much longer than the terms"},
      {run_metric::unexplained_generation_of_count, "count", "streams the generation's books were closed over"},
      {run_metric::first_request_server_excess_ms, "ms",
       "the run's first request's own processing time as the server reported it (openai-processing-ms, Server-Timing), over the median of the others that reported one"},
      {run_metric::first_request_loss_count, "count",
       "segments the run's first request's connection lost or received out of order before its first response byte (TCP_INFO)"},
      {run_metric::workload_tokens_per_min_count, "count",
       "tokens a minute the reference request needs at its streams, back to back: streams x (prompt + output tokens) x 60,000 / its total ms"},
  };
  return k;
}

// The typical request's end to end: the metric a check declares as that (Typical::EndToEnd), read
// from the run's results, so that no reader of the run metrics names the check.
std::map<std::string, double> typical_metrics(const std::vector<checks::CheckResult>& checks) {
  std::map<std::string, double> m;
  const std::string name = checks::typical_metric(checks::Typical::EndToEnd);
  if (name.empty()) return m;
  if (auto v = checks::metric_of(checks, checks::MetricKey{name.c_str()})) m[run_metric::typical_total_ms] = *v;
  return m;
}

std::map<std::string, double> request_metrics(const std::vector<checks::CheckResult>& checks, const std::string& target) {
  std::map<std::string, double> m;
  for (const auto& part : {overload_metrics(checks), series_metrics(read_series(checks, target)), gateway_metrics(checks),
                           loss_metrics(checks), ttft_tail_metrics(checks), token_metrics(checks, target),
                           route_metrics(checks), first_request_metrics(checks), typical_metrics(checks)})
    m.insert(part.begin(), part.end());
  return m;
}

std::vector<checks::MetricInfo> all_metrics() {
  auto out = checks::check_metrics();
  out.insert(out.end(), run_metrics().begin(), run_metrics().end());
  return out;
}

}  // namespace infdoctor::results
