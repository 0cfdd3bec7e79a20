#pragma once
// The cache check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::cache_metric {

inline constexpr MetricKey prompt_tokens_count{"cache.prompt_tokens_count"};
inline constexpr MetricKey reported_ratio{"cache.reported_ratio"};
inline constexpr MetricKey hit_ratio{"cache.hit_ratio"};
inline constexpr MetricKey cached_tokens_p50_count{"cache.cached_tokens_p50_count"};
inline constexpr MetricKey short_ttft_p50_ms{"cache.short_ttft_p50_ms"};
inline constexpr MetricKey miss_ttft_p50_ms{"cache.miss_ttft_p50_ms"};
inline constexpr MetricKey hit_ttft_p50_ms{"cache.hit_ttft_p50_ms"};
inline constexpr MetricKey saves_ms{"cache.saves_ms"};
inline constexpr MetricKey held_s{"cache.held_s"};
inline constexpr MetricKey gone_s{"cache.gone_s"};
inline constexpr MetricKey gaps_count{"cache.gaps_count"};
inline constexpr MetricKey samples_count{"cache.samples_count"};
inline constexpr MetricKey failures_count{"cache.failures_count"};

}  // namespace infdoctor::checks::cache_metric

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
    .help = "requests of fresh prefixes (the misses), and of the shared prefix back to back after it fills the cache",
    .quick = "2"};
inline constexpr Setting idle_gaps{
    .key = "cache.idle_gaps", .kind = SettingKind::Numbers, .def = "10,60", .lo = 0, .hi = 86400,
    .help = "idle seconds before the shared prefix is sent again: how long the cache keeps it",
    .quick = "5", .full = "10,60,300,600"};

}  // namespace infdoctor::checks::cache_setting
