#pragma once
// Network probes that need no root: TCP connect time ("TCP ping"), ICMP echo where the socket is
// permitted, and traceroute-style hops with rising TTL read back through IP_RECVERR (ip(7)),
// as tracepath(8) does.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace infdoctor::net {

// One TCP connect to ip:port. A refused connect still took one round trip: `rtt` is set then too.
struct ConnectProbe {
  core::Status status;  // ConnectRefused, NoRoute, Timeout, ConnectFailed
  std::optional<core::Micros> rtt;
};
ConnectProbe tcp_connect_probe(const std::string& ip, int port, std::chrono::milliseconds timeout);

// ICMP echo. NotPermitted when neither an unprivileged ICMP socket (net.ipv4.ping_group_range)
// nor a raw one (CAP_NET_RAW) may be opened: the caller skips with that reason.
struct EchoProbe {
  core::Status status;  // NotPermitted, Timeout, NoRoute, Io
  std::optional<core::Micros> rtt;
};
EchoProbe icmp_echo_probe(const std::string& ip, std::chrono::milliseconds timeout, int sequence);

struct HopProbe {
  std::string address;              // who answered; empty when nobody did
  std::optional<core::Micros> rtt;
  std::string note;                 // "", "!H", "!N", "!P", "!A" (unreachable kinds)
};
struct Hop {
  int ttl = 0;
  std::vector<HopProbe> probes;
  bool reached = false;  // the destination itself answered
};
enum class TraceMode { Udp, Tcp };
struct TraceOptions {
  TraceMode mode = TraceMode::Udp;
  int port = 33434;             // UDP: the first port (one more per probe); TCP: the API port
  int max_hops = 30;
  int probes_per_hop = 3;
  std::chrono::milliseconds probe_timeout{1000};
  core::SteadyTime deadline = core::SteadyTime::max();
  // Hops in a row with no answer to any probe after which the trace stops (scamper's gap limit,
  // 5 by default): past a point that drops the probes, every further hop would wait out every
  // probe's timeout to show nothing. 0: no limit.
  int gap_limit = 5;
};
struct Trace {
  core::Status status;  // NotPermitted or Io when no probe could be sent
  std::vector<Hop> hops;
  bool reached = false;
  bool gap_stopped = false;  // stopped at the gap limit
};
Trace trace_hops(const std::string& ip, const TraceOptions& opts);

}  // namespace infdoctor::net
