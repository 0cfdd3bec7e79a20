#pragma once
// The replay check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::replay_metric {

inline constexpr MetricKey bodies_count{"replay.bodies_count"};
inline constexpr MetricKey body_bytes{"replay.body_bytes"};
inline constexpr MetricKey prompt_tokens_count{"replay.prompt_tokens_count"};
inline constexpr MetricKey stable_prefix_tokens_count{"replay.stable_prefix_tokens_count"};
inline constexpr MetricKey stable_prefix_ratio{"replay.stable_prefix_ratio"};
inline constexpr MetricKey max_tokens_count{"replay.max_tokens_count"};
inline constexpr MetricKey output_tokens_p50_count{"replay.output_tokens_p50_count"};
inline constexpr MetricKey first_ttft_ms{"replay.first_ttft_ms"};
inline constexpr MetricKey repeat_ttft_p50_ms{"replay.repeat_ttft_p50_ms"};
inline constexpr MetricKey total_p50_ms{"replay.total_p50_ms"};
inline constexpr MetricKey cached_tokens_p50_count{"replay.cached_tokens_p50_count"};
inline constexpr MetricKey prefix_saved_ms{"replay.prefix_saved_ms"};
inline constexpr MetricKey bytes_per_token_ratio{"replay.bytes_per_token_ratio"};
inline constexpr MetricKey samples_count{"replay.samples_count"};
inline constexpr MetricKey failures_count{"replay.failures_count"};

}  // namespace infdoctor::checks::replay_metric

// What `--set replay.NAME=VALUE` sets (`--body FILE` sets replay.body); the check lists them in
// its CheckInfo.
namespace infdoctor::checks::replay_setting {

inline constexpr Setting body{
    .key = "replay.body", .kind = SettingKind::Text, .def = "",
    .help = "request bodies of your own to send as they are: OpenAI chat or Anthropic messages JSON, one a line "
            "(--body FILE reads them from a file, - for stdin)"};
inline constexpr Setting repeats{
    .key = "replay.repeats", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 100,
    .help = "sends of each body, one after another: the first as it is, the others with a new word before the last "
            "user message, as the next question after the same system prompt"};
inline constexpr Setting max_bodies{
    .key = "replay.max_bodies", .kind = SettingKind::Whole, .def = "20", .lo = 1, .hi = 1000,
    .help = "bodies sent at most, the first ones"};

}  // namespace infdoctor::checks::replay_setting
