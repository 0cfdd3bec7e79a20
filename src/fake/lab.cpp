#include "fake/lab.h"

#include <fcntl.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <random>
#include <stdexcept>
#include <vector>

#include "net/subprocess.h"

namespace infdoctor::fake {
namespace {

using Clock = std::chrono::steady_clock;

int open_tun(const std::string& name) {
  const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  ifreq ifr{};
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd, TUNSETIFF, &ifr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int next_lab_number() {
  static std::atomic<int> n{0};
  return ++n;
}

}  // namespace

std::optional<std::string> Lab::unavailable_reason() {
  if (::geteuid() != 0) return "the network lab needs root (network namespaces, TUN devices)";
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "the network lab needs /dev/net/tun";
  auto r = net::run_command({"ip", "netns", "list"}, std::chrono::seconds(10));
  if (!r.ok() || r->exit_code != 0) return "the network lab needs iproute2's `ip netns`";
  return std::nullopt;
}

bool Lab::sh(const std::vector<std::string>& argv) {
  auto r = net::run_command(argv, std::chrono::seconds(20));
  if (r.ok() && r->exit_code == 0) return true;
  std::string cmd;
  for (const auto& a : argv) cmd += a + " ";
  if (error_.empty()) error_ = cmd + "failed: " + (r.ok() ? r->err : r.error().message);
  return false;
}

Lab::Lab(Config config) : config_(config) {
  // Names carry the pid and a counter: parallel test processes never collide, and interface
  // names stay within the kernel's 15 characters.
  id_ = std::to_string(::getpid() % 100000) + "x" + std::to_string(next_lab_number());
  client_ = "infdoctor-c" + id_;
  router_ = "infdoctor-r" + id_;
  server_ = "infdoctor-s" + id_;
  const std::string vc = "idc" + id_, vr = "idr" + id_, ta = "ida" + id_, tb = "idb" + id_;
  // A namespace or link of these names can only be what a killed process that had this pid left
  // (its destructor never ran): it goes, rather than failing this lab.
  for (const auto& ns : {client_, router_, server_})
    if (::access(("/var/run/netns/" + ns).c_str(), F_OK) == 0) (void)sh({"ip", "netns", "del", ns});
  if (::access(("/sys/class/net/" + vc).c_str(), F_OK) == 0) (void)sh({"ip", "link", "del", vc});
  error_.clear();
  ok_ = sh({"ip", "netns", "add", client_}) && sh({"ip", "netns", "add", router_}) &&
        sh({"ip", "netns", "add", server_}) &&
        sh({"ip", "link", "add", vc, "type", "veth", "peer", "name", vr}) &&
        sh({"ip", "link", "set", vc, "netns", client_}) && sh({"ip", "link", "set", vr, "netns", router_});
  if (ok_) {
    tun_a_ = open_tun(ta);
    tun_b_ = open_tun(tb);
    if (tun_a_ < 0 || tun_b_ < 0) {
      ok_ = false;
      error_ = "cannot create TUN devices: " + std::string(std::strerror(errno));
    }
  }
  ok_ = ok_ && sh({"ip", "link", "set", ta, "netns", router_}) && sh({"ip", "link", "set", tb, "netns", server_});
  for (const auto& ns : {client_, router_, server_}) ok_ = ok_ && sh({"ip", "-n", ns, "link", "set", "lo", "up"});
  ok_ = ok_ && sh({"ip", "-n", client_, "addr", "add", std::string(kClientIp) + "/24", "dev", vc}) &&
        sh({"ip", "-n", client_, "link", "set", vc, "up"}) &&
        sh({"ip", "-n", client_, "route", "add", "default", "via", kRouterIp}) &&
        sh({"ip", "-n", router_, "addr", "add", std::string(kRouterIp) + "/24", "dev", vr}) &&
        sh({"ip", "-n", router_, "link", "set", vr, "up"}) &&
        sh({"ip", "-n", router_, "addr", "add", kRouterWireIp, "peer", kServerIp, "dev", ta}) &&
        sh({"ip", "-n", router_, "link", "set", ta, "up"}) &&
        sh({"ip", "-n", server_, "addr", "add", kServerIp, "peer", kRouterWireIp, "dev", tb}) &&
        sh({"ip", "-n", server_, "link", "set", tb, "up"}) &&
        sh({"ip", "-n", server_, "route", "add", "default", "dev", tb}) &&
        sh({"ip", "netns", "exec", router_, "sysctl", "-qw", "net.ipv4.ip_forward=1"});
  // ICMP errors are rate-limited per destination by default; the hop tests need every one. The
  // client gets the kernel's default of no unprivileged ICMP, whatever the host's is.
  for (const auto& ns : {router_, server_})
    ok_ = ok_ && sh({"ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=0"});
  ok_ = ok_ && sh({"ip", "netns", "exec", client_, "sysctl", "-qw", "net.ipv4.ping_group_range=1 0"});
  ok_ = ok_ && sh({"ip", "-n", router_, "route", "add", "blackhole", kSilentIp});
  if (config_.direct_closed) ok_ = ok_ && sh({"ip", "-n", client_, "route", "add", "prohibit", kServerIp});
  if (!ok_) return;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  wire_thread_ = std::thread([this] { wire(); });
}

Lab::~Lab() {
  if (wire_thread_.joinable()) {
    const std::uint64_t one = 1;
    (void)::write(stop_fd_, &one, sizeof one);
    wire_thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  if (tun_a_ >= 0) ::close(tun_a_);
  if (tun_b_ >= 0) ::close(tun_b_);
  // Deleting a namespace deletes its interfaces; the veth pair goes with either end.
  for (const auto& ns : {client_, router_, server_})
    (void)net::run_command({"ip", "netns", "del", ns}, std::chrono::seconds(20));
}

void Lab::wire() {
  // The wire is the lab's clock: real-time priority keeps the planted delay exact when the
  // machine is busy (best effort; without the privilege it runs at normal priority).
  sched_param prio{};
  prio.sched_priority = 10;
  (void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &prio);
  struct Packet {
    Clock::time_point due;
    std::vector<char> bytes;
  };
  std::deque<Packet> to_b, to_a;  // a constant delay keeps each queue in due order
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  const auto delay = std::chrono::microseconds(static_cast<long long>(config_.one_way_delay_ms * 1000));
  char buf[65536];
  int payloads_to_server = 0;
  // Whether an IPv4 packet carries TCP payload (a segment the receiver acknowledges).
  const auto tcp_payload = [](const char* b, ssize_t n) {
    if (n < 20 || (static_cast<unsigned char>(b[0]) >> 4) != 4 || b[9] != 6) return false;
    const int ihl = (static_cast<unsigned char>(b[0]) & 15) * 4;
    const int total = (static_cast<unsigned char>(b[2]) << 8) | static_cast<unsigned char>(b[3]);
    if (n < ihl + 13) return false;
    const int doff = (static_cast<unsigned char>(b[ihl + 12]) >> 4) * 4;
    return total - ihl - doff > 0;
  };
  while (true) {
    auto next_due = Clock::time_point::max();
    if (!to_b.empty()) next_due = std::min(next_due, to_b.front().due);
    if (!to_a.empty()) next_due = std::min(next_due, to_a.front().due);
    int wait_ms = -1;
    if (next_due != Clock::time_point::max()) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(next_due - Clock::now()).count();
      wait_ms = left <= 0 ? 0 : static_cast<int>((left + 999) / 1000);
    }
    pollfd p[3] = {{tun_a_, POLLIN, 0}, {tun_b_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    // poll() sleeps in whole milliseconds; a precise wait for the last fraction keeps the
    // planted delay exact to tens of microseconds.
    if (wait_ms > 0) ::poll(p, 3, wait_ms - 1);
    else ::poll(p, 3, wait_ms);
    if (p[2].revents & POLLIN) return;
    const auto now = Clock::now();
    for (int side = 0; side < 2; ++side) {
      if (!(p[side].revents & POLLIN)) continue;
      while (true) {
        const ssize_t n = ::read(side == 0 ? tun_a_ : tun_b_, buf, sizeof buf);
        if (n <= 0) break;
        if (config_.loss_ratio > 0 && coin(rng) < config_.loss_ratio) continue;
        if (side == 0 && config_.drop_payload_to_server > 0 && tcp_payload(buf, n) &&
            ++payloads_to_server >= config_.drop_payload_to_server &&
            payloads_to_server < config_.drop_payload_to_server + config_.drop_payload_count)
          continue;
        (side == 0 ? to_b : to_a).push_back(Packet{now + delay, std::vector<char>(buf, buf + n)});
      }
    }
    while (true) {
      const auto t = Clock::now();
      const bool b_ready = !to_b.empty() && to_b.front().due <= t;
      const bool a_ready = !to_a.empty() && to_a.front().due <= t;
      if (!b_ready && !a_ready) break;
      if (b_ready) {
        (void)::write(tun_b_, to_b.front().bytes.data(), to_b.front().bytes.size());
        to_b.pop_front();
        ++forwarded_;
      }
      if (a_ready) {
        (void)::write(tun_a_, to_a.front().bytes.data(), to_a.front().bytes.size());
        to_a.pop_front();
        ++forwarded_;
      }
    }
    // Spin briefly to hit a due time within the current millisecond.
    auto soonest = Clock::time_point::max();
    if (!to_b.empty()) soonest = std::min(soonest, to_b.front().due);
    if (!to_a.empty()) soonest = std::min(soonest, to_a.front().due);
    if (soonest != Clock::time_point::max() && soonest - Clock::now() < std::chrono::milliseconds(1)) {
      while (Clock::now() < soonest) std::this_thread::yield();
    }
  }
}

void in_netns(const std::string& ns, const std::function<void()>& fn) {
  const int self = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (self < 0 || target < 0 || ::setns(target, CLONE_NEWNET) != 0) {
    if (self >= 0) ::close(self);
    if (target >= 0) ::close(target);
    throw std::runtime_error("cannot enter network namespace " + ns);
  }
  ::close(target);
  try {
    fn();
  } catch (...) {
    ::setns(self, CLONE_NEWNET);
    ::close(self);
    throw;
  }
  ::setns(self, CLONE_NEWNET);
  ::close(self);
}

}  // namespace infdoctor::fake
