#pragma once
// The load check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"
#include "checks/concurrency.h"

namespace infdoctor::checks::load_metric {

inline constexpr MetricKey reference_total_p50_ms{"load.reference_total_p50_ms"};
inline constexpr MetricKey capacity_count{"load.capacity_count"};
inline constexpr MetricKey wait_share_ratio{"load.wait_share_ratio"};
inline constexpr MetricKey peak_requests_per_s{"load.peak_requests_per_s"};
inline constexpr MetricKey knee_level_count{"load.knee_level_count"};
inline constexpr MetricKey max_level_count{"load.max_level_count"};
inline constexpr MetricKey ttft_p99_at_max_ms{"load.ttft_p99_at_max_ms"};
inline constexpr MetricKey total_p99_at_max_ms{"load.total_p99_at_max_ms"};
inline constexpr MetricKey throughput_at_max_tokens_per_s{"load.throughput_at_max_tokens_per_s"};
inline constexpr MetricKey goodput_at_max_ratio{"load.goodput_at_max_ratio"};
inline constexpr MetricKey goodput_level_count{"load.goodput_level_count"};
inline constexpr MetricKey slo_limits_count{"load.slo_limits_count"};
inline constexpr MetricKey arrival_ks_ratio{"load.arrival_ks_ratio"};
inline constexpr MetricKey failures_count{"load.failures_count"};
inline constexpr MetricKey rate_limited_count{"load.rate_limited_count"};

}  // namespace infdoctor::checks::load_metric

// What `--set load.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::load_setting {

inline constexpr Setting levels{
    .key = "load.levels", .kind = SettingKind::Numbers, .def = "5,10,20,50", .lo = 1, .hi = 1024,
    .help = "users at each level of the ramp, each sending its next request as its last answer ends (a closed "
            "loop)",
    .capped_by = &concurrency_setting::max_streams};
inline constexpr Setting rates{
    .key = "load.rates", .kind = SettingKind::Numbers, .def = "", .lo = 0.01, .hi = 1000,
    .help = "requests per second at each level instead, arriving at random (Poisson), whether or not earlier "
            "answers ended (an open loop: it shows queueing that a closed loop hides; --max-concurrency does not hold "
            "it)"};
inline constexpr Setting requests{
    .key = "load.requests", .kind = SettingKind::Whole, .def = "100", .lo = 5, .hi = 10000,
    .help = "requests at each level (a 99th percentile wants 100 or more)"};
inline constexpr Setting prompt_tokens{
    .key = "load.prompt_tokens", .kind = SettingKind::Whole, .def = "512", .lo = 1, .hi = 1000000,
    .help = "prompt of each request, tokens (--workload prompt=P sets it)"};
inline constexpr Setting max_tokens{
    .key = "load.max_tokens", .kind = SettingKind::Whole, .def = "128", .lo = 1, .hi = 100000,
    .help = "max_tokens of each request (--workload output=O sets it)"};
inline constexpr Setting mix{
    .key = "load.mix", .kind = SettingKind::Text, .def = "",
    .help = "a mix of request sets, NAME:SHARE:PROMPT:OUTPUT each, comma-separated, PROMPT a size or a range drawn "
            "from evenly (chat:0.7:100-500:128,docs:0.3:4000-16000:512); empty: every request of load.prompt_tokens "
            "and load.max_tokens"};
inline constexpr Setting slo_ttft_ms{
    .key = "load.slo_ttft_ms", .kind = SettingKind::Number, .def = "0", .lo = 0, .hi = 3600000,
    .help = "a request meets the SLO only with its first token within this (0: no limit; --slo ttft_p50_ms or "
            "ttft_p90_ms sets it)"};
inline constexpr Setting slo_tpot_ms{
    .key = "load.slo_tpot_ms", .kind = SettingKind::Number, .def = "0", .lo = 0, .hi = 3600000,
    .help = "... and its time per output token within this (0: no limit; --slo tpot_p50_ms sets it)"};
inline constexpr Setting slo_total_ms{
    .key = "load.slo_total_ms", .kind = SettingKind::Number, .def = "0", .lo = 0, .hi = 3600000,
    .help = "... and the whole answer within this (0: no limit; --slo total_p50_ms sets it)"};
inline constexpr Setting seed{
    .key = "load.seed", .kind = SettingKind::Whole, .def = "1", .lo = 0, .hi = 2147483647,
    .help = "the seed of the random arrivals: the same seed, the same schedule"};

}  // namespace infdoctor::checks::load_setting
