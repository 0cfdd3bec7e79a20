#include "checks/registry.h"

namespace infdoctor::checks {

const std::vector<CheckEntry>& registry() {
  // dns first: it resolves the addresses that path and transport probe one by one. coldstart
  // before the other model checks: the run's first model request must be its own.
  static const std::vector<CheckEntry> kAll = {
      {"dns", make_dns_check},
      {"path", make_path_check},
      {"transport", make_transport_check},
      {"coldstart", make_coldstart_check},
      {"baseline", make_baseline_check},
      {"sweep", make_sweep_check},
      {"serialization", make_serialization_check},
      {"concurrency", make_concurrency_check},
      {"soak", make_soak_check},
  };
  return kAll;
}

std::vector<MetricInfo> all_metrics() {
  std::vector<MetricInfo> out;
  const Options defaults;
  for (const auto& e : registry()) {
    const auto check = e.make(defaults);
    const auto& m = check->info().metrics;
    out.insert(out.end(), m.begin(), m.end());
  }
  out.insert(out.end(), run_metrics().begin(), run_metrics().end());
  return out;
}

std::string typical_metric(Typical t) {
  for (const auto& m : all_metrics())
    if (m.tags.typical == t) return m.name;
  return {};
}

const CheckInfo* find_info(const std::string& id) {
  // Each check's info (its k...Info) is a static of its file: the pointer outlives the check made to find it.
  for (const auto& e : registry())
    if (e.id == id) return &e.make(Options{})->info();
  return nullptr;
}

const std::vector<MetricInfo>& run_metrics() {
  static const std::vector<MetricInfo> k = {
      {"run.requests_count", "count", "model requests sent", {.history = true}},
      {"run.failed_count", "count", "model requests that failed, all kinds", {.history = true}},
      {"run.timeout_count", "count", "model requests that timed out"},
      {"run.broken_stream_count", "count", "streams closed, reset, malformed, cut by an error event, ended without their terminator, or too large"},
      {"run.server_error_count", "count", "answers with an HTTP 5xx status"},
      {"run.tls_failed_count", "count", "requests whose TLS handshake or verification failed"},
      {"run.tls_verify_off", "flag", "1 when certificates were not verified (--insecure over https)"},
      {"run.rate_limited_count", "count", "answers with HTTP 429"},
      {"run.rate_limited_tokens_count", "count", "of those 429s, the ones that named the token quota (tokens per minute) in their words or headers"},
      {"run.retry_wait_ms", "ms", "time spent waiting out Retry-After and backoff"},
      {"run.overloaded_count", "count",
       "answers that said the provider is overloaded: 503 with its words (overloaded, capacity), or Anthropic's 529"},
      {"run.overload_wait_ms", "ms", "the waits those answers asked for (Retry-After, else the backoff), added up"},
      {"run.overloaded_share_ratio", "ratio", "share of the run's model requests answered overloaded"},
      {"run.overloaded_sequential_share_ratio", "ratio", "the same share over the requests sent one at a time"},
      {"run.overloaded_parallel_share_ratio", "ratio", "the same share over the concurrency check's parallel requests"},
      {"run.model_loading_count", "count", "answers of 503 that said the model is loading (the run waited and sent the request again)"},
      {"run.model_loading_wait_max_ms", "ms", "the longest a request waited, from its first try, for the model to load before it was answered"},
      {"run.cached_prompts_count", "count",
       "answers that reported prompt tokens served from the provider's cache (every prompt of a run is unique)"},
      // The run's requests as one time series (stats/series.h).
      {"run.series_samples_count", "count", "requests in the time series: every one with 8 or more output tokens that arrived as they came, parallel ones aside"},
      {"run.series_span_s", "s", "from the first request of the time series to its last"},
      {"run.slow_share_ratio", "ratio", "share of the time series at twice its model's usual time per token (its 25th percentile) or more (from 20 requests on)"},
      {"run.slow_share_low_ratio", "ratio", "the 95 % lower bound of that share (Wilson score interval)"},
      {"run.slow_episodes_count", "count", "runs of slow requests in a row"},
      {"run.slow_period_s", "s", "median gap between the starts of slow episodes (three or more)"},
      {"run.slow_tpot_excess_ms_per_token", "ms", "median extra time per token of the slow requests over their model's usual time per token"},
      {"run.slow_factor_ratio", "ratio", "median over the slow requests of their time per token over their model's usual time per token"},
      {"run.slow_runs_count", "count", "runs of slow requests in a row in each model's own order, added up (models with two slow and two usual requests or more)"},
      {"run.slow_runs_expected_count", "count", "the runs the same slow requests would make if each were slow by chance, in a random order (from 20 requests)"},
      {"run.slow_runs_sd_count", "count", "that number's standard deviation"},
      {"run.replicas_count", "count", "replicas the answers named in x-served-by, x-replica, fly-instance or x-backend-server"},
      {"run.slow_replica_share_ratio", "ratio", "with two named replicas or more: the share of slow requests on the replica with the most of them"},
      {"run.slow_elsewhere_share_low_ratio", "ratio", "the 95 % lower bound (Wilson) of the share of slow requests on the other replicas"},
      // The run's own tail of time to first token (run/runner.cpp).
      {"run.ttft_tail_samples_count", "count",
       "requests of shapes sent three times or more, one stream at a time, held against their shape's median TTFT (the run's first request and those after idle gaps aside)"},
      {"run.ttft_worst_ratio", "ratio", "the slowest of them over its shape's median TTFT: the worst tail this run saw"},
      // The path's loss as the run's own connections saw it (TCP_INFO, http/tcp_info.h).
      {"run.tcp_measured_count", "count", "model requests whose connection's TCP counters were read before and after"},
      {"run.tcp_retransmits_count", "count", "segments this end sent again over those requests (tcpi_total_retrans), SYNs included"},
      {"run.tcp_out_of_order_count", "count", "segments that arrived past a hole over those requests (tcpi_rcv_ooopack): the peer's lost ones"},
      {"run.tcp_loss_requests_ratio", "ratio", "share of those requests with a retransmission or an out-of-order segment"},
      {"run.tcp_rtt_p50_ms", "ms", "median smoothed round trip (tcpi_rtt) of the requests' connections at their end"},
      {"run.slow_connects_count", "count", "TCP connects that took a second or more: a lost SYN waits out Linux's first SYN timeout of 1 s"},
      {"run.stall_streams_count", "count", "streams that arrived as generated, read for stalls"},
      {"run.network_stalls_count", "count", "gaps between content events across which the connection's retransmissions or out-of-order segments rose: the network's"},
      {"run.loss_gap_ratio", "ratio", "those gaps over all the streams' gaps (about one segment each): the path's loss as the streams met it"},
      {"run.network_stall_per_stream_ms", "ms", "what those gaps took beyond the stream's median gap, per stream"},
      {"run.stalls_count", "count", "the server's stalls: gaps of 200 ms (TCP_RTO_MIN) and four times the stream's median gap or more, without a loss sign"},
      {"run.server_stall_per_stream_ms", "ms", "what those stalls took beyond the median gap, per stream"},
      // What gateways say of themselves in response headers.
      {"run.gateway_overhead_p50_ms", "ms", "median x-litellm-overhead-duration-ms: the time LiteLLM's proxy says it added"},
      {"run.gateway_cache_hits_count", "count", "answers Cloudflare AI Gateway served from its cache (cf-aig-cache-status: HIT)"},
      {"run.deployment_utilization_max_ratio", "ratio", "highest azure-openai-deployment-utilization: the Azure deployment's load"},
      {"run.ratelimit_remaining_tokens_min_count", "count",
       "lowest x-ratelimit-remaining-tokens (anthropic-ratelimit-tokens-remaining): the token budget left in the window"},
      {"run.ratelimit_limit_tokens_count", "count", "x-ratelimit-limit-tokens (anthropic-ratelimit-tokens-limit): the account's tokens-per-minute quota"},
      // The engine's own /metrics, scraped before and after each check (run/engine_metrics.h).
      {"run.engine_scrapes_count", "count", "scrapes of the engine's /metrics that were read"},
      {"run.engine_waiting_max_count", "count", "most requests the engine had waiting at any scrape"},
      {"run.engine_running_max_count", "count", "most requests the engine had running at any scrape"},
      {"run.engine_kv_cache_usage_max_ratio", "ratio", "the engine's largest KV cache use at any scrape"},
      {"run.engine_preemptions_count", "count", "sequences the engine preempted during the run"},
      {"run.engine_queue_time_mean_ms", "ms", "the engine's mean queue time of the requests it finished during the run"},
      {"run.engine_ttft_mean_ms", "ms", "the engine's mean time to first token (from arrival) during the run"},
      {"run.engine_prefix_cache_hit_ratio", "ratio", "prompt tokens the engine found in its prefix cache during the run, of those it looked up"},
      {"run.engine_concurrency_requests_count", "count", "requests the engine finished during the concurrency check"},
      {"run.engine_concurrency_queue_time_mean_ms", "ms", "the engine's mean queue time of those requests"},
      // The reference request findings are priced on (--workload, run/workload.h).
      {"run.workload_prompt_tokens_count", "count", "the reference request's prompt tokens (--workload prompt=, default 1024)"},
      {"run.workload_output_tokens_count", "count", "the reference request's output tokens (--workload output=, default 128)"},
      {"run.workload_concurrency_count", "count", "the reference request's streams at once (--workload concurrency=, default the concurrency check's highest level)"},
      {"run.workload_body_bytes", "bytes", "the reference request's body, as the run sends a prompt of that length"},
      {"run.workload_network_ms", "ms", "the reference request's network time: one round trip of the path"},
      {"run.workload_overhead_ms", "ms", "the reference request's fixed cost before its first token: the prefill fit's intercept less the round trip"},
      {"run.workload_prefill_ms", "ms", "the reference request's prefill: the fitted cost per prompt token times its prompt tokens"},
      {"run.workload_tpot_ms_per_token", "ms", "the reference request's time per output token at its context: the baseline's, plus the sweep's growth with context"},
      {"run.workload_decode_ms", "ms", "the reference request's decode: that time per token times its output tokens after the first"},
      {"run.workload_queue_ms", "ms", "the reference request's mean wait for a slot at the concurrency check's level nearest its streams"},
      {"run.workload_total_ms", "ms", "the reference request's end-to-end time alone: its first token, then decode (the queue comes on top)"},
      {"run.workload_tokens_per_min_count", "count",
       "tokens a minute the reference request needs at its streams, back to back: streams x (prompt + output tokens) x 60,000 / its total ms"},
  };
  return k;
}

}  // namespace infdoctor::checks
