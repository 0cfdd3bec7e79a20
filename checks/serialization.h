#pragma once
// The serialization check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::serialization_metric {

inline constexpr MetricKey upload_parse_ms_per_mb{"serialization.upload_parse_ms_per_mb"};
inline constexpr MetricKey upload_parse_noise_ms_per_mb{"serialization.upload_parse_noise_ms_per_mb"};
inline constexpr MetricKey upload_parse_overhead_ms{"serialization.upload_parse_overhead_ms"};
inline constexpr MetricKey path_rtt_ms{"serialization.path_rtt_ms"};
inline constexpr MetricKey slow_start_ms_per_mb{"serialization.slow_start_ms_per_mb"};
inline constexpr MetricKey net_ms_per_mb{"serialization.net_ms_per_mb"};
inline constexpr MetricKey upload_parse_fit_r2_ratio{"serialization.upload_parse_fit_r2_ratio"};
inline constexpr MetricKey largest_body_bytes{"serialization.largest_body_bytes"};
inline constexpr MetricKey body_limit_bytes{"serialization.body_limit_bytes"};
inline constexpr MetricKey ttft_at_largest_body_ms{"serialization.ttft_at_largest_body_ms"};
inline constexpr MetricKey stream_total_p50_ms{"serialization.stream_total_p50_ms"};
inline constexpr MetricKey nonstream_total_p50_ms{"serialization.nonstream_total_p50_ms"};
inline constexpr MetricKey stream_overhead_ms{"serialization.stream_overhead_ms"};
inline constexpr MetricKey stream_token_bytes{"serialization.stream_token_bytes"};
inline constexpr MetricKey compressed_ratio{"serialization.compressed_ratio"};
inline constexpr MetricKey compressed_ttft_p50_ms{"serialization.compressed_ttft_p50_ms"};
inline constexpr MetricKey identity_ttft_p50_ms{"serialization.identity_ttft_p50_ms"};
inline constexpr MetricKey identity_tpot_p50_ms{"serialization.identity_tpot_p50_ms"};
inline constexpr MetricKey compressed_arrivals_per_event_ratio{"serialization.compressed_arrivals_per_event_ratio"};
inline constexpr MetricKey identity_arrivals_per_event_ratio{"serialization.identity_arrivals_per_event_ratio"};
inline constexpr MetricKey compression_held_ms{"serialization.compression_held_ms"};
inline constexpr MetricKey samples_count{"serialization.samples_count"};
inline constexpr MetricKey failures_count{"serialization.failures_count"};

}  // namespace infdoctor::checks::serialization_metric

// What `--set serialization.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::serialization_setting {

inline constexpr Setting sizes_kb{
    .key = "serialization.sizes_kb", .kind = SettingKind::Numbers, .def = "1,64,1024,4096", .lo = 0, .hi = 65536,
    .help = "request bodies padded to these sizes, KB",
    .quick = "1,256,1024"};
inline constexpr Setting repeats{
    .key = "serialization.repeats", .kind = SettingKind::Whole, .def = "2", .lo = 1, .hi = 100,
    .help = "requests per size",
    .quick = "1", .full = "3"};
inline constexpr Setting max_tokens{
    .key = "serialization.max_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 2, .hi = 100000,
    .help = "output tokens asked of each",
    .quick = "16"};
inline constexpr Setting prompt_tokens{
    .key = "serialization.prompt_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};

}  // namespace infdoctor::checks::serialization_setting
