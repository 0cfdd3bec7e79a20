#pragma once
// The transport check's metrics and settings, each declared here once. Its CheckInfo names each metric through
// its constant here (and gives its unit and help), the check sets it through it, and other code
// reads it through it.
#include "checks/check.h"

namespace infdoctor::checks::transport_metric {

inline constexpr MetricKey connect_p50_ms{"transport.connect_p50_ms"};
inline constexpr MetricKey connect_p90_ms{"transport.connect_p90_ms"};
inline constexpr MetricKey connect_max_ms{"transport.connect_max_ms"};
inline constexpr MetricKey connect_p50_ci_low_ms{"transport.connect_p50_ci_low_ms"};
inline constexpr MetricKey connect_p50_ci_high_ms{"transport.connect_p50_ci_high_ms"};
inline constexpr MetricKey tunnel_p50_ms{"transport.tunnel_p50_ms"};
inline constexpr MetricKey via_proxy_count{"transport.via_proxy_count"};
inline constexpr MetricKey tls_p50_ms{"transport.tls_p50_ms"};
inline constexpr MetricKey tls_p50_ci_low_ms{"transport.tls_p50_ci_low_ms"};
inline constexpr MetricKey tls_p50_ci_high_ms{"transport.tls_p50_ci_high_ms"};
inline constexpr MetricKey tls_max_ms{"transport.tls_max_ms"};
inline constexpr MetricKey ttfb_p50_ms{"transport.ttfb_p50_ms"};
inline constexpr MetricKey server_wait_p50_ms{"transport.server_wait_p50_ms"};
inline constexpr MetricKey server_wait_p50_ci_low_ms{"transport.server_wait_p50_ci_low_ms"};
inline constexpr MetricKey server_wait_p50_ci_high_ms{"transport.server_wait_p50_ci_high_ms"};
inline constexpr MetricKey reused_ttfb_p50_ms{"transport.reused_ttfb_p50_ms"};
inline constexpr MetricKey reuse_saves_ms{"transport.reuse_saves_ms"};
inline constexpr MetricKey keepalive_ratio{"transport.keepalive_ratio"};
inline constexpr MetricKey cert_chain_count{"transport.cert_chain_count"};
inline constexpr MetricKey cert_chain_bytes{"transport.cert_chain_bytes"};
inline constexpr MetricKey tls13_ratio{"transport.tls13_ratio"};
inline constexpr MetricKey resumption_tries_count{"transport.resumption_tries_count"};
inline constexpr MetricKey resumption_ratio{"transport.resumption_ratio"};
inline constexpr MetricKey resumed_tls_p50_ms{"transport.resumed_tls_p50_ms"};
inline constexpr MetricKey resumption_saves_ms{"transport.resumption_saves_ms"};
inline constexpr MetricKey samples_count{"transport.samples_count"};
inline constexpr MetricKey failures_count{"transport.failures_count"};
inline constexpr MetricKey connect_spread_ms{"transport.connect_spread_ms"};
inline constexpr MetricKey addresses_count{"transport.addresses_count"};
inline constexpr MetricKey not_found_count{"transport.not_found_count"};

}  // namespace infdoctor::checks::transport_metric

// What `--set transport.NAME=VALUE` sets; the check lists them in its CheckInfo.
namespace infdoctor::checks::transport_setting {

inline constexpr Setting samples{
    .key = "transport.samples", .kind = SettingKind::Whole, .def = "5", .lo = 1, .hi = 1000,
    .help = "fresh connections, and requests on the kept-alive one",
    .quick = "3", .full = "10"};
inline constexpr Setting max_addresses{
    .key = "transport.max_addresses", .kind = SettingKind::Whole, .def = "4", .lo = 1, .hi = 64,
    .help = "addresses of the API host measured"};
inline constexpr Setting path{
    .key = "transport.path", .kind = SettingKind::Text, .def = "/models",
    .help = "what is fetched, under the base URL"};

}  // namespace infdoctor::checks::transport_setting
