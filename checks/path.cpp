// checks/path.cpp. Measures, per resolved address (up to path.max_addresses): TCP connect time to
// the API port ("TCP ping": SYN to SYN-ACK, one round trip; a RST counts as an answer too), ICMP
// echo where the socket is permitted, and a traceroute-style hop table (UDP, or TCP SYN with
// path.trace=tcp, rising TTL, errors read through IP_RECVERR as tracepath(8) does; no root).
// Through a proxy (--proxy, $https_proxy) the requests' path is the one to the proxy: its address
// and port are probed as the first address, and the direct route to the API host is tried with a
// few TCP connects on the side, recorded as a fact (answered, refused, unreachable), never as loss
// of the path the requests take.
// Cannot tell: which direction of the path is slow, or delay inside the server's own host.
// An address that answers no connect is given up after a few probes (checks/silence.h): said in
// its row and counted, and later checks and the requests leave it (CheckContext::mark_silent).
// Emits, for the first address that answered: path.{tcp_rtt_p50_ms,tcp_rtt_p90_ms,tcp_rtt_max_ms,
// tcp_rtt_samples_count,tcp_loss_ratio,icmp_rtt_p50_ms,icmp_loss_ratio,hops_count,
// last_hop_rtt_ms}; over all addresses: path.rtt_spread_ms, path.silent_addresses_count.

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "api/endpoint_spec.h"
#include "checks/check.h"
#include "checks/path.h"
#include "checks/silence.h"
#include "checks/registry.h"
#include "core/json_text.h"
#include "core/strings.h"
#include "dns/resolver.h"
#include "net/probes.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kPathInfo{
    "path",
    "Network path",
    "Round-trip time and loss to the API's addresses, and the hops on the way.",
    {{path_metric::tcp_rtt_p50_ms.name, "ms", "median TCP connect time to the API port",
      {.layer = "network path (TCP round trip)", .per = "every request", .explains = Explains::Whole, .history = true, .slo = "rtt_p50_ms"}},
     {path_metric::tcp_rtt_p50_ci_low_ms.name, "ms", "95 % interval of the median TCP round trip, low end"},
     {path_metric::tcp_rtt_p50_ci_high_ms.name, "ms", "95 % interval of the median TCP round trip, high end"},
     {path_metric::tcp_rtt_p90_ms.name, "ms", "90th percentile TCP connect time"},
     {path_metric::tcp_rtt_max_ms.name, "ms", "slowest TCP connect"},
     {path_metric::tcp_rtt_samples_count.name, "count", "TCP connects that got an answer"},
     {path_metric::tcp_loss_ratio.name, "ratio", "TCP connects with no answer in time"},
     {path_metric::icmp_rtt_p50_ms.name, "ms", "median ICMP echo round trip"},
     {path_metric::icmp_rtt_p90_ms.name, "ms", "90th percentile ICMP echo round trip"},
     {path_metric::icmp_rtt_max_ms.name, "ms", "slowest ICMP echo round trip"},
     {path_metric::icmp_rtt_samples_count.name, "count", "ICMP echo replies"},
     {path_metric::icmp_loss_ratio.name, "ratio", "ICMP echoes with no reply"},
     {path_metric::hops_count.name, "count", "hops to the destination"},
     {path_metric::last_hop_rtt_ms.name, "ms", "median round trip of the last hop"},
     {path_metric::rtt_spread_ms.name, "ms", "slowest address's median TCP RTT minus the fastest's"},
     {path_metric::addresses_count.name, "count", "addresses probed"},
     {path_metric::silent_addresses_count.name, "count",
      "addresses that answered no TCP connect, given up after three in a row (a client that tries one first waits "
      "before it falls back)"},
     {path_metric::tcp_refused_count.name, "count", "TCP connects refused (RST): the host answered, nothing listens on the port"},
     {path_metric::via_proxy_count.name, "count", "1 when the requests go through a proxy: the path probed is the one to the proxy"},
     {path_metric::direct_answered_ratio.name, "ratio",
      "through a proxy: the direct route's TCP connects to the API host that were accepted (0: the direct route is closed or does not resolve)"},
     {path_metric::direct_refused_count.name, "count", "through a proxy: the direct route's TCP connects refused (RST)"}},
    {{&path_metric::via_proxy_count, "to the proxy: TCP RTT p50 {tcp_rtt_p50_ms}, loss {tcp_loss_ratio%}, {hops_count|hop}; direct route accepted {direct_answered_ratio%} of connects"},
     {&path_metric::tcp_refused_count, "port refused {tcp_refused_count} connects (nothing listens there); its RST round trip p50 {tcp_rtt_p50_ms}"},
     {nullptr, "TCP RTT p50 {tcp_rtt_p50_ms}, loss {tcp_loss_ratio%}, {hops_count|hop}"}},
    {path_setting::samples, path_setting::timeout_ms, path_setting::interval_ms, path_setting::icmp,
     path_setting::trace, path_setting::max_hops, path_setting::probes_per_hop, path_setting::max_addresses}};

class PathCheck final : public Check {
 public:
  explicit PathCheck(const Options& o)
      : samples_(o.whole(path_setting::samples)),
        timeout_ms_(o.whole(path_setting::timeout_ms)),
        interval_ms_(o.whole(path_setting::interval_ms)),
        icmp_(o.whole(path_setting::icmp) == 1),
        trace_(o.text(path_setting::trace)),
        max_hops_(o.whole(path_setting::max_hops)),
        probes_per_hop_(o.whole(path_setting::probes_per_hop)),
        max_addresses_(o.whole(path_setting::max_addresses)) {}
  const CheckInfo& info() const override { return kPathInfo; }
  // Connects, echoes and TTL-limited probes reach no model; the transport check leaves any
  // address that never answers before the first model request, so the requests need nothing
  // from it first.
  bool runs_in_idle() const override { return true; }
  std::vector<Step> plan() const override {
    std::string what = std::to_string(samples_) + " TCP connects (SYN, then close)";
    if (icmp_) what += " and " + std::to_string(samples_) + " ICMP echoes";
    what += " to each of up to " + std::to_string(max_addresses_) + " addresses";
    if (trace_ != "off")
      what += "; " + trace_ + " hop probes, " + std::to_string(probes_per_hop_) + " per hop up to " +
              std::to_string(max_hops_) + " hops";
    return {{what, 0}};
  }
  // The median round trip to each hop of the first address's path, by its TTL.
  std::vector<Chart> charts(const CheckResult& r) const override {
    ChartSeries hops{"median RTT", SeriesKind::Line, {}};
    const auto addresses = r.details.find("addresses");
    if (addresses != r.details.end() && addresses->is_array() && !addresses->empty()) {
      const auto& first = addresses->front();
      if (first.contains("hops") && first["hops"].contains("table"))
        for (const auto& h : first["hops"]["table"])
          if (h.contains("p50_ms") && h["p50_ms"].is_number()) hops.points.push_back({h.value("ttl", 0.0), h["p50_ms"].get<double>(), ""});
    }
    return {{"hop-rtts", "Round trip to each hop of the path (first address).", {"hop", "", true}, {"RTT", "ms"}, {hops}}};
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kPathInfo.id);
    const auto proxy = api::proxy_route(ctx.endpoint());
    std::vector<std::string> addrs = proxy ? ctx.proxy_addresses() : ctx.addresses();
    if (proxy && addrs.empty() && dns::is_ip_literal(proxy->host)) addrs = {proxy->host};
    if (addrs.empty())
      return out.skip(proxy ? "no address to probe: the proxy's name " + proxy->host + " did not resolve"
                            : "no address to probe: the API host did not resolve");
    const int port = proxy ? proxy->port : ctx.target().port;
    if (proxy) probe_direct(ctx, out, *proxy);
    nlohmann::json per_address = nlohmann::json::array();
    std::optional<double> best, worst;
    std::optional<core::Error> first_error;
    bool any_answer = false;
    int silent = 0;
    const std::size_t n_addr = std::min<std::size_t>(addrs.size(), static_cast<std::size_t>(max_addresses_));
    const auto full_timeout = std::chrono::milliseconds(timeout_ms_);
    auto connect = [&](const std::string& ip, int i, std::chrono::milliseconds timeout) {
      ctx.progress("path: TCP connect " + ip + ":" + std::to_string(port) + " (" + std::to_string(i + 1) + "/" +
                   std::to_string(samples_) + ")");
      return ctx.probes().tcp_connect(ip, port, timeout);
    };
    // One connect to each address first, each given the full timeout. An address that has answered
    // keeps the full timeout (a lost SYN sent again is a slow answer, measured); the probes of one
    // that has not wait the retransmission timeout of the round trips the others answered in, and
    // one that never answers is given up in a few of them (checks/silence.h).
    std::vector<std::optional<net::ConnectProbe>> first(n_addr);
    std::vector<double> answered;  // every round trip answered, all addresses
    for (std::size_t ai = 0; ai < n_addr && ctx.before_deadline(); ++ai) {
      first[ai] = connect(addrs[ai], 0, full_timeout);
      if (first[ai]->rtt) answered.push_back(core::to_ms(*first[ai]->rtt));
    }
    // The path's metrics are the first answering address's: the one the requests go to (a silent
    // address is skipped by clients and by the pin alike), the first address when none answered.
    std::size_t primary = 0;
    for (std::size_t ai = n_addr; ai-- > 0;)
      if (first[ai] && first[ai]->rtt) primary = ai;
    for (std::size_t ai = 0; ai < n_addr; ++ai) {
      const std::string& ip = addrs[ai];
      nlohmann::json row = {{"address", ip}, {"port", port}};
      // TCP ping.
      std::vector<double> tcp;
      std::map<std::string, int> tcp_failures;
      AnswerWatch watch;
      for (int i = 0; i < samples_ && ctx.before_deadline() && !watch.given_up(); ++i) {
        const auto p = i == 0 && first[ai] ? *first[ai]
                       : connect(ip, i, watch.answered() ? full_timeout : retransmission_timeout(answered, full_timeout));
        watch.record(p.rtt.has_value());
        if (p.rtt && i > 0) answered.push_back(core::to_ms(*p.rtt));
        if (p.rtt) tcp.push_back(core::to_ms(*p.rtt));
        if (!p.status.ok()) {
          ++tcp_failures[std::string(p.status.error().token())];
          if (!p.rtt && !first_error) first_error = p.status.error();
        }
        out.samples.push_back({{"kind", "tcp"},
                               {"address", ip},
                               {"ms", p.rtt ? nlohmann::json(core::to_ms(*p.rtt)) : nlohmann::json(nullptr)},
                               {"status", p.status.ok() ? "ok" : std::string(p.status.error().token())}});
        if (interval_ms_ > 0 && i + 1 < samples_) ctx.idle_until(ctx.clock().now() + std::chrono::milliseconds(interval_ms_));
      }
      const stats::Summary ts = stats::summarize(tcp);
      const int tcp_sent = static_cast<int>(tcp.size()) + [&] {
        int lost = 0;
        for (const auto& [tok, n] : tcp_failures)
          if (tok != "connect_refused") lost += n;
        return lost;
      }();
      const double tcp_loss = tcp_sent > 0 ? 1.0 - static_cast<double>(tcp.size()) / tcp_sent : 1.0;
      row["tcp"] = {{"p50_ms", ts.p50 ? nlohmann::json(*ts.p50) : nlohmann::json(nullptr)},
                    {"p90_ms", ts.p90 ? nlohmann::json(*ts.p90) : nlohmann::json(nullptr)},
                    {"max_ms", ts.max ? nlohmann::json(*ts.max) : nlohmann::json(nullptr)},
                    {"samples_count", ts.count},
                    {"loss_ratio", tcp_loss},
                    {"failures", tcp_failures}};
      if (watch.given_up()) {
        // Said with what it cost here, and no later check waits on it again.
        row["silent"] = {{"probes_count", watch.probes()}, {"note", "no answer to " + std::to_string(watch.probes()) +
                                                                      " connects in a row: given up"}};
        ctx.mark_silent(ip);
        ++silent;
      }
      if (ts.p50) {
        any_answer = true;
        best = best ? std::min(*best, *ts.p50) : *ts.p50;
        worst = worst ? std::max(*worst, *ts.p50) : *ts.p50;
      }
      if (ai == primary) {
        out.add_summary({path_metric::tcp_rtt_p50_ms, path_metric::tcp_rtt_p90_ms, path_metric::tcp_rtt_max_ms,
                         path_metric::tcp_rtt_samples_count},
                        tcp);
        out.add_median_ci({path_metric::tcp_rtt_p50_ci_low_ms, path_metric::tcp_rtt_p50_ci_high_ms}, tcp);
        out.set(path_metric::tcp_loss_ratio, tcp_loss);
        // A refused connect took a round trip (the host's RST), but no server listens: said, not
        // counted as a healthy reply.
        if (auto it = tcp_failures.find("connect_refused"); it != tcp_failures.end()) out.set(path_metric::tcp_refused_count, it->second);
      }
      // ICMP echo.
      if (icmp_) row["icmp"] = run_icmp(ctx, ip, ai == primary ? &out : nullptr, retransmission_timeout(answered, full_timeout));
      // Hops.
      if (trace_ != "off") row["hops"] = run_trace(ctx, ip, port, ai == primary ? &out : nullptr, watch.given_up());
      per_address.push_back(row);
    }
    out.details["addresses"] = per_address;
    if (proxy) out.set(path_metric::via_proxy_count, 1);
    add_tables(out, per_address);
    if (proxy && !out.tables.empty()) {
      const auto& d = out.details["direct"];
      const double accepted = out.metric(path_metric::direct_answered_ratio).value_or(0);
      out.tables.front().note = "the requests go through the proxy " + proxy->url + "; " +
                                (d.contains("note") ? d["note"].get<std::string>()
                                 : accepted == 0 ? "the direct route to " + d.value("address", std::string()) + " is closed (" +
                                                       core::join_by(d["failures"].get<std::map<std::string, int>>(), ", ",
                                                                     [](const auto& f) { return f.first + " x" + std::to_string(f.second); }) +
                                                       "): the requests can only go through the proxy"
                                                 : "the direct route to " + d.value("address", std::string()) + " is open too");
    }
    out.set(path_metric::addresses_count, static_cast<double>(n_addr));
    out.set(path_metric::silent_addresses_count, silent);
    if (best && worst) out.set(path_metric::rtt_spread_ms, *worst - *best);
    if (!any_answer && first_error) return out.fail(*first_error);
    return out;
  }

 private:
  // The direct route to the API host, which the requests do not take: a few TCP connects, each
  // answered (a SYN-ACK or a RST), refused, or not reaching it (no answer, unreachable). A fact
  // about the network (a corporate egress that only the proxy may cross), not loss on the path.
  void probe_direct(CheckContext& ctx, CheckResult& out, const api::ProxyRoute& proxy) const {
    const auto& direct = ctx.addresses();
    nlohmann::json row = {{"proxy", proxy.url}};
    if (direct.empty()) {
      row["note"] = "the API host does not resolve here; the proxy resolves it";
      out.details["direct"] = row;
      out.set(path_metric::direct_answered_ratio, 0);
      return;
    }
    const std::string& ip = direct.front();
    int tried = 0, answered = 0, refused = 0;
    std::map<std::string, int> failures;
    for (int i = 0; i < std::min(samples_, 3) && ctx.before_deadline(); ++i) {
      ctx.progress("path: TCP connect " + ip + ":" + std::to_string(ctx.target().port) + " directly, not through the proxy");
      const auto p = ctx.probes().tcp_connect(ip, ctx.target().port, std::chrono::milliseconds(timeout_ms_));
      ++tried;
      if (p.rtt && p.status.ok()) ++answered;
      if (!p.status.ok()) ++failures[std::string(p.status.error().token())];
      refused += !p.status.ok() && p.status.error().token() == "connect_refused";
    }
    row["address"] = ip;
    row["tried_count"] = tried;
    row["failures"] = failures;
    out.details["direct"] = row;
    if (tried == 0) return;
    out.set(path_metric::direct_answered_ratio, static_cast<double>(answered) / tried);
    out.set(path_metric::direct_refused_count, refused);
  }

  // The round trips per address, then each address's hop table (mtr's columns), from the rows
  // run() keeps in its details.
  static void add_tables(CheckResult& out, const nlohmann::json& per_address) {
    auto pct = [](const nlohmann::json& ratio) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%.0f%%", ratio.is_number() ? ratio.get<double>() * 100 : 100.0);
      return std::string(buf);
    };
    Table rtt{"path: round trips per address",
              {"address", "port", "TCP p50", "TCP p90", "TCP max", "TCP loss", "ICMP p50", "ICMP max", "ICMP loss"}, {}, ""};
    std::vector<Table> hop_tables;
    for (const auto& a : per_address) {
      const auto& tcp = a["tcp"];
      std::vector<std::string> row = {a["address"].get<std::string>(), std::to_string(a["port"].get<int>()),
                                      cell(tcp["p50_ms"], "ms"), cell(tcp["p90_ms"], "ms"), cell(tcp["max_ms"], "ms"),
                                      pct(tcp["loss_ratio"])};
      const nlohmann::json icmp = a.value("icmp", nlohmann::json::object());
      if (icmp.value("status", "") == "skipped" || icmp.empty()) {
        row.insert(row.end(), {"-", "-", "-"});
        if (icmp.contains("reason")) rtt.note = "ICMP echo skipped: " + icmp["reason"].get<std::string>();
      } else {
        row.insert(row.end(), {cell(icmp["p50_ms"], "ms"), cell(icmp["max_ms"], "ms"), pct(icmp["loss_ratio"])});
      }
      rtt.rows.push_back(std::move(row));
      if (!a.contains("hops")) continue;
      const auto& h = a["hops"];
      Table hops{"path: hops to " + a["address"].get<std::string>(),
                 {"hop", "host", "loss", "sent", "last", "avg", "best", "worst"}, {}, ""};
      if (h.value("status", "") == "skipped") {
        hops.note = "skipped: " + h.value("reason", std::string());
        hop_tables.push_back(std::move(hops));
        continue;
      }
      for (const auto& hop : h["table"]) {
        std::vector<double> rtts;
        int sent = 0;
        for (const auto& v : hop["rtt_ms"]) {
          ++sent;
          if (v.is_number()) rtts.push_back(v.get<double>());
        }
        std::string host = hop["address"].is_string() ? hop["address"].get<std::string>() : "???";
        if (!hop["note"].get<std::string>().empty()) host += " " + hop["note"].get<std::string>();
        std::optional<double> last, avg, lo, hi;
        if (!rtts.empty()) {
          last = rtts.back();
          avg = std::accumulate(rtts.begin(), rtts.end(), 0.0) / static_cast<double>(rtts.size());
          lo = *std::min_element(rtts.begin(), rtts.end());
          hi = *std::max_element(rtts.begin(), rtts.end());
        }
        hops.rows.push_back({std::to_string(hop["ttl"].get<int>()), host, rtts.empty() ? "100%" : pct(hop["loss_ratio"]),
                             std::to_string(sent), cell(last), cell(avg), cell(lo), cell(hi)});
      }
      if (h.contains("gap_stopped"))
        hops.note = "stopped after " + std::to_string(h["gap_stopped"].get<int>()) +
                    " hops in a row answered no probe: the probes are dropped past the last hop shown";
      else if (!h["reached"].get<bool>())
        hops.note = "the destination did not answer within the hop limit";
      hop_tables.push_back(std::move(hops));
    }
    out.tables.push_back(std::move(rtt));
    for (auto& t : hop_tables) out.tables.push_back(std::move(t));
  }

  // Until an echo is answered, each waits `timeout` (the retransmission timeout of the connects
  // answered); a host that drops ICMP, as many do, is given up as a silent address is.
  nlohmann::json run_icmp(CheckContext& ctx, const std::string& ip, CheckResult* primary, std::chrono::milliseconds timeout) const {
    std::vector<double> rtt;
    int sent = 0;
    AnswerWatch watch;
    for (int i = 0; i < samples_ && ctx.before_deadline() && !watch.given_up(); ++i) {
      ctx.progress("path: ICMP echo " + ip);
      const auto p = ctx.probes().icmp_echo(ip, watch.answered() ? std::chrono::milliseconds(timeout_ms_) : timeout, i + 1);
      if (!p.status.ok() && p.status.error().code == core::ErrorCode::NotPermitted)
        return {{"status", "skipped"}, {"reason", p.status.error().message + ": " + p.status.error().detail}};
      ++sent;
      watch.record(p.rtt.has_value());
      if (p.rtt) rtt.push_back(core::to_ms(*p.rtt));
      if (interval_ms_ > 0 && i + 1 < samples_) ctx.idle_until(ctx.clock().now() + std::chrono::milliseconds(interval_ms_));
    }
    const stats::Summary s = stats::summarize(rtt);
    const double loss = sent > 0 ? 1.0 - static_cast<double>(rtt.size()) / sent : 1.0;
    if (primary) {
      primary->add_summary({path_metric::icmp_rtt_p50_ms, path_metric::icmp_rtt_p90_ms, path_metric::icmp_rtt_max_ms,
                            path_metric::icmp_rtt_samples_count},
                           rtt);
      primary->set(path_metric::icmp_loss_ratio, loss);
    }
    nlohmann::json out = {{"status", "ok"},
                          {"p50_ms", s.p50 ? nlohmann::json(*s.p50) : nlohmann::json(nullptr)},
                          {"max_ms", s.max ? nlohmann::json(*s.max) : nlohmann::json(nullptr)},
                          {"samples_count", s.count},
                          {"loss_ratio", loss}};
    if (watch.given_up()) out["note"] = "no echo answered in " + std::to_string(sent) + ": given up (ICMP dropped)";
    return out;
  }

  // To a silent address one probe a hop: where its packets stop is what is left to learn.
  nlohmann::json run_trace(CheckContext& ctx, const std::string& ip, int port, CheckResult* primary, bool silent) const {
    ctx.progress("path: hops to " + ip);
    net::TraceOptions to;
    to.mode = trace_ == "tcp" ? net::TraceMode::Tcp : net::TraceMode::Udp;
    if (to.mode == net::TraceMode::Tcp) to.port = port;
    to.max_hops = max_hops_;
    to.probes_per_hop = silent ? 1 : probes_per_hop_;
    to.probe_timeout = std::chrono::milliseconds(std::min(timeout_ms_, 1000));
    to.deadline = ctx.deadline();
    const net::Trace tr = ctx.probes().trace(ip, to);
    nlohmann::json hops = nlohmann::json::array();
    std::optional<double> last_p50;
    for (const auto& h : tr.hops) {
      std::vector<double> rtts;
      std::string addr, note;
      nlohmann::json probe_ms = nlohmann::json::array();
      for (const auto& p : h.probes) {
        if (p.rtt) rtts.push_back(core::to_ms(*p.rtt));
        probe_ms.push_back(p.rtt ? nlohmann::json(core::to_ms(*p.rtt)) : nlohmann::json(nullptr));
        if (addr.empty()) addr = p.address;
        if (note.empty()) note = p.note;
      }
      const stats::Summary s = stats::summarize(rtts);
      last_p50 = s.p50;
      hops.push_back({{"ttl", h.ttl},
                      {"address", core::text_or_null(addr)},
                      {"rtt_ms", probe_ms},
                      {"p50_ms", s.p50 ? nlohmann::json(*s.p50) : nlohmann::json(nullptr)},
                      {"loss_ratio", h.probes.empty() ? 1.0 : 1.0 - static_cast<double>(rtts.size()) / h.probes.size()},
                      {"note", note},
                      {"reached", h.reached}});
    }
    if (primary && tr.reached) {
      primary->set(path_metric::hops_count, static_cast<double>(tr.hops.size()));
      if (last_p50) primary->set(path_metric::last_hop_rtt_ms, *last_p50);
    }
    nlohmann::json out = {{"mode", trace_}, {"reached", tr.reached}, {"table", hops}};
    if (tr.gap_stopped) out["gap_stopped"] = to.gap_limit;
    if (!tr.status.ok()) {
      out["status"] = "skipped";
      out["reason"] = tr.status.error().message + ": " + tr.status.error().detail;
    }
    return out;
  }

  int samples_, timeout_ms_, interval_ms_;
  bool icmp_;
  std::string trace_;
  int max_hops_, probes_per_hop_, max_addresses_;
};

}  // namespace

CheckEntry path_entry() { return entry_of<PathCheck>(kPathInfo); }

}  // namespace infdoctor::checks
