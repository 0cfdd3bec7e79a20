#pragma once
// The sweep's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::sweep_metric {

inline constexpr MetricKey prefill_ms_per_token{"sweep.prefill_ms_per_token"};
inline constexpr MetricKey prefill_overhead_ms{"sweep.prefill_overhead_ms"};
inline constexpr MetricKey small_prefill_ms_per_token{"sweep.small_prefill_ms_per_token"};
inline constexpr MetricKey prefill_fit_r2_ratio{"sweep.prefill_fit_r2_ratio"};
inline constexpr MetricKey prefill_samples_count{"sweep.prefill_samples_count"};
inline constexpr MetricKey prefill_growth_ms_per_1k_tokens{"sweep.prefill_growth_ms_per_1k_tokens"};
inline constexpr MetricKey prefill_quad_ms_per_token{"sweep.prefill_quad_ms_per_token"};
inline constexpr MetricKey prefill_quad_overhead_ms{"sweep.prefill_quad_overhead_ms"};
inline constexpr MetricKey hidden_reasoning_count{"sweep.hidden_reasoning_count"};
inline constexpr MetricKey max_prompt_tokens_count{"sweep.max_prompt_tokens_count"};
inline constexpr MetricKey refused_prompt_tokens_count{"sweep.refused_prompt_tokens_count"};
inline constexpr MetricKey ttft_at_max_prompt_ms{"sweep.ttft_at_max_prompt_ms"};
inline constexpr MetricKey tpot_at_min_prompt_ms{"sweep.tpot_at_min_prompt_ms"};
inline constexpr MetricKey tpot_at_max_prompt_ms{"sweep.tpot_at_max_prompt_ms"};
inline constexpr MetricKey decode_context_ms_per_1k_tokens{"sweep.decode_context_ms_per_1k_tokens"};
inline constexpr MetricKey tpot_context_growth_ratio{"sweep.tpot_context_growth_ratio"};
inline constexpr MetricKey decode_ms_per_token{"sweep.decode_ms_per_token"};
inline constexpr MetricKey decode_overhead_ms{"sweep.decode_overhead_ms"};
inline constexpr MetricKey decode_fit_r2_ratio{"sweep.decode_fit_r2_ratio"};
inline constexpr MetricKey decode_samples_count{"sweep.decode_samples_count"};
inline constexpr MetricKey tpot_p50_ms{"sweep.tpot_p50_ms"};
inline constexpr MetricKey max_output_tokens_count{"sweep.max_output_tokens_count"};
inline constexpr MetricKey stopped_early_count{"sweep.stopped_early_count"};
inline constexpr MetricKey failures_count{"sweep.failures_count"};

}  // namespace infdoctor::checks::sweep_metric

// What `--set sweep.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::sweep_setting {

inline constexpr Setting prompt_tokens{
    .key = "sweep.prompt_tokens", .kind = SettingKind::Numbers, .def = "64,512,2048,8192", .lo = 1, .hi = 2000000,
    .help = "prompt sizes of the prefill fit (--sweep-prompt-tokens)",
    .quick = "64,512,2048", .full = "64,512,2048,8192,32768"};
inline constexpr Setting max_tokens{
    .key = "sweep.max_tokens", .kind = SettingKind::Numbers, .def = "1,32,128,512", .lo = 1, .hi = 1000000,
    .help = "output sizes of the decode fit (--sweep-max-tokens)",
    .quick = "1,16,64", .full = "1,32,128,512,1024"};
inline constexpr Setting repeats{
    .key = "sweep.repeats", .kind = SettingKind::Whole, .def = "2", .lo = 1, .hi = 100,
    .help = "requests per size; a size whose first request agrees with the answers before it (its time per token "
            "and first token each within 3 MAD or a tenth of their median: for a decode size the smaller sizes' and "
            "the run's earlier answers to the same prompt; for a prompt, of the line the smaller sizes draw) is not "
            "repeated",
    .quick = "1", .full = "3"};
inline constexpr Setting decode_prompt_tokens{
    .key = "sweep.decode_prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each decode request"};
inline constexpr Setting prefill_max_tokens{
    .key = "sweep.prefill_max_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 100000,
    .help = "output tokens of each prefill request, for decode against context"};
inline constexpr Setting workload_output_tokens{
    .key = "sweep.workload_output_tokens", .kind = SettingKind::Whole, .def = "0", .lo = 0, .hi = 1000000,
    .help = "the reference request's output (--workload output=O, 128 unless given): a decode size beyond it is "
            "sent only when the time per token up to it changed with the answer's length; 0: every size is sent"};
inline constexpr Setting workload_prompt_tokens{
    .key = "sweep.workload_prompt_tokens", .kind = SettingKind::Whole, .def = "0", .lo = 0, .hi = 2000000,
    .help = "the workload's prompt (--workload prompt=P): the prefill sizes reach it when it is longer; 0: none"};

}  // namespace infdoctor::checks::sweep_setting
