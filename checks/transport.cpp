// checks/transport.cpp. Measures, per resolved address (pinned with CURLOPT_RESOLVE, up to
// transport.max_addresses): transport.samples fresh connections (TCP connect, TLS handshake, time
// to first byte of GET <base>/models) and transport.samples requests on one kept-alive
// connection; the TLS version, cipher, ALPN and the certificate chain's length and size; whether
// the server keeps connections alive and what reuse saves; over https, transport.samples more fresh
// connections that each offer the TLS session the one before was given, as clients that keep
// sessions do (the SDKs' HTTP libraries), and whether the server resumes them.
// Cannot tell: where TLS terminates (a CDN edge or the origin), or server time from network time.
// Emits, for the first address: transport.{connect_p50_ms,tls_p50_ms,ttfb_p50_ms,
// reused_ttfb_p50_ms,reuse_saves_ms,keepalive_ratio,cert_chain_count,cert_chain_bytes,...}.
#include <cstdio>

#include "api/endpoint_spec.h"
#include "checks/check.h"
#include "checks/registry.h"
#include "checks/transport.h"
#include "checks/silence.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kTransportInfo{
    "transport",
    "TCP and TLS",
    "Connect, TLS handshake and first byte on fresh and on reused connections, per address.",
    {{transport_metric::connect_p50_ms.name, "ms", "median TCP connect, fresh connections",
      {.layer = "TCP connect", .per = "new connections", .history = true}},
     {transport_metric::connect_p90_ms.name, "ms", "90th percentile TCP connect, fresh connections"},
     {transport_metric::connect_max_ms.name, "ms", "slowest TCP connect, fresh connections"},
     {transport_metric::connect_p50_ci_low_ms.name, "ms", "95 % interval of the median connect, low end"},
     {transport_metric::connect_p50_ci_high_ms.name, "ms", "95 % interval of the median connect, high end"},
     {transport_metric::tunnel_p50_ms.name, "ms",
      "through a proxy: median time from the TCP connect to the proxy to its answer to CONNECT (it resolves the host, connects to it and answers), fresh connections"},
     {transport_metric::via_proxy_count.name, "count", "1 when the requests go through a proxy: then connect is to the proxy, and one route is measured, not each address"},
     {transport_metric::tls_p50_ms.name, "ms", "median TLS handshake, fresh connections",
      {.layer = "TLS handshake", .per = "new connections", .history = true, .slo = "tls_p50_ms"}},
     {transport_metric::tls_p50_ci_low_ms.name, "ms", "95 % interval of the median TLS handshake, low end"},
     {transport_metric::tls_p50_ci_high_ms.name, "ms", "95 % interval of the median TLS handshake, high end"},
     {transport_metric::tls_max_ms.name, "ms", "slowest TLS handshake"},
     {transport_metric::ttfb_p50_ms.name, "ms", "median time to first byte from the request's start, fresh connections",
      {.history = true, .column = "TTFB p50"}},
     {transport_metric::server_wait_p50_ms.name, "ms", "median time from request sent to first byte, fresh connections",
      {.layer = "server wait (first byte)", .per = "every request"}},
     {transport_metric::server_wait_p50_ci_low_ms.name, "ms", "95 % interval of the median server wait, low end"},
     {transport_metric::server_wait_p50_ci_high_ms.name, "ms", "95 % interval of the median server wait, high end"},
     {transport_metric::reused_ttfb_p50_ms.name, "ms", "median time to first byte on a reused connection"},
     {transport_metric::reuse_saves_ms.name, "ms", "fresh minus reused median time to first byte"},
     {transport_metric::keepalive_ratio.name, "ratio", "requests that did reuse the kept-alive connection"},
     {transport_metric::cert_chain_count.name, "count", "certificates the server sent"},
     {transport_metric::cert_chain_bytes.name, "bytes", "their DER size"},
     {transport_metric::tls13_ratio.name, "ratio", "1 when TLS 1.3 was negotiated, 0 for older versions"},
     {transport_metric::resumption_tries_count.name, "count",
      "fresh connections that offered the TLS session the connection before them was given"},
     {transport_metric::resumption_ratio.name, "ratio", "of those, the share the server resumed (an abbreviated handshake)"},
     {transport_metric::resumed_tls_p50_ms.name, "ms", "median TLS handshake of the resumed connections"},
     {transport_metric::resumption_saves_ms.name, "ms", "median full handshake minus median resumed one"},
     {transport_metric::samples_count.name, "count", "fresh connections that succeeded, first address"},
     {transport_metric::failures_count.name, "count", "requests that failed, all addresses"},
     {transport_metric::connect_spread_ms.name, "ms", "slowest address's median connect minus the fastest's"},
     {transport_metric::addresses_count.name, "count", "addresses probed"},
     {transport_metric::not_found_count.name, "count",
      "GETs of the models list that answered 404, set when every one did (a base URL without /v1 does that)"}},
    {{&transport_metric::not_found_count, "GET of the models list answered 404 every time: a base URL without /v1 does that (a server without the list too)"},
     {&transport_metric::tunnel_p50_ms, "through the proxy: connect {connect_p50_ms}, tunnel {tunnel_p50_ms}, TLS {tls_p50_ms}, first byte {ttfb_p50_ms} (reused {reused_ttfb_p50_ms})"},
     {nullptr, "connect {connect_p50_ms}, TLS {tls_p50_ms}, first byte {ttfb_p50_ms} (reused {reused_ttfb_p50_ms})"}},
    {transport_setting::samples, transport_setting::max_addresses, transport_setting::path}};

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

class TransportCheck final : public Check {
 public:
  explicit TransportCheck(const Options& o)
      : samples_(o.whole(transport_setting::samples)),
        max_addresses_(o.whole(transport_setting::max_addresses)),
        path_(o.text(transport_setting::path)) {}
  const CheckInfo& info() const override { return kTransportInfo; }
  // Connects, handshakes and GETs of the models list reach no model. With more than one address
  // it goes before the first model request, to leave an address that never answers (the
  // requests are pinned to the others); with one, or through a proxy, the requests need nothing
  // from it first and it waits for the idle gaps.
  bool runs_in_idle() const override { return true; }
  bool idle_now(const CheckContext& ctx) const override {
    return api::proxy_route(ctx.endpoint()).has_value() || ctx.addresses().size() <= 1;
  }
  std::string idle_unless() const override {
    return "the host has more than one address (it then goes first, to leave one that never answers before the "
           "first model request)";
  }
  std::vector<Step> plan() const override {
    return {{std::to_string(samples_) + " GET " + path_ + " on fresh connections (over https " + std::to_string(samples_ + 1) +
                 " more offering the last TLS session) and " + std::to_string(samples_ + 1) +
                 " on one kept alive, to each of up to " + std::to_string(max_addresses_) + " addresses",
             0}};
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kTransportInfo.id);
    const Target& t = ctx.target();
    // Through a proxy the requests' connections are the proxy's, whatever the API host resolves
    // to: one route is measured, the way the requests take it (connect to the proxy, its tunnel,
    // TLS with the server through it), and no address is pinned.
    const auto proxy = api::proxy_route(ctx.endpoint());
    std::vector<std::string> addrs = ctx.addresses();
    if (proxy) addrs = {"via " + proxy->url};
    if (addrs.empty()) return out.skip("no address to probe: the API host did not resolve");
    const std::size_t n_addr = std::min<std::size_t>(addrs.size(), static_cast<std::size_t>(max_addresses_));
    nlohmann::json per_address = nlohmann::json::array();
    Table addresses_table{"transport: per address (ms, medians)",
                          {"address", "connect", "TLS", "ttfb", "reused", "saves", "TLS, ALPN, chain", "keep-alive"}, {}, ""};
    std::optional<double> best, worst;
    std::optional<core::Error> first_error;
    int failures = 0, silent = 0;
    bool any_ok = false, primary_taken = false;
    std::vector<double> answered_connects;  // every connect answered, all addresses
    // An address the path check gave up on is not waited on again, a fact already, said here;
    // unless every one was, when the host is unreachable and the connects say how.
    const bool some_answered = std::any_of(addrs.begin(), addrs.begin() + static_cast<std::ptrdiff_t>(n_addr),
                                           [&](const std::string& ip) { return !ctx.silent(ip); });
    // An address that answered no connect: its row says so and what it cost.
    const auto say_silent = [&](const std::string& ip, nlohmann::json why) {
      per_address.push_back({{"address", ip}, {"silent", std::move(why)}});
      addresses_table.rows.push_back({ip, "no answer", "-", "-", "-", "-", "-", "-"});
      ++silent;
    };
    for (std::size_t ai = 0; ai < n_addr; ++ai) {
      const std::string& ip = addrs[ai];
      if (!proxy && some_answered && ctx.silent(ip)) {
        say_silent(ip, {{"note", "answered no connect of the path check: not probed"}});
        continue;
      }
      const std::string pin =
          proxy ? "" : t.host + ":" + std::to_string(t.port) + ":" + (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip);
      AnswerWatch watch;
      std::vector<double> connect, tunnel, tls, ttfb, wait, reused;
      std::optional<http::TlsInfo> tls_info;
      std::string http_version;
      long http_status = 0;
      int reuse_hits = 0, reuse_tries = 0, not_found = 0;
      // Fresh connections: each pays DNS-free connect and TLS (the address is pinned).
      for (int i = 0; i < samples_ && ctx.before_deadline() && !watch.given_up(); ++i) {
        ctx.progress("transport: fresh connection to " + ip + " (" + std::to_string(i + 1) + "/" +
                     std::to_string(samples_) + ")");
        http::Request req = make_request(ctx, pin, /*fresh=*/true);
        // Until the address answers a connect, it is given the retransmission timeout of the
        // connects the others answered in (checks/silence.h), not the whole connect timeout.
        if (!watch.answered()) req.connect_timeout = retransmission_timeout(answered_connects, req.connect_timeout);
        const http::Response r = ctx.http().perform(req);
        record_sample(out, ip, "fresh", r);
        watch.record(r.status.ok() || r.failed_phase != "connect" || r.status.error().code == core::ErrorCode::ConnectRefused);
        if (auto v = r.connect_phase()) answered_connects.push_back(core::to_ms(*v));
        if (!r.status.ok()) {
          ++failures;
          if (!first_error) {
            first_error = r.status.error();
            first_error->message = r.failed_phase + ": " + first_error->message;
          }
          continue;
        }
        any_ok = true;
        http_status = r.http_status;
        if (r.http_status == 404) ++not_found;
        http_version = r.http_version;
        if (r.tls) tls_info = r.tls;
        if (auto v = r.connect_phase()) connect.push_back(core::to_ms(*v));
        if (auto v = r.tunnel_phase()) tunnel.push_back(core::to_ms(*v));
        if (auto v = r.tls_phase()) tls.push_back(core::to_ms(*v));
        if (auto v = r.ttfb()) ttfb.push_back(core::to_ms(*v));
        if (auto v = r.server_wait()) wait.push_back(core::to_ms(*v));
      }
      // Fresh connections again, each offering the session the one before it was given (the first
      // is only given one): what a new connection costs a client that keeps its TLS sessions.
      std::vector<double> resumed_tls;
      int resume_tries = 0, resumed = 0;
      if (watch.given_up()) {
        say_silent(ip, {{"probes_count", watch.probes()},
                        {"note", "no answer to " + std::to_string(watch.probes()) + " connects in a row: given up"}});
        ctx.mark_silent(ip);
        continue;
      }
      for (int i = 0; t.scheme == "https" && i <= samples_ && ctx.before_deadline(); ++i) {
        ctx.progress("transport: fresh connection offering a TLS session to " + ip);
        http::Request req = make_request(ctx, pin, /*fresh=*/true);
        req.tls.resume = true;
        const http::Response r = ctx.http().perform(req);
        if (i == 0) continue;
        record_sample(out, ip, "resuming", r);
        if (!r.status.ok() || !r.tls) continue;
        ++resume_tries;
        if (!r.tls->resumed) continue;
        ++resumed;
        if (auto v = r.tls_phase()) resumed_tls.push_back(core::to_ms(*v));
      }
      // One kept-alive connection: the first request opens it, the rest should reuse it.
      const std::unique_ptr<HttpPort> keep = ctx.http().separate();
      for (int i = 0; i <= samples_ && ctx.before_deadline(); ++i) {
        ctx.progress("transport: kept-alive connection to " + ip);
        http::Request req = make_request(ctx, pin, /*fresh=*/false);
        const http::Response r = keep->perform(req);
        if (i == 0) continue;
        record_sample(out, ip, "reused", r);
        if (!r.status.ok()) {
          ++failures;
          continue;
        }
        ++reuse_tries;
        if (r.connection_reused) {
          ++reuse_hits;
          if (r.ttfb()) reused.push_back(core::to_ms(*r.ttfb()));
        }
      }
      const stats::Summary cs = stats::summarize(connect), ls = stats::summarize(tls), fs = stats::summarize(ttfb),
                           ws = stats::summarize(wait), rs = stats::summarize(reused);
      const double keepalive = reuse_tries > 0 ? static_cast<double>(reuse_hits) / reuse_tries : 0.0;
      std::optional<double> saves;
      if (fs.p50 && rs.p50) saves = *fs.p50 - *rs.p50;
      nlohmann::json row = {{"address", ip},
                            {"http_status", http_status},
                            {"http_version", http_version},
                            {"connect_p50_ms", opt(cs.p50)},
                            {"tunnel_p50_ms", opt(stats::median(tunnel))},
                            {"tls_p50_ms", opt(ls.p50)},
                            {"ttfb_p50_ms", opt(fs.p50)},
                            {"server_wait_p50_ms", opt(ws.p50)},
                            {"reused_ttfb_p50_ms", opt(rs.p50)},
                            {"reuse_saves_ms", opt(saves)},
                            {"keepalive_ratio", keepalive},
                            {"samples_count", fs.count}};
      if (tls_info) {
        row["tls"] = {{"version", tls_info->version},
                      {"cipher", tls_info->cipher},
                      {"alpn", tls_info->alpn},
                      {"chain_count", tls_info->chain_count},
                      {"chain_bytes", tls_info->chain_bytes},
                      {"resumed", resumed},
                      {"resumption_tries", resume_tries}};
      }
      per_address.push_back(row);
      std::string tls_text = "plain HTTP";
      if (tls_info)
        tls_text = tls_info->version + ", " + (tls_info->alpn.empty() ? std::string("no ALPN") : tls_info->alpn) + ", " +
                   std::to_string(tls_info->chain_count) + " certs / " + std::to_string(tls_info->chain_bytes) + " bytes";
      char keep_text[32];
      std::snprintf(keep_text, sizeof keep_text, "%.0f%%", keepalive * 100);
      addresses_table.rows.push_back({ip, cell(cs.p50), cell(ls.p50), cell(fs.p50), cell(rs.p50), cell(saves), tls_text, keep_text});
      if (cs.p50) {
        best = best ? std::min(*best, *cs.p50) : *cs.p50;
        worst = worst ? std::max(*worst, *cs.p50) : *cs.p50;
      }
      if (!primary_taken) {  // the first address that answered: the one the requests go to
        primary_taken = true;
        // Its samples are counted by their first bytes (samples_count), not by their connects.
        out.add_summary({transport_metric::connect_p50_ms, transport_metric::connect_p90_ms, transport_metric::connect_max_ms},
                        connect);
        out.add_median_ci({transport_metric::connect_p50_ci_low_ms, transport_metric::connect_p50_ci_high_ms}, connect);
        out.add_median_ci({transport_metric::tls_p50_ci_low_ms, transport_metric::tls_p50_ci_high_ms}, tls);
        out.add_median_ci({transport_metric::server_wait_p50_ci_low_ms, transport_metric::server_wait_p50_ci_high_ms}, wait);
        out.set(transport_metric::samples_count, static_cast<double>(fs.count));
        if (ls.p50) {
          out.set(transport_metric::tls_p50_ms, *ls.p50);
          out.set(transport_metric::tls_max_ms, *ls.max);
        }
        if (fs.p50) out.set(transport_metric::ttfb_p50_ms, *fs.p50);
        if (auto v = stats::median(tunnel)) out.set(transport_metric::tunnel_p50_ms, *v);
        if (proxy) out.set(transport_metric::via_proxy_count, 1);
        if (ws.p50) out.set(transport_metric::server_wait_p50_ms, *ws.p50);
        if (rs.p50) out.set(transport_metric::reused_ttfb_p50_ms, *rs.p50);
        if (saves) out.set(transport_metric::reuse_saves_ms, *saves);
        if (reuse_tries > 0) out.set(transport_metric::keepalive_ratio, keepalive);
        if (fs.count > 0 && not_found == static_cast<int>(fs.count)) out.set(transport_metric::not_found_count, not_found);
        if (tls_info) {
          out.set(transport_metric::cert_chain_count, tls_info->chain_count);
          out.set(transport_metric::cert_chain_bytes, tls_info->chain_bytes);
          out.set(transport_metric::tls13_ratio, tls_info->version == "TLSv1.3" ? 1.0 : 0.0);
        }
        if (resume_tries > 0) {
          out.set(transport_metric::resumption_tries_count, resume_tries);
          out.set(transport_metric::resumption_ratio, static_cast<double>(resumed) / resume_tries);
        }
        if (auto v = stats::median(resumed_tls)) {
          out.set(transport_metric::resumed_tls_p50_ms, *v);
          if (ls.p50) out.set(transport_metric::resumption_saves_ms, *ls.p50 - *v);
        }
      }
    }
    out.details["addresses"] = per_address;
    if (silent > 0) addresses_table.note = std::to_string(silent) + " of the addresses answered no connect";
    if (!addresses_table.rows.empty()) out.tables.push_back(std::move(addresses_table));
    out.set(transport_metric::failures_count, failures);
    out.set(transport_metric::addresses_count, static_cast<double>(n_addr));
    if (best && worst) out.set(transport_metric::connect_spread_ms, *worst - *best);
    if (!any_ok && first_error) return out.fail(*first_error);
    return out;
  }

 private:
  http::Request make_request(const CheckContext& ctx, const std::string& pin, bool fresh) const {
    const api::Endpoint& ep = ctx.endpoint();
    http::Request req;
    req.method = "GET";
    req.url = ep.url(path_);
    ep.add_headers(req.headers);
    if (!pin.empty()) req.resolve = {pin};
    req.tls = ep.tls;
    req.proxy = ep.proxy;
    req.fresh_connection = fresh;
    // No request may outlive the check's deadline.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(ctx.deadline() - ctx.clock().now());
    req.timeout = std::max(std::chrono::milliseconds(1), std::min(ep.timeout, left));
    req.connect_timeout = std::min(ep.connect_timeout, req.timeout);
    req.max_body_bytes = 1u << 20;
    return req;
  }

  static void record_sample(CheckResult& out, const std::string& ip, const char* kind, const http::Response& r) {
    auto ms = [](const std::optional<core::Micros>& v) { return v ? nlohmann::json(core::to_ms(*v)) : nlohmann::json(nullptr); };
    out.samples.push_back({{"address", ip},
                           {"connection", kind},
                           {"reused", r.connection_reused},
                           {"status", r.status.ok() ? "ok" : std::string(r.status.error().token())},
                           {"failed_phase", r.failed_phase},
                           {"http_status", r.http_status},
                           {"connect_end_ms", ms(r.times.connect)},
                           {"tls_end_ms", ms(r.times.appconnect)},
                           {"ttfb_ms", ms(r.ttfb())},
                           {"total_ms", ms(r.times.total)}});
  }

  int samples_;
  int max_addresses_;
  std::string path_;
};

}  // namespace

CheckEntry transport_entry() { return entry_of<TransportCheck>(kTransportInfo); }

}  // namespace infdoctor::checks
