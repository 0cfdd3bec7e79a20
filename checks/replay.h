#pragma once
// The replay check's metrics that other code reads (the workload's pricing) and its settings, each
// declared here once.
#include "checks/check.h"

namespace infdoctor::checks::replay_metric {
inline constexpr MetricKey body_bytes{"replay.body_bytes"};
inline constexpr MetricKey prompt_tokens_count{"replay.prompt_tokens_count"};
inline constexpr MetricKey output_tokens_p50_count{"replay.output_tokens_p50_count"};
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
