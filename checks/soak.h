#pragma once
// The soak check's settings, each declared here once.
#include "checks/check.h"

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
