#include "checks/ports.h"

namespace infdoctor::checks {
namespace {

class RealHttp final : public HttpPort {
 public:
  http::Response perform(http::Request& req) override { return client_.perform(req); }
  std::unique_ptr<HttpPort> separate() override { return std::make_unique<RealHttp>(); }

 private:
  http::Client client_;
};

class RealDns final : public DnsPort {
 public:
  core::Result<std::vector<dns::Server>> system_servers() override { return dns::system_servers(); }
  dns::Lookup query(const dns::Server& server, const std::string& host, dns::Family family,
                    const dns::QueryOptions& opts) override {
    return dns::query(server, host, family, opts);
  }
};

class RealProbes final : public ProbePort {
 public:
  net::ConnectProbe tcp_connect(const std::string& ip, int port, std::chrono::milliseconds timeout) override {
    return net::tcp_connect_probe(ip, port, timeout);
  }
  net::EchoProbe icmp_echo(const std::string& ip, std::chrono::milliseconds timeout, int sequence) override {
    return net::icmp_echo_probe(ip, timeout, sequence);
  }
  net::Trace trace(const std::string& ip, const net::TraceOptions& opts) override { return net::trace_hops(ip, opts); }
};

}  // namespace

std::unique_ptr<HttpPort> real_http() { return std::make_unique<RealHttp>(); }

DnsPort& real_dns() {
  static RealDns d;
  return d;
}

ProbePort& real_probes() {
  static RealProbes p;
  return p;
}

}  // namespace infdoctor::checks
