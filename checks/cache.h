#pragma once
// The cache check's settings, each declared here once.
#include "checks/check.h"

// What `--set cache.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::cache_setting {

inline constexpr Setting prefix_tokens{
    .key = "cache.prefix_tokens", .kind = SettingKind::Whole, .def = "2048", .lo = 64, .hi = 200000,
    .help = "the shared prefix, tokens (OpenAI caches prompts from 1,024 tokens on)"};
inline constexpr Setting suffix_tokens{
    .key = "cache.suffix_tokens", .kind = SettingKind::Whole, .def = "16", .lo = 1, .hi = 10000,
    .help = "what follows the prefix, different in every request, tokens"};
inline constexpr Setting repeats{
    .key = "cache.repeats", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 50,
    .help = "requests of fresh prefixes (the misses), and of the shared prefix back to back after it fills the cache"};
inline constexpr Setting idle_gaps{
    .key = "cache.idle_gaps", .kind = SettingKind::Numbers, .def = "10,60", .lo = 0, .hi = 86400,
    .help = "idle seconds before the shared prefix is sent again: how long the cache keeps it"};

}  // namespace infdoctor::checks::cache_setting
