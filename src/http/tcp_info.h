#pragma once
// What the kernel knows of one TCP connection (TCP_INFO; no privilege needed): the segments this
// end sent again, the segments that arrived out of order (a gap in what the peer sent: a segment
// lost on the way here, filled later by the peer's retransmission), and the smoothed round trip.
// A stall in a stream while these counters move is the network's; a stall without is the server's.
#include <cstdint>
#include <optional>

namespace infdoctor::http {

struct TcpCounters {
  std::uint32_t retransmits = 0;   // tcpi_total_retrans: segments this end sent again, SYN included
  std::uint32_t out_of_order = 0;  // tcpi_rcv_ooopack: segments received past a hole
  double rtt_ms = 0;               // tcpi_rtt: smoothed round trip
  double rttvar_ms = 0;            // tcpi_rttvar: its variation
  // Loss events either way: a retransmission here, or a hole in what arrived.
  std::uint32_t loss_signals() const { return retransmits + out_of_order; }
};

// Nothing when the socket is not TCP or the kernel says nothing.
std::optional<TcpCounters> read_tcp_counters(int fd);

}  // namespace infdoctor::http
