// The hop table's probes over loopback: the destination answers the first probe itself (a UDP
// probe with ICMP port unreachable, a TCP one with SYN-ACK or RST), and each probe says who
// answered and after how long.
#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/probes.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

// A loopback port of `type`, bound (and listening, for TCP) while this lives; closed() gives one
// that nothing holds any more.
class LoopbackPort {
 public:
  explicit LoopbackPort(int type) : fd_(::socket(AF_INET, type, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    if (type == SOCK_STREAM) REQUIRE(::listen(fd_, 8) == 0);
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
  }
  ~LoopbackPort() { close(); }
  LoopbackPort(const LoopbackPort&) = delete;
  LoopbackPort& operator=(const LoopbackPort&) = delete;
  int port() const { return port_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  int port_ = 0;
};

net::TraceOptions options(net::TraceMode mode, int port) {
  net::TraceOptions o;
  o.mode = mode;
  o.port = port;
  o.max_hops = 4;
  o.probes_per_hop = 3;
  o.probe_timeout = 1000ms;
  o.deadline = core::SteadyClock::now() + 20s;
  return o;
}

// Loopback is one hop: the first TTL reaches it, every probe answered by 127.0.0.1 itself.
void check_reached_at_once(const net::Trace& t) {
  REQUIRE_MESSAGE(t.status.ok(), t.status.error().message);
  CHECK(t.reached);
  REQUIRE(t.hops.size() == 1);
  CHECK(t.hops[0].ttl == 1);
  CHECK(t.hops[0].reached);
  REQUIRE(t.hops[0].probes.size() == 3);
  for (const auto& p : t.hops[0].probes) {
    CHECK(p.address == "127.0.0.1");
    REQUIRE(p.rtt);
    CHECK(p.rtt->count() >= 0);
    CHECK(*p.rtt < 1000ms);
    CHECK(p.note == "");
  }
}

}  // namespace

TEST_CASE("net: UDP hop probes to a closed loopback port are answered by its port unreachable") {
  LoopbackPort udp(SOCK_DGRAM);
  udp.close();  // nothing listens: the destination answers with ICMP port unreachable
  check_reached_at_once(net::trace_hops("127.0.0.1", options(net::TraceMode::Udp, udp.port())));
}

TEST_CASE("net: TCP hop probes are answered by the destination's SYN-ACK, or its RST on a closed port") {
  SUBCASE("listening") {
    LoopbackPort tcp(SOCK_STREAM);
    check_reached_at_once(net::trace_hops("127.0.0.1", options(net::TraceMode::Tcp, tcp.port())));
  }
  SUBCASE("closed") {
    LoopbackPort tcp(SOCK_STREAM);
    tcp.close();
    check_reached_at_once(net::trace_hops("127.0.0.1", options(net::TraceMode::Tcp, tcp.port())));
  }
}

TEST_CASE("net: a hop table needs an IP address, and sends nothing past its deadline") {
  const auto bad = net::trace_hops("api.example.test", options(net::TraceMode::Udp, 33434));
  REQUIRE_FALSE(bad.status.ok());
  CHECK(bad.status.error().code == core::ErrorCode::InvalidArgument);
  CHECK(bad.hops.empty());
  auto o = options(net::TraceMode::Tcp, 9);
  o.deadline = core::SteadyClock::now();
  const auto late = net::trace_hops("127.0.0.1", o);
  CHECK(late.status.ok());
  CHECK(late.hops.empty());
  CHECK_FALSE(late.reached);
}

}  // namespace infdoctor
