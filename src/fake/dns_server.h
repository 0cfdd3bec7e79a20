#pragma once
// A DNS responder for tests and the demo (RFC 1035 over UDP): answers A and AAAA for configured names after a
// configured delay, or fails on purpose: NXDOMAIN, SERVFAIL, REFUSED, the first query of a name
// dropped (the client must retry), every query dropped.
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace infdoctor::fake {

enum class DnsMode { Answer, Nxdomain, Servfail, Refused, DropFirst, DropAll };

struct DnsName {
  DnsMode mode = DnsMode::Answer;
  std::vector<std::string> a;
  std::vector<std::string> aaaa;
  int ttl_s = 60;
};

class DnsResponder {
 public:
  // Binds ip:port (port 0: any free one) in the calling thread's network namespace. Names not
  // configured get NXDOMAIN.
  DnsResponder(const std::string& ip, int port, std::map<std::string, DnsName> names, double delay_ms);
  ~DnsResponder();
  DnsResponder(const DnsResponder&) = delete;
  DnsResponder& operator=(const DnsResponder&) = delete;

  int port() const { return port_; }
  std::string address() const { return ip_ + ":" + std::to_string(port_); }
  int queries() const { return queries_.load(); }

 private:
  void serve();

  std::string ip_;
  int port_ = 0;
  int fd_ = -1;
  int stop_fd_ = -1;
  std::map<std::string, DnsName> names_;
  double delay_ms_;
  std::map<std::string, int> seen_;  // queries per name, for DropFirst
  std::atomic<int> queries_{0};
  std::thread thread_;
};

}  // namespace infdoctor::fake
