#include "fake/forward_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "fake/lab.h"

namespace infdoctor::fake {
namespace {

constexpr const char* kSquid = "/usr/sbin/squid";

core::Error proxy_error(const std::string& what) { return core::make_error(core::ErrorCode::Internal, what); }

// Runs `fn` in `netns`, or here when it is empty.
void in_ns_or_here(const std::string& netns, const std::function<void()>& fn) {
  if (netns.empty()) fn();
  else in_netns(netns, fn);
}

sockaddr_in ipv4_address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, ip.c_str(), &a.sin_addr);
  return a;
}

// A port free on `ip` a moment ago.
int free_port_on(const std::string& ip) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = ipv4_address(ip, 0);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

bool accepts_on(const std::string& ip, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in a = ipv4_address(ip, port);
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool send_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

std::optional<std::string> ForwardProxy::unavailable_reason() {
  if (::access(kSquid, X_OK) != 0) return std::string("the forward proxy is Debian's squid, which is not installed (.ci/install-deps --tests)");
  return std::nullopt;
}

core::Result<std::unique_ptr<ForwardProxy>> ForwardProxy::start(const ForwardProxyOptions& o) {
  if (auto why = unavailable_reason()) return proxy_error(*why);
  std::unique_ptr<ForwardProxy> p(new ForwardProxy());
  char tmpl[] = "/tmp/infdoctor-squid-XXXXXX";
  if (!::mkdtemp(tmpl)) return proxy_error("cannot create a temporary directory for squid");
  p->dir_ = tmpl;
  // squid started as root runs as its own user, which writes its logs here.
  ::chmod(p->dir_.c_str(), 0777);
  {
    std::ofstream hosts(p->dir_ + "/hosts");
    for (const auto& [name, ip] : o.hosts) hosts << ip << " " << name << "\n";
  }
  int port = 0;
  for (int attempt = 0; attempt < 3 && !p->squid_; ++attempt) {
    in_ns_or_here(o.netns, [&] { port = free_port_on(o.listen_ip); });
    if (port <= 0) return proxy_error("no free port for squid on " + o.listen_ip);
    const std::string& d = p->dir_;
    std::ofstream(d + "/squid.conf") << "http_port " << o.listen_ip << ":" << port << "\n"
                                     << "http_access allow all\n"
                                     << "cache deny all\ncache_mem 8 MB\n"
                                     << "hosts_file " << d << "/hosts\n"
                                     << "pid_filename " << d << "/squid.pid\n"
                                     << "access_log stdio:" << d << "/access.log\n"
                                     << "cache_log " << d << "/cache.log\n"
                                     << "cache_store_log none\ncoredump_dir " << d << "\n"
                                     << "pinger_enable off\nvisible_hostname infdoctor-lab-proxy\n"
                                     << "shutdown_lifetime 0 seconds\n"
                                     // Names its hosts file does not hold go nowhere: no test world reaches out.
                                     << "dns_nameservers 127.0.0.1\n";
    std::vector<std::string> argv;
    if (!o.netns.empty()) argv = {"ip", "netns", "exec", o.netns};
    argv.insert(argv.end(), {kSquid, "-N", "-f", d + "/squid.conf"});
    auto proc = net::Process::start(argv);
    if (!proc.ok()) return proxy_error("squid did not start: " + proc.error().message);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    bool up = false;
    while (std::chrono::steady_clock::now() < deadline && (*proc)->running() && !up) {
      in_ns_or_here(o.netns, [&] { up = accepts_on(o.listen_ip, port); });
      if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (up) p->squid_ = std::move(proc.value());
    else (*proc)->stop();
  }
  if (!p->squid_) return proxy_error("squid did not listen within 15 s: " + p->log());
  int client_port = port;
  if (o.tunnel_delay_ms > 0) {
    auto relay = HoldingRelay::start(o.listen_ip, o.listen_ip, port, o.tunnel_delay_ms, o.netns);
    if (!relay.ok()) return relay.error();
    p->relay_ = std::move(relay.value());
    client_port = p->relay_->port();
  }
  p->url_ = "http://" + o.listen_ip + ":" + std::to_string(client_port);
  return p;
}

ForwardProxy::~ForwardProxy() {
  relay_.reset();
  if (squid_) squid_->stop();
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

std::string ForwardProxy::log() const { return read_text(dir_ + "/cache.log"); }

int ForwardProxy::tunnels() const {
  std::istringstream in(read_text(dir_ + "/access.log"));
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(" CONNECT ") != std::string::npos;
  return n;
}

core::Result<std::unique_ptr<HoldingRelay>> HoldingRelay::start(const std::string& listen_ip, const std::string& to_ip,
                                                                int to_port, double hold_ms, const std::string& netns) {
  std::unique_ptr<HoldingRelay> r(new HoldingRelay());
  r->to_ip_ = to_ip;
  r->to_port_ = to_port;
  r->hold_ms_ = hold_ms;
  if (::pipe2(r->stop_, O_CLOEXEC) != 0) return proxy_error("cannot make the relay's pipe");
  std::string error;
  in_ns_or_here(netns, [&] {
    r->listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = ipv4_address(listen_ip, 0);
    socklen_t len = sizeof a;
    if (r->listener_ < 0 || ::bind(r->listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(r->listener_, 128) != 0 || ::getsockname(r->listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      error = "the relay cannot listen on " + listen_ip;
      return;
    }
    r->port_ = ntohs(a.sin_port);
    // Started here, the acceptor and the threads it starts live in the namespace too.
    r->acceptor_ = std::thread([p = r.get()] { p->serve(); });
  });
  if (!error.empty()) return proxy_error(error);
  return r;
}

HoldingRelay::~HoldingRelay() {
  if (stop_[1] >= 0) (void)::write(stop_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& t : connections_) t.join();
  for (int fd : {listener_, stop_[0], stop_[1]})
    if (fd >= 0) ::close(fd);
}

void HoldingRelay::serve() {
  while (true) {
    pollfd p[2] = {{listener_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (!(p[0].revents & POLLIN)) continue;
    const int c = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    const auto accepted = std::chrono::steady_clock::now();
    connections_.emplace_back([this, c, accepted] { relay(c, accepted); });
  }
}

void HoldingRelay::relay(int client, std::chrono::steady_clock::time_point accepted) {
  const int up = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in a = ipv4_address(to_ip_, to_port_);
  // Bytes pass as they come: no Nagle delay added to the ones planted.
  const int one = 1;
  for (const int fd : {client, up}) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (up < 0 || ::connect(up, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    if (up >= 0) ::close(up);
    ::close(client);
    return;
  }
  const auto release = accepted + std::chrono::microseconds(static_cast<long long>(hold_ms_ * 1000));
  bool held = false;
  char buf[65536];
  while (true) {
    pollfd p[3] = {{client, POLLIN, 0}, {up, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    if (::poll(p, 3, -1) < 0 && errno != EINTR) break;
    if (p[2].revents) break;
    if (p[0].revents) {
      const ssize_t n = ::recv(client, buf, sizeof buf, 0);
      if (n <= 0 || !send_all(up, buf, static_cast<std::size_t>(n))) break;
    }
    if (p[1].revents) {
      const ssize_t n = ::recv(up, buf, sizeof buf, 0);
      if (n <= 0) break;
      // The far side's first answer (squid's reply to CONNECT) waits out the planted setup time.
      if (!held) {
        held = true;
        std::this_thread::sleep_until(release);
      }
      if (!send_all(client, buf, static_cast<std::size_t>(n))) break;
    }
  }
  ::close(up);
  ::close(client);
}

}  // namespace infdoctor::fake
