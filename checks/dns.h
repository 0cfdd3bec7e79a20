#pragma once
// The dns check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::dns_metric {

inline constexpr MetricKey p50_ms{"dns.p50_ms"};
inline constexpr MetricKey p50_ci_low_ms{"dns.p50_ci_low_ms"};
inline constexpr MetricKey p50_ci_high_ms{"dns.p50_ci_high_ms"};
inline constexpr MetricKey p90_ms{"dns.p90_ms"};
inline constexpr MetricKey max_ms{"dns.max_ms"};
inline constexpr MetricKey samples_count{"dns.samples_count"};
inline constexpr MetricKey failures_count{"dns.failures_count"};
inline constexpr MetricKey timeouts_count{"dns.timeouts_count"};
inline constexpr MetricKey nxdomain_count{"dns.nxdomain_count"};
inline constexpr MetricKey servfail_count{"dns.servfail_count"};
inline constexpr MetricKey refused_count{"dns.refused_count"};
inline constexpr MetricKey retries_count{"dns.retries_count"};
inline constexpr MetricKey resolvers_count{"dns.resolvers_count"};
inline constexpr MetricKey addresses_count{"dns.addresses_count"};
inline constexpr MetricKey worst_p50_ms{"dns.worst_p50_ms"};
inline constexpr MetricKey min_ttl_s{"dns.min_ttl_s"};

}  // namespace infdoctor::checks::dns_metric

// What `--set dns.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::dns_setting {

inline constexpr Setting samples{
    .key = "dns.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "lookups per resolver and address family",
    .quick = "3", .full = "10"};
inline constexpr Setting timeout_ms{
    .key = "dns.timeout_ms", .kind = SettingKind::Whole, .def = "2000", .lo = 10, .hi = 60000,
    .help = "c-ares' wait for each try, ms"};
inline constexpr Setting tries{
    .key = "dns.tries", .kind = SettingKind::Whole, .def = "2", .lo = 1, .hi = 10,
    .help = "c-ares' tries per lookup (a retry shows a lost query)"};
inline constexpr Setting system{
    .key = "dns.system", .kind = SettingKind::Whole, .def = "1", .lo = 0, .hi = 1,
    .help = "0: skip the resolvers of /etc/resolv.conf"};
inline constexpr Setting resolvers{
    .key = "dns.resolvers", .kind = SettingKind::Texts, .def = "",
    .help = "resolvers asked besides the system ones, IP[:PORT] each (--resolver adds here)"};

}  // namespace infdoctor::checks::dns_setting
