#pragma once
// The run's own metrics: what it measured over every check's model requests, as rules name them
// ("run.failed_count"). Each name is declared once, here; the code that writes or reads one refers
// to it through its constant (results::run_metric::failed_count), and run_metrics() gives each its
// unit and help as the checks declare theirs. What the requests show read together is computed
// here too (request_metrics); the pacer's counts and the workload's pricing are the run's (run/).
#include <map>
#include <string>
#include <vector>

#include "checks/check.h"
#include "rules/rules.h"

namespace infdoctor::results {

namespace run_metric {
inline constexpr const char* requests_count = "run.requests_count";
inline constexpr const char* failed_count = "run.failed_count";
inline constexpr const char* timeout_count = "run.timeout_count";
inline constexpr const char* broken_stream_count = "run.broken_stream_count";
inline constexpr const char* server_error_count = "run.server_error_count";
inline constexpr const char* tls_failed_count = "run.tls_failed_count";
inline constexpr const char* tls_verify_off = "run.tls_verify_off";
inline constexpr const char* client_wakes_count = "run.client_wakes_count";
inline constexpr const char* client_wake_late_p50_ms = "run.client_wake_late_p50_ms";
inline constexpr const char* client_wake_late_p99_ms = "run.client_wake_late_p99_ms";
inline constexpr const char* client_wake_late_max_ms = "run.client_wake_late_max_ms";
inline constexpr const char* rate_limited_count = "run.rate_limited_count";
inline constexpr const char* rate_limited_tokens_count = "run.rate_limited_tokens_count";
inline constexpr const char* retry_wait_ms = "run.retry_wait_ms";
inline constexpr const char* overloaded_count = "run.overloaded_count";
inline constexpr const char* overload_wait_ms = "run.overload_wait_ms";
inline constexpr const char* overloaded_share_ratio = "run.overloaded_share_ratio";
inline constexpr const char* overloaded_sequential_share_ratio = "run.overloaded_sequential_share_ratio";
inline constexpr const char* overloaded_parallel_share_ratio = "run.overloaded_parallel_share_ratio";
inline constexpr const char* model_loading_count = "run.model_loading_count";
inline constexpr const char* model_loading_wait_max_ms = "run.model_loading_wait_max_ms";
inline constexpr const char* cached_prompts_count = "run.cached_prompts_count";
inline constexpr const char* series_samples_count = "run.series_samples_count";
inline constexpr const char* series_span_s = "run.series_span_s";
inline constexpr const char* slow_share_ratio = "run.slow_share_ratio";
inline constexpr const char* slow_share_low_ratio = "run.slow_share_low_ratio";
inline constexpr const char* slow_episodes_count = "run.slow_episodes_count";
inline constexpr const char* slow_period_s = "run.slow_period_s";
inline constexpr const char* slow_tpot_excess_ms_per_token = "run.slow_tpot_excess_ms_per_token";
inline constexpr const char* slow_factor_ratio = "run.slow_factor_ratio";
inline constexpr const char* slow_runs_count = "run.slow_runs_count";
inline constexpr const char* slow_runs_expected_count = "run.slow_runs_expected_count";
inline constexpr const char* slow_runs_sd_count = "run.slow_runs_sd_count";
inline constexpr const char* turned_slow_count = "run.turned_slow_count";
inline constexpr const char* turned_fast_count = "run.turned_fast_count";
inline constexpr const char* replicas_count = "run.replicas_count";
inline constexpr const char* slow_replica_share_ratio = "run.slow_replica_share_ratio";
inline constexpr const char* slow_elsewhere_share_low_ratio = "run.slow_elsewhere_share_low_ratio";
inline constexpr const char* ttft_tail_samples_count = "run.ttft_tail_samples_count";
inline constexpr const char* ttft_worst_ratio = "run.ttft_worst_ratio";
inline constexpr const char* tcp_measured_count = "run.tcp_measured_count";
inline constexpr const char* tcp_retransmits_count = "run.tcp_retransmits_count";
inline constexpr const char* tcp_out_of_order_count = "run.tcp_out_of_order_count";
inline constexpr const char* tcp_loss_requests_ratio = "run.tcp_loss_requests_ratio";
inline constexpr const char* tcp_rtt_p50_ms = "run.tcp_rtt_p50_ms";
inline constexpr const char* slow_connects_count = "run.slow_connects_count";
inline constexpr const char* stall_streams_count = "run.stall_streams_count";
inline constexpr const char* network_stalls_count = "run.network_stalls_count";
inline constexpr const char* loss_gap_ratio = "run.loss_gap_ratio";
inline constexpr const char* network_stall_per_stream_ms = "run.network_stall_per_stream_ms";
inline constexpr const char* stalls_count = "run.stalls_count";
inline constexpr const char* server_stall_per_stream_ms = "run.server_stall_per_stream_ms";
inline constexpr const char* gateway_overhead_p50_ms = "run.gateway_overhead_p50_ms";
inline constexpr const char* gateway_cache_hits_count = "run.gateway_cache_hits_count";
inline constexpr const char* deployment_utilization_max_ratio = "run.deployment_utilization_max_ratio";
inline constexpr const char* ratelimit_remaining_tokens_min_count = "run.ratelimit_remaining_tokens_min_count";
inline constexpr const char* ratelimit_limit_tokens_count = "run.ratelimit_limit_tokens_count";
inline constexpr const char* engine_scrapes_count = "run.engine_scrapes_count";
inline constexpr const char* engine_waiting_max_count = "run.engine_waiting_max_count";
inline constexpr const char* engine_running_max_count = "run.engine_running_max_count";
inline constexpr const char* engine_kv_cache_usage_max_ratio = "run.engine_kv_cache_usage_max_ratio";
inline constexpr const char* engine_preemptions_count = "run.engine_preemptions_count";
inline constexpr const char* engine_queue_time_mean_ms = "run.engine_queue_time_mean_ms";
inline constexpr const char* engine_ttft_mean_ms = "run.engine_ttft_mean_ms";
inline constexpr const char* engine_prefix_cache_hit_ratio = "run.engine_prefix_cache_hit_ratio";
inline constexpr const char* engine_spec_draft_tokens_count = "run.engine_spec_draft_tokens_count";
inline constexpr const char* engine_spec_acceptance_ratio = "run.engine_spec_acceptance_ratio";
inline constexpr const char* engine_concurrency_requests_count = "run.engine_concurrency_requests_count";
inline constexpr const char* engine_concurrency_queue_time_mean_ms = "run.engine_concurrency_queue_time_mean_ms";
inline constexpr const char* workload_prompt_tokens_count = "run.workload_prompt_tokens_count";
inline constexpr const char* workload_output_tokens_count = "run.workload_output_tokens_count";
inline constexpr const char* workload_concurrency_count = "run.workload_concurrency_count";
inline constexpr const char* workload_body_bytes = "run.workload_body_bytes";
inline constexpr const char* workload_from_body_count = "run.workload_from_body_count";
inline constexpr const char* workload_network_ms = "run.workload_network_ms";
inline constexpr const char* path_rtt_ms = "run.path_rtt_ms";
inline constexpr const char* workload_overhead_ms = "run.workload_overhead_ms";
inline constexpr const char* workload_prefill_ms = "run.workload_prefill_ms";
inline constexpr const char* workload_tpot_ms_per_token = "run.workload_tpot_ms_per_token";
inline constexpr const char* workload_ttft_ms = "run.workload_ttft_ms";
inline constexpr const char* workload_decode_ms = "run.workload_decode_ms";
inline constexpr const char* workload_queue_ms = "run.workload_queue_ms";
inline constexpr const char* workload_new_connection_ratio = "run.workload_new_connection_ratio";
inline constexpr const char* workload_connect_ms = "run.workload_connect_ms";
inline constexpr const char* workload_tunnel_ms = "run.workload_tunnel_ms";
inline constexpr const char* workload_tls_ms = "run.workload_tls_ms";
inline constexpr const char* workload_setup_ms = "run.workload_setup_ms";
inline constexpr const char* tunnel_p50_ms = "run.tunnel_p50_ms";
inline constexpr const char* via_proxy_count = "run.via_proxy_count";
inline constexpr const char* tokens_calibrated_count = "run.tokens_calibrated_count";
inline constexpr const char* tokens_unknown_count = "run.tokens_unknown_count";
inline constexpr const char* bytes_per_token_ratio = "run.bytes_per_token_ratio";
inline constexpr const char* events_per_token_ratio = "run.events_per_token_ratio";
inline constexpr const char* explained_ratio = "run.explained_ratio";
inline constexpr const char* books_requests_count = "run.books_requests_count";
inline constexpr const char* unexplained_setup_ms = "run.unexplained_setup_ms";
inline constexpr const char* unexplained_setup_count = "run.unexplained_setup_count";
inline constexpr const char* unexplained_setup_of_count = "run.unexplained_setup_of_count";
inline constexpr const char* unexplained_first_token_ms = "run.unexplained_first_token_ms";
inline constexpr const char* unexplained_first_token_count = "run.unexplained_first_token_count";
inline constexpr const char* unexplained_first_token_of_count = "run.unexplained_first_token_of_count";
inline constexpr const char* unexplained_generation_ms_per_token = "run.unexplained_generation_ms_per_token";
inline constexpr const char* unexplained_generation_count = "run.unexplained_generation_count";
inline constexpr const char* unexplained_generation_of_count = "run.unexplained_generation_of_count";
inline constexpr const char* first_request_server_excess_ms = "run.first_request_server_excess_ms";
inline constexpr const char* first_request_loss_count = "run.first_request_loss_count";
inline constexpr const char* workload_total_ms = rules::kReferenceTotalMetric;  // the rules engine reads it first
inline constexpr const char* typical_total_ms = rules::kReferenceFallbackMetric;  // and this where it is not priced
inline constexpr const char* workload_tokens_per_min_count = "run.workload_tokens_per_min_count";
}  // namespace run_metric

// What the run's model requests show read together: the time series (slow requests, episodes,
// turns, replicas), the run's own tail of time to first token, the overloaded shares, the path's
// loss from the connections' TCP counters, and what gateways said of themselves in headers.
std::map<std::string, double> request_metrics(const std::vector<checks::CheckResult>& checks, const std::string& target);

// Every run metric with its unit and help.
const std::vector<checks::MetricInfo>& run_metrics();
// Every metric a run can hold: each check's, in run order, then the run's own.
std::vector<checks::MetricInfo> all_metrics();

}  // namespace infdoctor::results
