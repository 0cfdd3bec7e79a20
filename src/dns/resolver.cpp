#include "dns/resolver.h"

#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <ares.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <mutex>

#include "core/interrupt.h"

namespace infdoctor::dns {
namespace {

using core::ErrorCode;

void ensure_ares() {
  static std::once_flag once;
  std::call_once(once, [] { ares_library_init(ARES_LIB_INIT_ALL); });
}

ErrorCode code_of(int status) {
  switch (status) {
    case ARES_ENOTFOUND: return ErrorCode::DnsNxdomain;
    case ARES_ESERVFAIL: return ErrorCode::DnsServfail;
    case ARES_EREFUSED: return ErrorCode::DnsRefused;
    case ARES_ETIMEOUT: return ErrorCode::DnsTimeout;
    case ARES_ENODATA: return ErrorCode::DnsNoData;
    default: return ErrorCode::DnsFailed;
  }
}

struct QueryState {
  bool done = false;
  int status = ARES_SUCCESS;
  int timeouts = 0;
  Family family = Family::A;
  std::vector<Record> records;
  core::SteadyTime answered;
};

// Where c-ares keeps the address of an A and of an AAAA record.
const void* address_of(const ares_addrttl& r) { return &r.ipaddr; }
const void* address_of(const ares_addr6ttl& r) { return &r.ip6addr; }

// The records of an answer, through c-ares' parser of its family (ares_parse_a_reply,
// ares_parse_aaaa_reply: the same signature over their own record type); the parser's status.
template <class Ttl>
int parse_records(int (*parse)(const unsigned char*, int, hostent**, Ttl*, int*), int af, const unsigned char* abuf,
                  int alen, std::vector<Record>& out) {
  std::array<Ttl, 64> ttls{};
  int n = static_cast<int>(ttls.size());
  const int rc = parse(abuf, alen, nullptr, ttls.data(), &n);
  if (rc != ARES_SUCCESS) return rc;
  char buf[INET6_ADDRSTRLEN];
  for (int i = 0; i < n; ++i) {
    inet_ntop(af, address_of(ttls[i]), buf, sizeof buf);
    out.push_back(Record{buf, ttls[i].ttl});
  }
  return ARES_SUCCESS;
}

void on_answer(void* arg, int status, int timeouts, unsigned char* abuf, int alen) {
  auto* st = static_cast<QueryState*>(arg);
  st->answered = core::SteadyClock::now();
  st->done = true;
  st->status = status;
  st->timeouts = timeouts;
  if (status != ARES_SUCCESS || abuf == nullptr) return;
  const int rc = st->family == Family::A ? parse_records(ares_parse_a_reply, AF_INET, abuf, alen, st->records)
                                         : parse_records(ares_parse_aaaa_reply, AF_INET6, abuf, alen, st->records);
  if (rc != ARES_SUCCESS) {
    st->status = rc;
    return;
  }
  if (st->records.empty()) st->status = ARES_ENODATA;
}

}  // namespace

std::string_view family_name(Family f) { return f == Family::A ? "A" : "AAAA"; }

std::string Server::text() const {
  if (ip.find(':') != std::string::npos) return "[" + ip + "]:" + std::to_string(port);
  return ip + ":" + std::to_string(port);
}

bool is_ip_literal(std::string_view host) {
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  in6_addr a6{};
  in_addr a4{};
  return inet_pton(AF_INET, h.c_str(), &a4) == 1 || inet_pton(AF_INET6, h.c_str(), &a6) == 1;
}

core::Result<Server> parse_server(std::string_view s) {
  Server out;
  std::string host(s);
  std::string port;
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return core::make_error(ErrorCode::ConfigError, "bad resolver address: " + host);
    if (close + 1 < host.size()) {
      if (host[close + 1] != ':') return core::make_error(ErrorCode::ConfigError, "bad resolver address: " + host);
      port = host.substr(close + 2);
    }
    host = host.substr(1, close - 1);
  } else if (std::count(host.begin(), host.end(), ':') == 1) {
    port = host.substr(host.find(':') + 1);
    host = host.substr(0, host.find(':'));
  }
  if (!is_ip_literal(host))
    return core::make_error(ErrorCode::ConfigError, "resolver must be an IP address, got '" + std::string(s) + "'");
  out.ip = host;
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
      return core::make_error(ErrorCode::ConfigError, "bad resolver port in '" + std::string(s) + "'");
    out.port = static_cast<int>(p);
  }
  return out;
}

core::Result<std::vector<Server>> system_servers() {
  ensure_ares();
  ares_channel ch = nullptr;
  const int rc = ares_init(&ch);
  if (rc != ARES_SUCCESS)
    return core::make_error(ErrorCode::DnsFailed, "cannot read the system resolver configuration", ares_strerror(rc));
  ares_addr_port_node* servers = nullptr;
  std::vector<Server> out;
  if (ares_get_servers_ports(ch, &servers) == ARES_SUCCESS) {
    char buf[INET6_ADDRSTRLEN];
    for (auto* n = servers; n; n = n->next) {
      inet_ntop(n->family, n->family == AF_INET ? static_cast<const void*>(&n->addr.addr4)
                                                 : static_cast<const void*>(&n->addr.addr6),
                buf, sizeof buf);
      out.push_back(Server{buf, n->udp_port ? n->udp_port : 53});
    }
    ares_free_data(servers);
  }
  ares_destroy(ch);
  return out;
}

Lookup query(const Server& server, const std::string& host, Family family, const QueryOptions& opts) {
  ensure_ares();
  Lookup out;
  ares_options o{};
  o.timeout = static_cast<int>(opts.timeout_per_try.count());
  o.tries = std::max(1, opts.tries);
  // NOCHECKRESP: a SERVFAIL or REFUSED is the answer, not a reason to try elsewhere.
  o.flags = ARES_FLAG_NOCHECKRESP | ARES_FLAG_NOSEARCH;
  o.lookups = const_cast<char*>("b");  // DNS only: no /etc/hosts
  ares_channel ch = nullptr;
  int rc = ares_init_options(&ch, &o, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_FLAGS | ARES_OPT_LOOKUPS);
  if (rc != ARES_SUCCESS) {
    out.status = core::make_error(ErrorCode::DnsFailed, "cannot start a DNS query", ares_strerror(rc));
    return out;
  }
  rc = ares_set_servers_ports_csv(ch, server.text().c_str());
  if (rc != ARES_SUCCESS) {
    ares_destroy(ch);
    out.status = core::make_error(ErrorCode::ConfigError, "bad resolver " + server.text(), ares_strerror(rc));
    return out;
  }
  QueryState st;
  st.family = family;
  const auto t0 = core::SteadyClock::now();
  ares_query(ch, host.c_str(), ns_c_in, family == Family::A ? ns_t_a : ns_t_aaaa, &on_answer, &st);
  // c-ares enforces its own per-try timeouts; this bound only guards against a loop that never ends.
  const auto hard_deadline = t0 + opts.timeout_per_try * (o.tries + 1) + std::chrono::seconds(1);
  while (!st.done && core::SteadyClock::now() < hard_deadline && !core::interrupted()) {
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    const int mask = ares_getsock(ch, socks, ARES_GETSOCK_MAXNUM);
    std::vector<pollfd> pfds;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short ev = 0;
      if (ARES_GETSOCK_READABLE(mask, i)) ev |= POLLIN;
      if (ARES_GETSOCK_WRITABLE(mask, i)) ev |= POLLOUT;
      if (ev) pfds.push_back(pollfd{socks[i], ev, 0});
    }
    timeval max_tv{1, 0};
    timeval tv{};
    ares_timeout(ch, &max_tv, &tv);
    const int wait_ms = static_cast<int>(tv.tv_sec * 1000 + tv.tv_usec / 1000) + 1;
    const int n = poll(pfds.data(), pfds.size(), wait_ms);
    if (n <= 0) {
      ares_process_fd(ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // let c-ares handle its timeouts
      continue;
    }
    for (const auto& p : pfds) {
      ares_process_fd(ch, (p.revents & (POLLIN | POLLERR | POLLHUP)) ? p.fd : ARES_SOCKET_BAD,
                      (p.revents & POLLOUT) ? p.fd : ARES_SOCKET_BAD);
    }
  }
  if (!st.done) {
    ares_cancel(ch);  // calls on_answer with ARES_ECANCELLED
    st.status = ARES_ETIMEOUT;
    st.answered = core::SteadyClock::now();
  }
  ares_destroy(ch);
  out.elapsed = core::elapsed_us(t0, st.answered);
  out.timeouts = st.timeouts;
  out.records = std::move(st.records);
  if (st.status != ARES_SUCCESS && core::interrupted()) {
    out.status = core::interrupted_error();
  } else if (st.status != ARES_SUCCESS) {
    const ErrorCode code = code_of(st.status);
    out.status = core::make_error(code, std::string(core::error_info(code).text), ares_strerror(st.status));
  }
  return out;
}

}  // namespace infdoctor::dns
