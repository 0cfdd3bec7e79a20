#pragma once
// The concurrency check's metrics that other code reads (the workload's pricing). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"

namespace infdoctor::checks::concurrency_metric {

inline constexpr MetricKey max_level_count{"concurrency.max_level_count"};

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
    .capped_by = &max_streams};
inline constexpr Setting max_tokens{
    .key = "concurrency.max_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "output tokens asked of each"};
inline constexpr Setting prompt_tokens{
    .key = "concurrency.prompt_tokens", .kind = SettingKind::Whole, .def = "32", .lo = 1, .hi = 100000,
    .help = "prompt tokens of each"};
inline constexpr Setting rounds{
    .key = "concurrency.rounds", .kind = SettingKind::Whole, .def = "1", .lo = 1, .hi = 100,
    .help = "batches per level"};

}  // namespace infdoctor::checks::concurrency_setting
