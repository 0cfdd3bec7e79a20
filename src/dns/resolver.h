#pragma once
// DNS lookups through c-ares, one query to one named server at a time, so each resolver's latency
// and failures are measured on their own (no search list, no hosts file, no fallback to another
// server). c-ares 1.18 has no event thread: the loop drives ares_getsock/ares_timeout with poll.
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace infdoctor::dns {

enum class Family { A, AAAA };
std::string_view family_name(Family f);

struct Server {
  std::string ip;
  int port = 53;
  std::string text() const;  // 1.2.3.4:53 or [::1]:53
};

// "IP", "IP:PORT", "[IPv6]:PORT" or a bare IPv6 address.
core::Result<Server> parse_server(std::string_view s);

// The nameservers of /etc/resolv.conf, as c-ares reads them.
core::Result<std::vector<Server>> system_servers();

struct Record {
  std::string address;
  int ttl_s = 0;
};

struct Lookup {
  core::Status status;       // DnsNxdomain, DnsServfail, DnsRefused, DnsTimeout, DnsNoData, ...
  std::vector<Record> records;
  core::Micros elapsed{0};   // from sending the query to its answer (or to giving up)
  int timeouts = 0;          // tries that timed out before the answer: a dropped query was retried
};

struct QueryOptions {
  std::chrono::milliseconds timeout_per_try{2000};
  int tries = 2;
};

Lookup query(const Server& server, const std::string& host, Family family, const QueryOptions& opts);

// True when `host` is an IPv4 or IPv6 literal (no lookup needed).
bool is_ip_literal(std::string_view host);

}  // namespace infdoctor::dns
