#pragma once
// The coldstart check's metrics that other code reads (history, report.html, Prometheus, the
// session's plan line). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"

namespace infdoctor::checks::coldstart_metric {

inline constexpr MetricKey baseline_ttft_p50_ms{"coldstart.baseline_ttft_p50_ms"};
inline constexpr MetricKey penalty_ms{"coldstart.penalty_ms"};
inline constexpr MetricKey first_request_penalty_ms{"coldstart.first_request_penalty_ms"};
inline constexpr MetricKey threshold_s{"coldstart.threshold_s"};

}  // namespace infdoctor::checks::coldstart_metric

// What `--set coldstart.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::coldstart_setting {

inline constexpr Setting idle_gaps{
    .key = "coldstart.idle_gaps", .kind = SettingKind::Numbers, .def = "0,2,5,10,20", .lo = 0, .hi = 86400,
    .help = "idle seconds before each request (--idle-gaps)"};
inline constexpr Setting baseline_samples{
    .key = "coldstart.baseline_samples", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 100,
    .help = "back-to-back requests the gaps are measured against"};
inline constexpr Setting prompt_tokens{
    .key = "coldstart.prompt_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each request"};

}  // namespace infdoctor::checks::coldstart_setting
