#include "fake/dns_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <stdexcept>

namespace infdoctor::fake {
namespace {

using Clock = std::chrono::steady_clock;

void put16(std::string& out, int v) {
  out.push_back(static_cast<char>((v >> 8) & 0xff));
  out.push_back(static_cast<char>(v & 0xff));
}

void put32(std::string& out, std::uint32_t v) {
  put16(out, static_cast<int>(v >> 16));
  put16(out, static_cast<int>(v & 0xffff));
}

}  // namespace

DnsResponder::DnsResponder(const std::string& ip, int port, std::map<std::string, DnsName> names, double delay_ms)
    : ip_(ip), names_(std::move(names)), delay_ms_(delay_ms) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) throw std::runtime_error("bad responder address " + ip);
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw std::runtime_error("cannot bind the DNS responder to " + ip + ":" + std::to_string(port) + ": " +
                             std::strerror(errno));
  socklen_t len = sizeof a;
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  thread_ = std::thread([this] { serve(); });
}

DnsResponder::~DnsResponder() {
  const std::uint64_t one = 1;
  (void)::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(fd_);
  ::close(stop_fd_);
}

void DnsResponder::serve() {
  struct Pending {
    Clock::time_point due;
    std::string reply;
    sockaddr_storage to;
    socklen_t to_len;
  };
  std::deque<Pending> pending;  // equal delays keep it in due order
  while (true) {
    int wait_ms = -1;
    if (!pending.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(pending.front().due - Clock::now());
      wait_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd p[2] = {{fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    ::poll(p, 2, wait_ms);
    if (p[1].revents & POLLIN) return;
    while (!pending.empty() && pending.front().due <= Clock::now()) {
      const auto& r = pending.front();
      ::sendto(fd_, r.reply.data(), r.reply.size(), 0, reinterpret_cast<const sockaddr*>(&r.to), r.to_len);
      pending.pop_front();
    }
    if (!(p[0].revents & POLLIN)) continue;
    unsigned char buf[512];
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 12) continue;
    ++queries_;
    // Question: labels, then type and class.
    std::size_t off = 12;
    std::string name;
    while (off < static_cast<std::size_t>(n) && buf[off] != 0) {
      const std::size_t len = buf[off];
      if (off + 1 + len > static_cast<std::size_t>(n)) break;
      if (!name.empty()) name.push_back('.');
      for (std::size_t i = 0; i < len; ++i) name.push_back(static_cast<char>(std::tolower(buf[off + 1 + i])));
      off += 1 + len;
    }
    if (off + 5 > static_cast<std::size_t>(n)) continue;
    const int qtype = buf[off + 1] << 8 | buf[off + 2];
    const std::size_t question_end = off + 5;
    auto it = names_.find(name);
    int rcode = 0;
    std::vector<std::string> answers;
    int ttl = 60;
    if (it == names_.end()) {
      rcode = 3;
    } else {
      const DnsName& dn = it->second;
      const int nth = ++seen_[name];
      if (dn.mode == DnsMode::DropAll || (dn.mode == DnsMode::DropFirst && nth == 1)) continue;
      if (dn.mode == DnsMode::Nxdomain) rcode = 3;
      if (dn.mode == DnsMode::Servfail) rcode = 2;
      if (dn.mode == DnsMode::Refused) rcode = 5;
      if (rcode == 0) answers = qtype == 28 ? dn.aaaa : (qtype == 1 ? dn.a : std::vector<std::string>{});
      ttl = dn.ttl_s;
    }
    std::string reply;
    reply.append(reinterpret_cast<const char*>(buf), 2);  // id
    const int rd = buf[2] & 0x01;
    reply.push_back(static_cast<char>(0x80 | rd));        // QR, RD copied
    reply.push_back(static_cast<char>(0x80 | rcode));     // RA, rcode
    put16(reply, 1);
    put16(reply, static_cast<int>(answers.size()));
    put16(reply, 0);
    put16(reply, 0);
    reply.append(reinterpret_cast<const char*>(buf + 12), question_end - 12);
    for (const auto& addr : answers) {
      unsigned char raw[16];
      const bool v6 = qtype == 28;
      if (inet_pton(v6 ? AF_INET6 : AF_INET, addr.c_str(), raw) != 1) continue;
      put16(reply, 0xC00C);  // pointer to the question's name
      put16(reply, qtype);
      put16(reply, 1);
      put32(reply, static_cast<std::uint32_t>(ttl));
      put16(reply, v6 ? 16 : 4);
      reply.append(reinterpret_cast<const char*>(raw), v6 ? 16 : 4);
    }
    pending.push_back(Pending{Clock::now() + std::chrono::microseconds(static_cast<long long>(delay_ms_ * 1000)),
                              std::move(reply), from, from_len});
  }
}

}  // namespace infdoctor::fake
