#include "support/nginx.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace infdoctor::test {
namespace {

// A loopback port free a moment ago: nginx binds it next (a start that loses the race retries).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

std::string config(const NginxOptions& o, const std::string& dir, int port) {
  std::ostringstream c;
  c << "daemon off;\nmaster_process off;\nerror_log " << dir << "/error.log info;\npid " << dir << "/nginx.pid;\n"
    << "events { worker_connections 256; }\n"
    << "http {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c << "  " << t << "_temp_path " << dir << "/" << t << ";\n";
  c << "  server {\n    listen 127.0.0.1:" << port << (o.tls ? " ssl" : "") << ";\n";
  if (o.tls)
    c << "    ssl_certificate " << certs_dir() << "/server.pem;\n    ssl_certificate_key " << certs_dir()
      << "/server.key;\n";
  c << "    " << o.server << "\n"
    << "    location / {\n      proxy_pass http://" << o.upstream << ";\n      proxy_http_version 1.1;\n      "
    << o.location << "\n    }\n  }\n}\n";
  return c.str();
}

}  // namespace

Nginx::Nginx(const NginxOptions& o) : conf_("", "nginx.conf") {
  using namespace std::chrono_literals;
  for (int attempt = 0; attempt < 3 && !proc_; ++attempt) {
    port_ = free_port();
    REQUIRE(port_ > 0);
    std::ofstream(conf_.path()) << config(o, conf_.dir(), port_);
    auto p = net::Process::start({"/usr/sbin/nginx", "-p", conf_.dir(), "-c", conf_.path(), "-e", conf_.dir() + "/error.log"});
    REQUIRE_MESSAGE(p.ok(), "nginx did not start (.ci/install-deps installs nginx-light): "
                                << (p.ok() ? "" : p.error().message));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline && (*p)->running() && !accepts(port_))
      std::this_thread::sleep_for(10ms);
    if ((*p)->running() && accepts(port_)) proc_ = std::move(p.value());
  }
  REQUIRE_MESSAGE(proc_ != nullptr, "nginx did not listen: " << error_log());
  base_url_ = std::string(o.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + "/v1";
}

Nginx::~Nginx() {
  if (proc_) proc_->stop();
}

std::string Nginx::error_log() const {
  std::ifstream in(conf_.dir() + "/error.log");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace infdoctor::test
