#pragma once
// The baseline check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"
#include "rules/rules.h"

namespace infdoctor::checks::baseline_metric {

inline constexpr MetricKey ttft_p50_ms{"baseline.ttft_p50_ms"};
inline constexpr MetricKey ttft_p90_ms{"baseline.ttft_p90_ms"};
inline constexpr MetricKey ttft_p50_ci_low_ms{"baseline.ttft_p50_ci_low_ms"};
inline constexpr MetricKey ttft_p50_ci_high_ms{"baseline.ttft_p50_ci_high_ms"};
inline constexpr MetricKey tpot_p50_ms{"baseline.tpot_p50_ms"};
inline constexpr MetricKey tpot_p50_ci_low_ms{"baseline.tpot_p50_ci_low_ms"};
inline constexpr MetricKey tpot_p50_ci_high_ms{"baseline.tpot_p50_ci_high_ms"};
inline constexpr MetricKey total_p50_ms{"baseline.total_p50_ms"};
inline constexpr MetricKey itl_p50_ms{"baseline.itl_p50_ms"};
inline constexpr MetricKey itl_p99_ms{"baseline.itl_p99_ms"};
inline constexpr MetricKey output_tokens_p50_count{"baseline.output_tokens_p50_count"};
inline constexpr MetricKey events_per_token_ratio{"baseline.events_per_token_ratio"};
inline constexpr MetricKey arrivals_per_token_ratio{"baseline.arrivals_per_token_ratio"};
inline constexpr MetricKey arrivals_per_event_ratio{"baseline.arrivals_per_event_ratio"};
inline constexpr MetricKey clump_wait_p50_ms{"baseline.clump_wait_p50_ms"};
inline constexpr MetricKey clump_generation_ms_per_token{"baseline.clump_generation_ms_per_token"};
inline constexpr MetricKey small_clump_wait_p50_ms{"baseline.small_clump_wait_p50_ms"};
inline constexpr MetricKey samples_count{"baseline.samples_count"};
inline constexpr MetricKey reasoning_tokens_p50_count{"baseline.reasoning_tokens_p50_count"};
inline constexpr MetricKey hidden_reasoning_ratio{"baseline.hidden_reasoning_ratio"};
inline constexpr MetricKey reasoning_p50_ms{"baseline.reasoning_p50_ms"};
inline constexpr MetricKey first_answer_p50_ms{"baseline.first_answer_p50_ms"};
inline constexpr MetricKey small_ttft_p50_ms{"baseline.small_ttft_p50_ms"};
inline constexpr MetricKey prompt_tokens_p50_count{"baseline.prompt_tokens_p50_count"};
inline constexpr MetricKey small_tpot_p50_ms{"baseline.small_tpot_p50_ms"};
inline constexpr MetricKey small_total_p50_ms{"baseline.small_total_p50_ms"};
inline constexpr MetricKey small_samples_count{"baseline.small_samples_count"};
inline constexpr MetricKey ttft_ratio{"baseline.ttft_ratio"};
inline constexpr MetricKey tpot_ratio{"baseline.tpot_ratio"};
inline constexpr MetricKey total_ratio{"baseline.total_ratio"};
inline constexpr MetricKey size_ratio{"baseline.size_ratio"};
inline constexpr MetricKey expected_tpot_ratio{"baseline.expected_tpot_ratio"};
inline constexpr MetricKey unexplained_tpot_ratio{"baseline.unexplained_tpot_ratio"};
inline constexpr MetricKey unexplained_tpot_ms_per_token{"baseline.unexplained_tpot_ms_per_token"};
inline constexpr MetricKey failures_count{"baseline.failures_count"};

}  // namespace infdoctor::checks::baseline_metric

// What `--set baseline.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::baseline_setting {

inline constexpr Setting samples{
    .key = "baseline.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "requests to each model",
    .quick = "8", .full = "10"};
inline constexpr Setting max_tokens{
    .key = "baseline.max_tokens", .kind = SettingKind::Whole, .def = "64", .lo = 2, .hi = 100000,
    .help = "output tokens asked of each",
    .quick = "32"};
inline constexpr Setting prompt_tokens{
    .key = "baseline.prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};

}  // namespace infdoctor::checks::baseline_setting
