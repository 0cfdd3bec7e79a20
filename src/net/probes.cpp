#include "net/probes.h"

#include <algorithm>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "core/interrupt.h"

namespace infdoctor::net {
namespace {

using core::ErrorCode;
using Clock = core::SteadyClock;

struct Addr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_UNSPEC;
};

// `a` at another port.
Addr with_port(Addr a, int port) {
  const uint16_t p = htons(static_cast<uint16_t>(port));
  if (a.family == AF_INET6)
    reinterpret_cast<sockaddr_in6*>(&a.ss)->sin6_port = p;
  else
    reinterpret_cast<sockaddr_in*>(&a.ss)->sin_port = p;
  return a;
}

bool make_addr(const std::string& ip, int port, Addr& out) {
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out.ss);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.ss);
  if (inet_pton(AF_INET, ip.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    out.len = sizeof(sockaddr_in);
    out.family = AF_INET;
  } else if (inet_pton(AF_INET6, ip.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    out.len = sizeof(sockaddr_in6);
    out.family = AF_INET6;
  } else {
    return false;
  }
  out = with_port(out, port);
  return true;
}

std::string addr_text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

int remaining_ms(Clock::time_point until) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

core::Error errno_error(int err, const std::string& what) {
  ErrorCode code = ErrorCode::Io;
  switch (err) {
    case ECONNREFUSED: code = ErrorCode::ConnectRefused; break;
    case EHOSTUNREACH:
    case ENETUNREACH: code = ErrorCode::NoRoute; break;
    case ETIMEDOUT: code = ErrorCode::Timeout; break;
    case EACCES:
    case EPERM: code = ErrorCode::NotPermitted; break;
    default: break;
  }
  return core::Error{code, std::string(core::error_info(code).text), what + ": " + std::strerror(err)};
}

uint16_t checksum(const unsigned char* p, std::size_t n) {
  uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
  if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return htons(static_cast<uint16_t>(~sum));
}

// What an ICMP error read from the error queue says about a probe.
struct QueuedError {
  bool icmp = false;
  std::string offender;
  int type = -1;
  int code = -1;
};

QueuedError read_error_queue(int fd) {
  QueuedError out;
  char control[512];
  char data[256];
  sockaddr_storage from{};
  iovec iov{data, sizeof data};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    const bool v4 = c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR;
    const bool v6 = c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR;
    if (!v4 && !v6) continue;
    const auto* ee = reinterpret_cast<const sock_extended_err*>(CMSG_DATA(c));
    if (ee->ee_origin != SO_EE_ORIGIN_ICMP && ee->ee_origin != SO_EE_ORIGIN_ICMP6) continue;
    out.icmp = true;
    out.type = ee->ee_type;
    out.code = ee->ee_code;
    out.offender = addr_text(SO_EE_OFFENDER(ee));
  }
  return out;
}

// Classifies an ICMP error for the hop table: time exceeded (an intermediate hop), port
// unreachable from the destination (reached), or another unreachable (a note, and the end).
void classify(const QueuedError& e, bool v6, HopProbe& probe, bool& reached, bool& stop) {
  if (!v6 && e.type == ICMP_TIME_EXCEEDED) return;
  if (v6 && e.type == ICMP6_TIME_EXCEEDED) return;
  if ((!v6 && e.type == ICMP_DEST_UNREACH && e.code == ICMP_PORT_UNREACH) ||
      (v6 && e.type == ICMP6_DST_UNREACH && e.code == ICMP6_DST_UNREACH_NOPORT)) {
    reached = true;
    return;
  }
  stop = true;
  if (!v6) {
    switch (e.code) {
      case ICMP_NET_UNREACH: probe.note = "!N"; break;
      case ICMP_HOST_UNREACH: probe.note = "!H"; break;
      case ICMP_PROT_UNREACH: probe.note = "!P"; break;
      case ICMP_PKT_FILTERED: probe.note = "!A"; break;
      default: probe.note = "!" + std::to_string(e.code);
    }
  } else {
    probe.note = e.code == ICMP6_DST_UNREACH_ADMIN ? "!A" : "!" + std::to_string(e.code);
  }
}

// A probe socket that dies after `ttl` hops and queues the ICMP error that says where (ip(7)).
void limit_hops(int fd, bool v6, int ttl) {
  const int on = 1;
  if (v6) {
    setsockopt(fd, SOL_IPV6, IPV6_RECVERR, &on, sizeof on);
    setsockopt(fd, SOL_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof ttl);
  } else {
    setsockopt(fd, SOL_IP, IP_RECVERR, &on, sizeof on);
    setsockopt(fd, SOL_IP, IP_TTL, &ttl, sizeof ttl);
  }
}

// One probe of the hop table as it ends: who answered and when, whether that was the destination,
// and whether the table stops here (the path ends, or probing cannot go on: `fatal`).
struct HopResult {
  HopProbe probe;
  bool reached = false;
  bool stop = false;
  core::Status fatal;
};

HopResult fatal_hop(core::Error e) {
  HopResult r;
  r.fatal = std::move(e);
  r.stop = true;
  return r;
}

// What a hop probe's protocol does on its own: how it sends the probe, and how the destination's
// answer shows when no ICMP error came back. The rest, a socket that dies after `ttl` hops, the
// wait and the ICMP errors of the hops, is the same for UDP and TCP (hop_probe).
enum class Sent { Waiting, Answered, Ended };
enum class Heard { Destination, Nothing, Wait };
struct HopProtocol {
  int type;      // SOCK_DGRAM, SOCK_STREAM
  const char* name;
  short events;  // what poll waits for besides POLLERR
  // Sends the probe and stamps `t0` as it leaves; Answered when the destination answered at once,
  // Ended when the probe ended there (`r` says how).
  Sent (*send)(int fd, const Addr& dst, Clock::time_point& t0, HopResult& r);
  // After the wait ended without an ICMP error (`revents` as poll gave them).
  Heard (*heard)(int fd, short revents);
};

// UDP, as traceroute(8) sends: a datagram to a port nothing should listen on, answered by the
// destination's ICMP port unreachable (or by a service that does listen there).
Sent udp_send(int fd, const Addr& dst, Clock::time_point& t0, HopResult& r) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst.ss), dst.len) != 0) {
    r = fatal_hop(errno_error(errno, "UDP connect"));
    return Sent::Ended;
  }
  static const char kPayload[] = "infdoctor hop probe";
  t0 = Clock::now();
  if (::send(fd, kPayload, sizeof kPayload, 0) < 0) {
    const int err = errno;
    if (err != EHOSTUNREACH && err != ENETUNREACH) {
      r = fatal_hop(errno_error(err, "UDP send"));
      return Sent::Ended;
    }
    r.probe.note = err == ENETUNREACH ? "!N" : "!H";
    r.stop = true;
    return Sent::Ended;
  }
  return Sent::Waiting;
}

Heard udp_heard(int fd, short revents) {
  if (revents & POLLERR) return Heard::Wait;  // an error that is no ICMP answer: wait on
  if (!(revents & POLLIN)) return Heard::Wait;
  char buf[512];
  (void)::recv(fd, buf, sizeof buf, MSG_DONTWAIT);  // a real UDP service answered: that is the destination
  return Heard::Destination;
}

// TCP: a SYN to the API port, answered by the destination's SYN-ACK or RST.
Sent tcp_send(int fd, const Addr& dst, Clock::time_point& t0, HopResult& r) {
  t0 = Clock::now();
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&dst.ss), dst.len) == 0) return Sent::Answered;
  if (errno != EINPROGRESS) {
    r = fatal_hop(errno_error(errno, "TCP connect"));
    return Sent::Ended;
  }
  return Sent::Waiting;
}

Heard tcp_heard(int fd, short) {
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  return err == 0 || err == ECONNREFUSED ? Heard::Destination : Heard::Nothing;  // SYN-ACK or RST
}

constexpr HopProtocol kUdpHops{SOCK_DGRAM, "UDP", POLLIN, udp_send, udp_heard};
constexpr HopProtocol kTcpHops{SOCK_STREAM, "TCP", POLLOUT, tcp_send, tcp_heard};

HopResult hop_probe(const HopProtocol& proto, const Addr& dst, int ttl, std::chrono::milliseconds timeout) {
  HopResult r;
  const bool v6 = dst.family == AF_INET6;
  Fd fd(::socket(dst.family, proto.type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) return fatal_hop(errno_error(errno, std::string(proto.name) + " socket"));
  limit_hops(fd.get(), v6, ttl);
  Clock::time_point t0;
  const auto destination = [&](Clock::time_point now) {
    r.probe.address = addr_text(reinterpret_cast<const sockaddr*>(&dst.ss));
    r.probe.rtt = core::elapsed_us(t0, now);
    r.reached = true;
    return r;
  };
  switch (proto.send(fd.get(), dst, t0, r)) {
    case Sent::Ended: return r;
    case Sent::Answered: return destination(Clock::now());
    case Sent::Waiting: break;
  }
  const auto until = t0 + timeout;
  while (true) {
    pollfd p{fd.get(), static_cast<short>(proto.events | POLLERR), 0};
    if (::poll(&p, 1, remaining_ms(until)) <= 0) return r;  // no answer: "*"
    const auto now = Clock::now();
    if (const QueuedError e = read_error_queue(fd.get()); e.icmp) {  // a hop, or the destination unreachable
      r.probe.address = e.offender;
      r.probe.rtt = core::elapsed_us(t0, now);
      classify(e, v6, r.probe, r.reached, r.stop);
      return r;
    }
    switch (proto.heard(fd.get(), p.revents)) {
      case Heard::Destination: return destination(now);
      case Heard::Nothing: return r;
      case Heard::Wait: break;
    }
  }
}

}  // namespace

ConnectProbe tcp_connect_probe(const std::string& ip, int port, std::chrono::milliseconds timeout) {
  ConnectProbe out;
  Addr dst;
  if (!make_addr(ip, port, dst)) {
    out.status = core::make_error(ErrorCode::InvalidArgument, "not an IP address: " + ip);
    return out;
  }
  Fd fd(::socket(dst.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) {
    out.status = errno_error(errno, "TCP socket");
    return out;
  }
  const int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const auto t0 = Clock::now();
  int err = 0;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst.ss), dst.len) != 0) {
    if (errno != EINPROGRESS) {
      out.status = errno_error(errno, "connect to " + ip + ":" + std::to_string(port));
      return out;
    }
    pollfd p{fd.get(), POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (n == 0) {
      out.status = core::make_error(ErrorCode::Timeout, "TCP connect timed out",
                                    "no answer from " + ip + ":" + std::to_string(port) + " within " +
                                        std::to_string(timeout.count()) + " ms");
      return out;
    }
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  }
  const auto t1 = Clock::now();
  if (err == 0 || err == ECONNREFUSED) out.rtt = core::elapsed_us(t0, t1);  // a RST is one round trip too
  if (err != 0) out.status = errno_error(err, "connect to " + ip + ":" + std::to_string(port));
  return out;
}

EchoProbe icmp_echo_probe(const std::string& ip, std::chrono::milliseconds timeout, int sequence) {
  EchoProbe out;
  Addr dst;
  if (!make_addr(ip, 0, dst)) {
    out.status = core::make_error(ErrorCode::InvalidArgument, "not an IP address: " + ip);
    return out;
  }
  const bool v6 = dst.family == AF_INET6;
  const int proto = v6 ? static_cast<int>(IPPROTO_ICMPV6) : static_cast<int>(IPPROTO_ICMP);
  bool raw = false;
  int s = ::socket(dst.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
  if (s < 0) {
    s = ::socket(dst.family, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
    raw = s >= 0;
  }
  if (s < 0) {
    out.status = core::make_error(ErrorCode::NotPermitted, "ICMP sockets are not permitted",
                                  "no unprivileged ICMP socket (see net.ipv4.ping_group_range) and no CAP_NET_RAW");
    return out;
  }
  Fd fd(s);
  const uint16_t ident = static_cast<uint16_t>(::getpid() & 0xffff);
  const uint16_t seq = static_cast<uint16_t>(sequence);
  unsigned char pkt[32] = {};
  pkt[0] = v6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO;
  std::memcpy(pkt + 4, &ident, 2);
  const uint16_t nseq = htons(seq);
  std::memcpy(pkt + 6, &nseq, 2);
  std::memcpy(pkt + 8, "infdoctor echo probe", 20);
  if (!v6) {
    const uint16_t sum = checksum(pkt, sizeof pkt);
    std::memcpy(pkt + 2, &sum, 2);
  }
  const auto t0 = Clock::now();
  if (::sendto(fd.get(), pkt, sizeof pkt, 0, reinterpret_cast<sockaddr*>(&dst.ss), dst.len) < 0) {
    out.status = errno_error(errno, "ICMP send to " + ip);
    return out;
  }
  const auto until = t0 + timeout;
  while (true) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(until)) <= 0) {
      out.status = core::make_error(ErrorCode::Timeout, "no ICMP echo reply",
                                    "from " + ip + " within " + std::to_string(timeout.count()) + " ms");
      return out;
    }
    unsigned char buf[1500];
    sockaddr_storage from{};
    socklen_t flen = sizeof from;
    const ssize_t n = ::recvfrom(fd.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &flen);
    if (n <= 0) continue;
    std::size_t off = 0;
    if (raw && !v6) off = static_cast<std::size_t>(buf[0] & 0x0f) * 4;  // raw IPv4 includes the IP header
    if (static_cast<std::size_t>(n) < off + 8) continue;
    const unsigned char* icmp = buf + off;
    const int want_type = v6 ? ICMP6_ECHO_REPLY : ICMP_ECHOREPLY;
    uint16_t got_seq = 0, got_id = 0;
    std::memcpy(&got_id, icmp + 4, 2);
    std::memcpy(&got_seq, icmp + 6, 2);
    if (icmp[0] != want_type || ntohs(got_seq) != seq) continue;
    if (raw && got_id != ident) continue;  // the kernel filters by id for unprivileged sockets
    out.rtt = core::elapsed_us(t0, Clock::now());
    return out;
  }
}

Trace trace_hops(const std::string& ip, const TraceOptions& opts) {
  Trace out;
  Addr dst;
  if (!make_addr(ip, opts.port, dst)) {
    out.status = core::make_error(ErrorCode::InvalidArgument, "not an IP address: " + ip);
    return out;
  }
  const bool udp = opts.mode == TraceMode::Udp;
  int udp_port = opts.port;
  int silent_in_row = 0;
  for (int ttl = 1; ttl <= opts.max_hops && !out.reached; ++ttl) {
    Hop hop;
    hop.ttl = ttl;
    bool stop = false;
    for (int i = 0; i < opts.probes_per_hop; ++i) {
      if (Clock::now() + opts.probe_timeout > opts.deadline || core::interrupted()) {
        stop = true;
        break;
      }
      // UDP probes go to a port one higher each time, as traceroute's do: each answer tells its probe.
      HopResult r = udp ? hop_probe(kUdpHops, with_port(dst, udp_port++), ttl, opts.probe_timeout)
                        : hop_probe(kTcpHops, dst, ttl, opts.probe_timeout);
      stop = stop || r.stop;
      if (!r.fatal.ok()) {
        if (out.hops.empty() && hop.probes.empty()) out.status = r.fatal;
        stop = true;
        break;
      }
      hop.reached = hop.reached || r.reached;
      hop.probes.push_back(std::move(r.probe));
    }
    out.reached = hop.reached;
    const bool silent = !hop.probes.empty() && std::none_of(hop.probes.begin(), hop.probes.end(),
                                                            [](const HopProbe& p) { return !p.address.empty(); });
    silent_in_row = silent ? silent_in_row + 1 : 0;
    if (!hop.probes.empty()) out.hops.push_back(std::move(hop));
    if (stop) break;
    if (opts.gap_limit > 0 && silent_in_row >= opts.gap_limit && !out.reached) {
      out.gap_stopped = true;
      break;
    }
  }
  return out;
}

}  // namespace infdoctor::net
