#include "net/probes.h"

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

bool make_addr(const std::string& ip, int port, Addr& out) {
  auto* a4 = reinterpret_cast<sockaddr_in*>(&out.ss);
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&out.ss);
  if (inet_pton(AF_INET, ip.c_str(), &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons(static_cast<uint16_t>(port));
    out.len = sizeof(sockaddr_in);
    out.family = AF_INET;
    return true;
  }
  if (inet_pton(AF_INET6, ip.c_str(), &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(static_cast<uint16_t>(port));
    out.len = sizeof(sockaddr_in6);
    out.family = AF_INET6;
    return true;
  }
  return false;
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

HopProbe udp_probe(const Addr& dst_base, int ttl, int port, std::chrono::milliseconds timeout, bool& reached,
                   bool& stop, core::Status& fatal) {
  HopProbe probe;
  const bool v6 = dst_base.family == AF_INET6;
  Fd fd(::socket(dst_base.family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) {
    fatal = errno_error(errno, "UDP socket");
    stop = true;
    return probe;
  }
  limit_hops(fd.get(), v6, ttl);
  Addr dst = dst_base;
  if (v6)
    reinterpret_cast<sockaddr_in6*>(&dst.ss)->sin6_port = htons(static_cast<uint16_t>(port));
  else
    reinterpret_cast<sockaddr_in*>(&dst.ss)->sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&dst.ss), dst.len) != 0) {
    fatal = errno_error(errno, "UDP connect");
    stop = true;
    return probe;
  }
  static const char kPayload[] = "infdoctor hop probe";
  const auto t0 = Clock::now();
  if (::send(fd.get(), kPayload, sizeof kPayload, 0) < 0) {
    const int err = errno;
    if (err == EHOSTUNREACH || err == ENETUNREACH) {
      probe.note = err == ENETUNREACH ? "!N" : "!H";
      stop = true;
      return probe;
    }
    fatal = errno_error(err, "UDP send");
    stop = true;
    return probe;
  }
  const auto until = t0 + timeout;
  while (true) {
    pollfd p{fd.get(), POLLIN | POLLERR, 0};
    const int n = ::poll(&p, 1, remaining_ms(until));
    if (n <= 0) return probe;  // no answer: "*"
    const auto now = Clock::now();
    if (p.revents & POLLERR) {
      const QueuedError e = read_error_queue(fd.get());
      if (!e.icmp) continue;
      probe.address = e.offender;
      probe.rtt = core::elapsed_us(t0, now);
      classify(e, v6, probe, reached, stop);
      return probe;
    }
    if (p.revents & POLLIN) {  // a real UDP service answered: that is the destination
      char buf[512];
      (void)::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      probe.address = addr_text(reinterpret_cast<const sockaddr*>(&dst.ss));
      probe.rtt = core::elapsed_us(t0, now);
      reached = true;
      return probe;
    }
  }
}

HopProbe tcp_probe(const Addr& dst, int ttl, std::chrono::milliseconds timeout, bool& reached, bool& stop,
                   core::Status& fatal) {
  HopProbe probe;
  const bool v6 = dst.family == AF_INET6;
  Fd fd(::socket(dst.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.ok()) {
    fatal = errno_error(errno, "TCP socket");
    stop = true;
    return probe;
  }
  limit_hops(fd.get(), v6, ttl);
  const auto t0 = Clock::now();
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&dst.ss), dst.len) == 0) {
    probe.address = addr_text(reinterpret_cast<const sockaddr*>(&dst.ss));
    probe.rtt = core::elapsed_us(t0, Clock::now());
    reached = true;
    return probe;
  }
  if (errno != EINPROGRESS) {
    fatal = errno_error(errno, "TCP connect");
    stop = true;
    return probe;
  }
  pollfd p{fd.get(), POLLOUT | POLLERR, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return probe;
  const auto now = Clock::now();
  const QueuedError e = read_error_queue(fd.get());
  if (e.icmp) {
    probe.address = e.offender;
    probe.rtt = core::elapsed_us(t0, now);
    classify(e, v6, probe, reached, stop);
    return probe;
  }
  int err = 0;
  socklen_t len = sizeof err;
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err == 0 || err == ECONNREFUSED) {  // SYN-ACK or RST: the destination answered
    probe.address = addr_text(reinterpret_cast<const sockaddr*>(&dst.ss));
    probe.rtt = core::elapsed_us(t0, now);
    reached = true;
  }
  return probe;
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
  int udp_port = opts.port;
  for (int ttl = 1; ttl <= opts.max_hops && !out.reached; ++ttl) {
    Hop hop;
    hop.ttl = ttl;
    bool stop = false;
    for (int i = 0; i < opts.probes_per_hop; ++i) {
      if (Clock::now() + opts.probe_timeout > opts.deadline || core::interrupted()) {
        stop = true;
        break;
      }
      bool reached = false;
      core::Status fatal;
      HopProbe p = opts.mode == TraceMode::Udp
                       ? udp_probe(dst, ttl, udp_port++, opts.probe_timeout, reached, stop, fatal)
                       : tcp_probe(dst, ttl, opts.probe_timeout, reached, stop, fatal);
      if (!fatal.ok()) {
        if (out.hops.empty() && hop.probes.empty()) out.status = fatal;
        stop = true;
        break;
      }
      hop.reached = hop.reached || reached;
      hop.probes.push_back(std::move(p));
    }
    out.reached = hop.reached;
    if (!hop.probes.empty()) out.hops.push_back(std::move(hop));
    if (stop) break;
  }
  return out;
}

}  // namespace infdoctor::net
