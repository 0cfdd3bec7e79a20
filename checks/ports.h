#pragma once
// What a check may reach, each behind a narrow port: model requests (paced by run/pacer), plain
// HTTP, DNS, network probes and the clock. A run plugs in the real network; a test plugs in what
// it needs (a fake clock, a scripted model) and the check cannot tell.
#include <memory>
#include <string>
#include <vector>

#include "api/chat.h"
#include "core/clock.h"
#include "core/result.h"
#include "dns/resolver.h"
#include "http/client.h"
#include "net/probes.h"

namespace infdoctor::checks {

// Model requests. The port owns the run's policy (request budget, Retry-After, backoff, the
// run's failure streak); a check only asks, and a refused batch comes back as an error.
class ModelPort {
 public:
  virtual ~ModelPort() = default;
  // Sends the requests to `ep` in parallel (one at a time when given one), none outliving
  // `deadline`. A budget or deadline that cannot take the whole batch sends nothing and says which.
  virtual core::Result<std::vector<api::RequestSample>> chat(const api::Endpoint& ep,
                                                             const std::vector<api::ChatRequest>& reqs,
                                                             core::SteadyTime deadline) = 0;
};

// Plain HTTP requests with phase timings (the transport check's GETs).
class HttpPort {
 public:
  virtual ~HttpPort() = default;
  virtual http::Response perform(http::Request& req) = 0;
  // A port with a connection cache of its own: a kept-alive series that nothing else shares.
  virtual std::unique_ptr<HttpPort> separate() = 0;
};

class DnsPort {
 public:
  virtual ~DnsPort() = default;
  virtual core::Result<std::vector<dns::Server>> system_servers() = 0;
  virtual dns::Lookup query(const dns::Server& server, const std::string& host, dns::Family family,
                            const dns::QueryOptions& opts) = 0;
};

class ProbePort {
 public:
  virtual ~ProbePort() = default;
  virtual net::ConnectProbe tcp_connect(const std::string& ip, int port, std::chrono::milliseconds timeout) = 0;
  virtual net::EchoProbe icmp_echo(const std::string& ip, std::chrono::milliseconds timeout, int sequence) = 0;
  virtual net::Trace trace(const std::string& ip, const net::TraceOptions& opts) = 0;
};

// The real network behind each port: libcurl, c-ares and the kernel's sockets.
std::unique_ptr<HttpPort> real_http();
DnsPort& real_dns();
ProbePort& real_probes();

}  // namespace infdoctor::checks
