#pragma once
// The baseline check's metrics that other code reads (the workload's pricing, report.html,
// summary.md, history, Prometheus). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"
#include "rules/rules.h"

namespace infdoctor::checks::baseline_metric {

inline constexpr MetricKey ttft_p50_ms{"baseline.ttft_p50_ms"};
inline constexpr MetricKey ttft_p90_ms{"baseline.ttft_p90_ms"};
inline constexpr MetricKey tpot_p50_ms{"baseline.tpot_p50_ms"};
inline constexpr MetricKey small_tpot_p50_ms{"baseline.small_tpot_p50_ms"};
inline constexpr MetricKey small_ttft_p50_ms{"baseline.small_ttft_p50_ms"};
// The reference request the rules engine falls back to: declared there, where shares are reckoned.
inline constexpr MetricKey total_p50_ms{rules::kReferenceFallbackMetric};

}  // namespace infdoctor::checks::baseline_metric

// What `--set baseline.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::baseline_setting {

inline constexpr Setting samples{
    .key = "baseline.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "requests to each model"};
inline constexpr Setting max_tokens{
    .key = "baseline.max_tokens", .kind = SettingKind::Whole, .def = "64", .lo = 2, .hi = 100000,
    .help = "output tokens asked of each"};
inline constexpr Setting prompt_tokens{
    .key = "baseline.prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};

}  // namespace infdoctor::checks::baseline_setting
