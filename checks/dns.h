#pragma once
// The dns check's metrics that other code reads (summary.md, report.html). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"

namespace infdoctor::checks::dns_metric {

inline constexpr MetricKey p50_ms{"dns.p50_ms"};

}  // namespace infdoctor::checks::dns_metric

// What `--set dns.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::dns_setting {

inline constexpr Setting samples{
    .key = "dns.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "lookups per resolver and address family"};
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
