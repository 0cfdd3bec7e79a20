#pragma once
// The path check's metrics that other code reads (the workload's pricing, summary.md). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"

namespace infdoctor::checks::path_metric {

inline constexpr MetricKey tcp_rtt_p50_ms{"path.tcp_rtt_p50_ms"};

}  // namespace infdoctor::checks::path_metric

// What `--set path.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::path_setting {

inline constexpr Setting samples{
    .key = "path.samples", .kind = SettingKind::Whole, .def = "10", .lo = 1, .hi = 1000,
    .help = "TCP connects and ICMP echoes per address"};
inline constexpr Setting timeout_ms{
    .key = "path.timeout_ms", .kind = SettingKind::Whole, .def = "2000", .lo = 10, .hi = 60000,
    .help = "the wait for each probe, ms"};
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
    .help = "the hop table's deepest TTL (--max-hops)"};
inline constexpr Setting probes_per_hop{
    .key = "path.probes_per_hop", .kind = SettingKind::Whole, .def = "3", .lo = 1, .hi = 10,
    .help = "hop table probes at each TTL"};
inline constexpr Setting max_addresses{
    .key = "path.max_addresses", .kind = SettingKind::Whole, .def = "4", .lo = 1, .hi = 64,
    .help = "addresses of the API host probed"};

}  // namespace infdoctor::checks::path_setting
