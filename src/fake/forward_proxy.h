#pragma once
// A real forward proxy for the tests, the lab and the matrices: Debian's squid, as a corporate
// egress runs it, with a config of its own in a temporary directory (its own hosts file, so it
// resolves names the client cannot), listening where it is told (the lab's router namespace, or
// loopback), stopped by its PID. When a tunnel's setup must be slow, a relay in front of it holds
// the first answer of each connection (squid's reply to CONNECT) for a planted time, and passes
// every byte on unchanged.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/result.h"
#include "net/subprocess.h"

namespace infdoctor::fake {

struct ForwardProxyOptions {
  std::vector<std::pair<std::string, std::string>> hosts{};  // name -> address, squid's own hosts file
  std::string netns{};                // run inside this network namespace (the lab's router); "" here
  std::string listen_ip = "127.0.0.1";
  double tunnel_delay_ms = 0;         // hold each connection's first answer this long (0: no relay)
};

class HoldingRelay;

class ForwardProxy {
 public:
  // Why squid cannot run here (not installed), or nothing.
  static std::optional<std::string> unavailable_reason();
  static core::Result<std::unique_ptr<ForwardProxy>> start(const ForwardProxyOptions& o);
  ~ForwardProxy();
  ForwardProxy(const ForwardProxy&) = delete;
  ForwardProxy& operator=(const ForwardProxy&) = delete;

  // What a client is given ($https_proxy, --proxy): "http://IP:PORT", the relay's when one holds.
  const std::string& url() const { return url_; }
  // squid's own log, for a failing test to show.
  std::string log() const;
  // CONNECTs squid answered, from its access log.
  int tunnels() const;

 private:
  ForwardProxy() = default;
  std::string dir_;
  std::unique_ptr<net::Process> squid_;
  std::unique_ptr<HoldingRelay> relay_;
  std::string url_;
};

// A TCP relay from listen_ip:port (picked free) to `to_ip:to_port`, each connection on a thread of
// its own, holding what the far side sends first for `hold_ms` after the connection was accepted.
class HoldingRelay {
 public:
  // Sockets are made inside `netns` when it is not empty.
  static core::Result<std::unique_ptr<HoldingRelay>> start(const std::string& listen_ip, const std::string& to_ip,
                                                           int to_port, double hold_ms, const std::string& netns = "");
  ~HoldingRelay();
  HoldingRelay(const HoldingRelay&) = delete;
  HoldingRelay& operator=(const HoldingRelay&) = delete;
  int port() const { return port_; }

 private:
  HoldingRelay() = default;
  void serve();
  void relay(int client, std::chrono::steady_clock::time_point accepted);

  int listener_ = -1, stop_[2] = {-1, -1}, port_ = 0, to_port_ = 0;
  std::string to_ip_;
  double hold_ms_ = 0;
  std::thread acceptor_;
  std::vector<std::thread> connections_;
};

}  // namespace infdoctor::fake
