#pragma once
// The coldstart check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::coldstart_metric {

inline constexpr MetricKey baseline_ttft_p50_ms{"coldstart.baseline_ttft_p50_ms"};
inline constexpr MetricKey baseline_ttft_mad_ms{"coldstart.baseline_ttft_mad_ms"};
inline constexpr MetricKey first_request_ttft_ms{"coldstart.first_request_ttft_ms"};
inline constexpr MetricKey first_request_penalty_ms{"coldstart.first_request_penalty_ms"};
inline constexpr MetricKey penalty_ms{"coldstart.penalty_ms"};
inline constexpr MetricKey threshold_s{"coldstart.threshold_s"};
inline constexpr MetricKey threshold_low_s{"coldstart.threshold_low_s"};
inline constexpr MetricKey cold_gaps_count{"coldstart.cold_gaps_count"};
inline constexpr MetricKey gaps_count{"coldstart.gaps_count"};
inline constexpr MetricKey samples_count{"coldstart.samples_count"};

}  // namespace infdoctor::checks::coldstart_metric

// What `--set coldstart.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::coldstart_setting {

inline constexpr Setting idle_gaps{
    .key = "coldstart.idle_gaps", .kind = SettingKind::Numbers, .def = "0,2,5,10,20", .lo = 0, .hi = 86400,
    .help = "idle seconds before each request (--idle-gaps)",
    .quick = "0,1,3", .full = "0,5,30,60,120,300"};
inline constexpr Setting baseline_samples{
    .key = "coldstart.baseline_samples", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 100,
    .help = "back-to-back requests the gaps are measured against",
    .quick = "2", .full = "5"};
inline constexpr Setting prompt_tokens{
    .key = "coldstart.prompt_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each request"};

}  // namespace infdoctor::checks::coldstart_setting
