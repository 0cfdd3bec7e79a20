#pragma once
// The serialization check's metrics that other code reads and its settings, each declared here once.
#include "checks/check.h"

// The serialization check's metrics that other code reads (the books of the run's requests).
namespace infdoctor::checks::serialization_metric {
inline constexpr MetricKey upload_parse_ms_per_mb{"serialization.upload_parse_ms_per_mb"};
}  // namespace infdoctor::checks::serialization_metric

// What `--set serialization.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::serialization_setting {

inline constexpr Setting sizes_kb{
    .key = "serialization.sizes_kb", .kind = SettingKind::Numbers, .def = "1,64,1024,4096", .lo = 0, .hi = 65536,
    .help = "request bodies padded to these sizes, KB"};
inline constexpr Setting repeats{
    .key = "serialization.repeats", .kind = SettingKind::Whole, .def = "2", .lo = 1, .hi = 100,
    .help = "requests per size"};
inline constexpr Setting max_tokens{
    .key = "serialization.max_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 2, .hi = 100000,
    .help = "output tokens asked of each"};
inline constexpr Setting prompt_tokens{
    .key = "serialization.prompt_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};

}  // namespace infdoctor::checks::serialization_setting
