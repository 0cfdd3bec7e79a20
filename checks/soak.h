#pragma once
// The soak check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::soak_metric {

inline constexpr MetricKey ttft_p50_ms{"soak.ttft_p50_ms"};
inline constexpr MetricKey ttft_p99_ms{"soak.ttft_p99_ms"};
inline constexpr MetricKey ttft_cv_ratio{"soak.ttft_cv_ratio"};
inline constexpr MetricKey ttft_drift_ms{"soak.ttft_drift_ms"};
inline constexpr MetricKey tpot_p50_ms{"soak.tpot_p50_ms"};
inline constexpr MetricKey tpot_drift_ms{"soak.tpot_drift_ms"};
inline constexpr MetricKey slow_ratio{"soak.slow_ratio"};
inline constexpr MetricKey samples_count{"soak.samples_count"};
inline constexpr MetricKey failures_count{"soak.failures_count"};
inline constexpr MetricKey duration_s{"soak.duration_s"};

}  // namespace infdoctor::checks::soak_metric

// What `--set soak.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::soak_setting {

inline constexpr Setting minutes{
    .key = "soak.minutes", .kind = SettingKind::Number, .def = "0", .lo = 0, .hi = 1440,
    .help = "soak length (--soak-minutes); 0: off"};
inline constexpr Setting interval_ms{
    .key = "soak.interval_ms", .kind = SettingKind::Whole, .def = "1000", .lo = 10, .hi = 3600000,
    .help = "the pace: one request each interval, ms"};
inline constexpr Setting max_tokens{
    .key = "soak.max_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 2, .hi = 100000,
    .help = "output tokens asked of each (--workload output=O)"};
inline constexpr Setting prompt_tokens{
    .key = "soak.prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each (--workload prompt=P)"};

}  // namespace infdoctor::checks::soak_setting
