#include "http/tcp_info.h"

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>

namespace infdoctor::http {

std::optional<TcpCounters> read_tcp_counters(int fd) {
  if (fd < 0) return std::nullopt;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return std::nullopt;
  TcpCounters c;
  if (len >= offsetof(tcp_info, tcpi_total_retrans) + sizeof info.tcpi_total_retrans) c.retransmits = info.tcpi_total_retrans;
  // Kernels before 5.4 answer with a shorter struct: no out-of-order count there.
  if (len >= offsetof(tcp_info, tcpi_rcv_ooopack) + sizeof info.tcpi_rcv_ooopack) c.out_of_order = info.tcpi_rcv_ooopack;
  c.rtt_ms = info.tcpi_rtt / 1000.0;
  c.rttvar_ms = info.tcpi_rttvar / 1000.0;
  return c;
}

}  // namespace infdoctor::http
