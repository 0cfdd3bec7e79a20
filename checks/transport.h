#pragma once
// The transport check's metrics that other code reads (history, summary.md, report.html). Each is declared here once (the
// check's CheckInfo gives its unit and help), and the check's settings.
#include "checks/check.h"

namespace infdoctor::checks::transport_metric {

inline constexpr MetricKey connect_p50_ms{"transport.connect_p50_ms"};
inline constexpr MetricKey tls_p50_ms{"transport.tls_p50_ms"};
inline constexpr MetricKey tunnel_p50_ms{"transport.tunnel_p50_ms"};
inline constexpr MetricKey reused_ttfb_p50_ms{"transport.reused_ttfb_p50_ms"};
inline constexpr MetricKey via_proxy_count{"transport.via_proxy_count"};
inline constexpr MetricKey ttfb_p50_ms{"transport.ttfb_p50_ms"};

}  // namespace infdoctor::checks::transport_metric

// What `--set transport.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::transport_setting {

inline constexpr Setting samples{
    .key = "transport.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "fresh connections, and requests on the kept-alive one"};
inline constexpr Setting max_addresses{
    .key = "transport.max_addresses", .kind = SettingKind::Whole, .def = "4", .lo = 1, .hi = 64,
    .help = "addresses of the API host measured"};
inline constexpr Setting path{
    .key = "transport.path", .kind = SettingKind::Text, .def = "/models",
    .help = "what is fetched, under the base URL"};

}  // namespace infdoctor::checks::transport_setting
