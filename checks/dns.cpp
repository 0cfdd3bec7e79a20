// checks/dns.cpp. Measures: how long each resolver takes to answer A and AAAA queries for the API
// host, `dns.samples` fresh queries each through c-ares (no cache, no hosts file, no search list),
// and what it answers: addresses, TTLs, NXDOMAIN, SERVFAIL, REFUSED, timeouts, retried queries.
// Resolvers: every nameserver of /etc/resolv.conf (unless dns.system=0) and every --resolver.
// Through a proxy (--proxy, $https_proxy) the requests look up the proxy's name, and the proxy the
// API host: the proxy's name is timed instead (nothing, when the proxy is an address), and the API
// host is looked up once for the path check's probe of the direct route.
// Cannot tell: what a caching daemon in front of them (nscd, systemd-resolved) would add or save.
// Emits, for the first resolver (the one the system asks first): dns.{p50_ms,p90_ms,max_ms,
// samples_count}; over all resolvers: failures, retries, resolvers and addresses counts.
#include <set>

#include "api/endpoint_spec.h"
#include "checks/check.h"
#include "checks/dns.h"
#include "checks/registry.h"
#include "core/strings.h"
#include "dns/resolver.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kDnsInfo{
    "dns",
    "DNS resolution",
    "How long each resolver takes to resolve the API host, and what it answers.",
    {{dns_metric::p50_ms.name, "ms", "median lookup time, first resolver",
      {.layer = "DNS", .per = "new connections", .history = true, .slo = "dns_p50_ms"}},
     {dns_metric::p50_ci_low_ms.name, "ms", "95 % interval of the median lookup, low end"},
     {dns_metric::p50_ci_high_ms.name, "ms", "95 % interval of the median lookup, high end"},
     {dns_metric::p90_ms.name, "ms", "90th percentile lookup time, first resolver"},
     {dns_metric::max_ms.name, "ms", "slowest lookup, first resolver"},
     {dns_metric::samples_count.name, "count", "answered lookups, first resolver"},
     {dns_metric::failures_count.name, "count", "lookups that failed, all resolvers"},
     {dns_metric::timeouts_count.name, "count", "lookups that timed out, all resolvers"},
     {dns_metric::nxdomain_count.name, "count", "NXDOMAIN answers, all resolvers"},
     {dns_metric::servfail_count.name, "count", "SERVFAIL answers, all resolvers"},
     {dns_metric::refused_count.name, "count", "REFUSED answers, all resolvers"},
     {dns_metric::retries_count.name, "count", "answered lookups that needed a retry after a lost query"},
     {dns_metric::resolvers_count.name, "count", "resolvers asked"},
     {dns_metric::addresses_count.name, "count", "distinct addresses answered"},
     {dns_metric::worst_p50_ms.name, "ms", "the slowest resolver's median"},
     {dns_metric::min_ttl_s.name, "s", "smallest TTL answered"}},
    {{nullptr, "p50 {p50_ms}, max {max_ms}, {failures_count} failed, {addresses_count} addresses"}},
    {dns_setting::samples, dns_setting::timeout_ms, dns_setting::tries, dns_setting::system, dns_setting::resolvers}};

class DnsCheck final : public Check {
 public:
  explicit DnsCheck(const Options& o)
      : samples_(o.whole(dns_setting::samples)),
        timeout_ms_(o.whole(dns_setting::timeout_ms)),
        tries_(o.whole(dns_setting::tries)),
        use_system_(o.whole(dns_setting::system) == 1) {
    for (const auto& r : o.texts(dns_setting::resolvers)) resolvers_.push_back(r);
  }
  const CheckInfo& info() const override { return kDnsInfo; }
  std::vector<Step> plan() const override {
    return {{std::to_string(samples_) + " lookups (A and AAAA) of the API host at each resolver" +
                 (use_system_ ? " of /etc/resolv.conf" : "") +
                 (resolvers_.empty() ? "" : " and at " + std::to_string(resolvers_.size()) + " given with --resolver") +
                 "; up to " + std::to_string(tries_) + " tries of " + std::to_string(timeout_ms_) + " ms",
             0}};
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kDnsInfo.id);
    const Target& t = ctx.target();
    // Through a proxy the requests resolve the proxy's name, not the API host's (the proxy does
    // that): the lookups timed are the proxy's. The API host is still looked up once, for the path
    // check's probe of the direct route, which the requests do not take.
    const auto proxy = api::proxy_route(ctx.endpoint());
    if (t.host_is_ip) ctx.set_addresses({t.host});
    if (t.host_is_ip && !proxy) return out.skip("the API host is an IP address: nothing to resolve");
    if (proxy && dns::is_ip_literal(proxy->host)) ctx.set_proxy_addresses({proxy->host});
    std::vector<dns::Server> servers;
    if (use_system_) {
      auto sys = ctx.dns().system_servers();
      if (sys.ok()) servers = sys.value();
    }
    for (const auto& text : resolvers_) {
      auto s = dns::parse_server(text);
      if (!s.ok()) return out.fail(s.error());
      servers.push_back(s.value());
    }
    if (servers.empty()) return out.skip("no resolver configured (none in /etc/resolv.conf, no --resolver)");

    const dns::QueryOptions qo{std::chrono::milliseconds(timeout_ms_), tries_};
    if (proxy) {
      if (!t.host_is_ip) {
        std::vector<std::string> direct;
        for (const dns::Family fam : {dns::Family::A, dns::Family::AAAA}) {
          ctx.progress("dns: " + std::string(dns::family_name(fam)) + " " + t.host + " (the direct route)");
          for (const auto& r : ctx.dns().query(servers.front(), t.host, fam, qo).records) direct.push_back(r.address);
        }
        out.details["direct_addresses"] = direct;
        ctx.set_addresses(direct);
      }
      if (dns::is_ip_literal(proxy->host)) {
        return out.skip("the requests go through the proxy " + proxy->url +
                        ", an address: they resolve nothing, and the proxy resolves the API host itself");
      }
    }
    const std::string host = proxy ? proxy->host : t.host;
    std::map<std::string, int> failures;  // token -> count, all resolvers
    int retries = 0;
    std::vector<std::string> v4, v6;
    std::set<std::string> seen;
    std::optional<int> min_ttl;
    std::optional<double> worst_p50;
    nlohmann::json per_resolver = nlohmann::json::array();
    Table resolvers_table{"dns: per resolver", {"resolver", "answers", "p50", "max", "failures"}, {}, ""};
    std::optional<core::Error> first_error;
    for (std::size_t si = 0; si < servers.size(); ++si) {
      const dns::Server& server = servers[si];
      std::vector<double> took;
      std::map<std::string, int> server_failures;
      std::set<std::string> server_addrs;
      for (int i = 0; i < samples_; ++i) {
        for (const dns::Family fam : {dns::Family::A, dns::Family::AAAA}) {
          if (!ctx.before_deadline()) break;
          ctx.progress("dns: " + std::string(dns::family_name(fam)) + " " + host + " via " + server.text());
          const dns::Lookup l = ctx.dns().query(server, host, fam, qo);
          const double ms = core::to_ms(l.elapsed);
          nlohmann::json sample = {{"resolver", server.text()}, {"family", dns::family_name(fam)},
                                   {"ms", ms},                  {"timeouts", l.timeouts},
                                   {"status", l.status.ok() ? "ok" : std::string(l.status.error().token())}};
          nlohmann::json answers = nlohmann::json::array();
          for (const auto& r : l.records) answers.push_back({{"address", r.address}, {"ttl_s", r.ttl_s}});
          sample["answers"] = answers;
          out.samples.push_back(sample);
          // NODATA (no AAAA for an IPv4-only name) is a complete, valid answer: it counts as a lookup.
          const bool answered = l.status.ok() || l.status.error().code == core::ErrorCode::DnsNoData;
          if (answered) {
            took.push_back(ms);
            if (l.timeouts > 0) ++retries;
          } else {
            const std::string tok(l.status.error().token());
            ++failures[tok];
            ++server_failures[tok];
            if (!first_error) first_error = l.status.error();
          }
          for (const auto& r : l.records) {
            server_addrs.insert(r.address);
            min_ttl = min_ttl ? std::min(*min_ttl, r.ttl_s) : r.ttl_s;
            if (seen.insert(r.address).second) (fam == dns::Family::A ? v4 : v6).push_back(r.address);
          }
        }
      }
      const stats::Summary sum = stats::summarize(took);
      if (si == 0) {
        out.add_summary({dns_metric::p50_ms, dns_metric::p90_ms, dns_metric::max_ms, dns_metric::samples_count}, took);
        out.add_median_ci({dns_metric::p50_ci_low_ms, dns_metric::p50_ci_high_ms}, took);
      }
      if (sum.p50) worst_p50 = worst_p50 ? std::max(*worst_p50, *sum.p50) : *sum.p50;
      nlohmann::json row = {{"resolver", server.text()},
                            {"samples_count", sum.count},
                            {"p50_ms", sum.p50 ? nlohmann::json(*sum.p50) : nlohmann::json(nullptr)},
                            {"max_ms", sum.max ? nlohmann::json(*sum.max) : nlohmann::json(nullptr)},
                            {"failures", server_failures},
                            {"addresses", server_addrs}};
      per_resolver.push_back(row);
      resolvers_table.rows.push_back(
          {server.text(), std::to_string(sum.count), cell(sum.p50, "ms"), cell(sum.max, "ms"),
           server_failures.empty() ? "none" : core::join_by(server_failures, ", ", [](const auto& f) {
             return f.first + " x" + std::to_string(f.second);
           })});
    }
    // IPv4 first: most clients try it first, and path and transport probe in this order.
    std::vector<std::string> addresses = v4;
    addresses.insert(addresses.end(), v6.begin(), v6.end());
    int failed = 0;
    for (const auto& [_, n] : failures) failed += n;
    out.set(dns_metric::failures_count, failed);
    out.set(dns_metric::timeouts_count, failures["dns_timeout"]);
    out.set(dns_metric::nxdomain_count, failures["dns_nxdomain"]);
    out.set(dns_metric::servfail_count, failures["dns_servfail"]);
    out.set(dns_metric::refused_count, failures["dns_refused"]);
    out.set(dns_metric::retries_count, retries);
    out.set(dns_metric::resolvers_count, static_cast<double>(servers.size()));
    out.set(dns_metric::addresses_count, static_cast<double>(addresses.size()));
    if (worst_p50) out.set(dns_metric::worst_p50_ms, *worst_p50);
    if (min_ttl) out.set(dns_metric::min_ttl_s, *min_ttl);
    out.details["resolvers"] = per_resolver;
    out.details["addresses"] = addresses;
    resolvers_table.note = "addresses: " + (addresses.empty() ? std::string("none") : core::join(addresses));
    if (proxy) {
      out.details["proxy"] = proxy->host;
      resolvers_table.title = "dns: per resolver, the proxy's name " + proxy->host + " (the requests go through it)";
      out.tables.push_back(std::move(resolvers_table));
      ctx.set_proxy_addresses(addresses);
      if (addresses.empty() && first_error) return out.fail(*first_error);
      return out;
    }
    out.tables.push_back(std::move(resolvers_table));
    ctx.set_addresses(addresses);
    if (addresses.empty() && first_error) return out.fail(*first_error);  // no resolver gave an address
    return out;
  }

 private:
  int samples_;
  int timeout_ms_;
  int tries_;
  bool use_system_;
  std::vector<std::string> resolvers_;
};

}  // namespace

CheckEntry dns_entry() { return entry_of<DnsCheck>(kDnsInfo); }

}  // namespace infdoctor::checks
