#pragma once
// The concurrency check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::concurrency_metric {

inline constexpr MetricKey ttft_p50_at_1_ms{"concurrency.ttft_p50_at_1_ms"};
inline constexpr MetricKey ttft_p50_at_max_ms{"concurrency.ttft_p50_at_max_ms"};
inline constexpr MetricKey ttft_p90_at_max_ms{"concurrency.ttft_p90_at_max_ms"};
inline constexpr MetricKey total_p50_at_1_ms{"concurrency.total_p50_at_1_ms"};
inline constexpr MetricKey total_p50_at_max_ms{"concurrency.total_p50_at_max_ms"};
inline constexpr MetricKey throughput_at_1_tokens_per_s{"concurrency.throughput_at_1_tokens_per_s"};
inline constexpr MetricKey throughput_at_max_tokens_per_s{"concurrency.throughput_at_max_tokens_per_s"};
inline constexpr MetricKey throughput_scaling_ratio{"concurrency.throughput_scaling_ratio"};
inline constexpr MetricKey latency_growth_ratio{"concurrency.latency_growth_ratio"};
inline constexpr MetricKey ttft_growth_ratio{"concurrency.ttft_growth_ratio"};
inline constexpr MetricKey parallelism_count{"concurrency.parallelism_count"};
inline constexpr MetricKey queue_wait_mean_at_max_ms{"concurrency.queue_wait_mean_at_max_ms"};
inline constexpr MetricKey queue_wait_p90_at_max_ms{"concurrency.queue_wait_p90_at_max_ms"};
inline constexpr MetricKey queue_wait_p90_services_ratio{"concurrency.queue_wait_p90_services_ratio"};
inline constexpr MetricKey multiplexed_ratio{"concurrency.multiplexed_ratio"};
inline constexpr MetricKey separate_queue_wait_mean_at_max_ms{"concurrency.separate_queue_wait_mean_at_max_ms"};
inline constexpr MetricKey separate_queue_wait_p90_services_ratio{"concurrency.separate_queue_wait_p90_services_ratio"};
inline constexpr MetricKey connection_wait_mean_ms{"concurrency.connection_wait_mean_ms"};
inline constexpr MetricKey knee_level_count{"concurrency.knee_level_count"};
inline constexpr MetricKey max_level_count{"concurrency.max_level_count"};
inline constexpr MetricKey failures_count{"concurrency.failures_count"};
inline constexpr MetricKey rate_limited_count{"concurrency.rate_limited_count"};

}  // namespace infdoctor::checks::concurrency_metric

// What `--set concurrency.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::concurrency_setting {

inline constexpr Setting max_streams{
    .key = "concurrency.max_streams", .kind = SettingKind::Whole, .def = "64", .lo = 1, .hi = 4096,
    .help = "the cap on parallel streams (--max-concurrency): a level above it given is refused, one from a "
            "default or a profile left out"};
inline constexpr Setting levels{
    .key = "concurrency.levels", .kind = SettingKind::Numbers, .def = "1,2,4,8,16", .lo = 1, .hi = 4096,
    .help = "parallel streams of each batch (--concurrency)",
    .capped_by = &max_streams,
    .quick = "1,2,4,8", .full = "1,2,4,8,16,32,64"};
inline constexpr Setting max_tokens{
    .key = "concurrency.max_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "output tokens asked of each",
    .quick = "16"};
inline constexpr Setting prompt_tokens{
    .key = "concurrency.prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};
inline constexpr Setting rounds{
    .key = "concurrency.rounds", .kind = SettingKind::Whole, .def = "1", .lo = 1, .hi = 100,
    .help = "batches per level",
    .full = "2"};

}  // namespace infdoctor::checks::concurrency_setting
