#pragma once
// The network lab: three namespaces joined into a chain client -> router -> server.
//
//   client (192.0.2.2) --veth-- (192.0.2.1) router (198.51.100.1) --TUN wire-- (198.51.100.2) server
//                                                 \-- 198.51.100.3: a black hole, answers nothing
//
// The kernel here has no netem qdisc, so the router-server link is two TUN devices and a
// userspace wire between them (a thread of the test) that holds each packet for the configured
// one-way delay and may drop some. Addresses are from the documentation ranges (RFC 5737) and
// exist only inside these namespaces. Everything is torn down by the destructor.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

namespace infdoctor::fake {

class Lab {
 public:
  static constexpr const char* kClientIp = "192.0.2.2";
  static constexpr const char* kRouterIp = "192.0.2.1";
  static constexpr const char* kRouterWireIp = "198.51.100.1";
  static constexpr const char* kServerIp = "198.51.100.2";
  // An address beside the server's that answers nothing: the router drops what is sent to it
  // (a blackhole route: no ICMP either), as a stale DNS record or a dead load balancer does.
  static constexpr const char* kSilentIp = "198.51.100.3";

  struct Config {
    double one_way_delay_ms = 0;  // each direction of the router-server link
    double loss_ratio = 0;        // each packet, each direction
    // The client's own route to the server closed (a prohibit route, as a corporate egress closes
    // it): only the router, where a forward proxy may run, reaches the server.
    bool direct_closed = false;
    // From the n-th packet towards the server that carries TCP payload, `drop_payload_count` are
    // dropped (0: none): lost segments at a known place, which the sender's TCP sends again (a
    // tail loss probe after about two round trips, then a retransmission timeout, 200 ms or more).
    int drop_payload_to_server = 0;
    int drop_payload_count = 1;
  };

  // Why the lab cannot run here (not root, no /dev/net/tun, no `ip netns`), or nothing.
  static std::optional<std::string> unavailable_reason();

  explicit Lab(Config config);
  ~Lab();
  Lab(const Lab&) = delete;
  Lab& operator=(const Lab&) = delete;

  const std::string& client_ns() const { return client_; }
  const std::string& router_ns() const { return router_; }
  const std::string& server_ns() const { return server_; }
  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::uint64_t packets_forwarded() const { return forwarded_.load(); }

 private:
  void wire();
  bool sh(const std::vector<std::string>& argv);

  Config config_;
  std::string id_, client_, router_, server_;
  bool ok_ = false;
  std::string error_;
  int tun_a_ = -1, tun_b_ = -1, stop_fd_ = -1;
  std::atomic<std::uint64_t> forwarded_{0};
  std::thread wire_thread_;
};

// Runs `fn` with the calling thread inside the named network namespace; sockets it creates stay
// there (threads it starts inherit it). Throws when the namespace cannot be entered.
void in_netns(const std::string& ns, const std::function<void()>& fn);

}  // namespace infdoctor::fake
