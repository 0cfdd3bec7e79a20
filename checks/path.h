#pragma once
// The path check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::path_metric {

inline constexpr MetricKey tcp_rtt_p50_ms{"path.tcp_rtt_p50_ms"};
inline constexpr MetricKey tcp_rtt_p50_ci_low_ms{"path.tcp_rtt_p50_ci_low_ms"};
inline constexpr MetricKey tcp_rtt_p50_ci_high_ms{"path.tcp_rtt_p50_ci_high_ms"};
inline constexpr MetricKey tcp_rtt_p90_ms{"path.tcp_rtt_p90_ms"};
inline constexpr MetricKey tcp_rtt_max_ms{"path.tcp_rtt_max_ms"};
inline constexpr MetricKey tcp_rtt_samples_count{"path.tcp_rtt_samples_count"};
inline constexpr MetricKey tcp_loss_ratio{"path.tcp_loss_ratio"};
inline constexpr MetricKey icmp_rtt_p50_ms{"path.icmp_rtt_p50_ms"};
inline constexpr MetricKey icmp_rtt_p90_ms{"path.icmp_rtt_p90_ms"};
inline constexpr MetricKey icmp_rtt_max_ms{"path.icmp_rtt_max_ms"};
inline constexpr MetricKey icmp_rtt_samples_count{"path.icmp_rtt_samples_count"};
inline constexpr MetricKey icmp_loss_ratio{"path.icmp_loss_ratio"};
inline constexpr MetricKey hops_count{"path.hops_count"};
inline constexpr MetricKey last_hop_rtt_ms{"path.last_hop_rtt_ms"};
inline constexpr MetricKey rtt_spread_ms{"path.rtt_spread_ms"};
inline constexpr MetricKey addresses_count{"path.addresses_count"};
inline constexpr MetricKey silent_addresses_count{"path.silent_addresses_count"};
inline constexpr MetricKey tcp_refused_count{"path.tcp_refused_count"};
inline constexpr MetricKey via_proxy_count{"path.via_proxy_count"};
inline constexpr MetricKey direct_answered_ratio{"path.direct_answered_ratio"};
inline constexpr MetricKey direct_refused_count{"path.direct_refused_count"};

}  // namespace infdoctor::checks::path_metric

// What `--set path.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::path_setting {

inline constexpr Setting samples{
    .key = "path.samples", .kind = SettingKind::Whole, .def = "10", .lo = 1, .hi = 1000,
    .help = "TCP connects and ICMP echoes per address",
    .quick = "5", .full = "20"};
inline constexpr Setting timeout_ms{
    .key = "path.timeout_ms", .kind = SettingKind::Whole, .def = "2000", .lo = 10, .hi = 60000,
    .help = "the wait for each probe, ms; once a probe was answered, the probes of an address not yet answered "
            "wait the retransmission timeout of the round trips answered (RFC 6298: at least 1 s) instead"};
inline constexpr Setting interval_ms{
    .key = "path.interval_ms", .kind = SettingKind::Whole, .def = "50", .lo = 0, .hi = 10000,
    .help = "the pause between probes, ms"};
inline constexpr Setting icmp{
    .key = "path.icmp", .kind = SettingKind::Whole, .def = "1", .lo = 0, .hi = 1,
    .help = "0: no ICMP echo"};
inline constexpr Setting trace{
    .key = "path.trace", .kind = SettingKind::Choice, .def = "udp",
    .help = "the hop table: UDP probes, TCP SYNs to the API port, or none",
    .choices = "udp,tcp,off"};
inline constexpr Setting max_hops{
    .key = "path.max_hops", .kind = SettingKind::Whole, .def = "30", .lo = 1, .hi = 64,
    .help = "the hop table's deepest TTL (--max-hops)",
    .quick = "12"};
inline constexpr Setting probes_per_hop{
    .key = "path.probes_per_hop", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 10,
    .help = "hop table probes at each TTL",
    .quick = "1"};
inline constexpr Setting max_addresses{
    .key = "path.max_addresses", .kind = SettingKind::Whole, .def = "4", .lo = 1, .hi = 64,
    .help = "addresses of the API host probed"};

}  // namespace infdoctor::checks::path_setting
