#pragma once
// HTTP client on libcurl's multi interface: one request or many in parallel go through the same
// loop. Per request it records libcurl's own phase timers (CURLINFO_*_TIME_T), its own
// steady_clock stamps of the first response byte and of every body chunk, the headers that
// identify or time a request, and what failed, in which phase, when something did.
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "http/tcp_info.h"

namespace infdoctor::http {

using core::Micros;

// Receives a streamed response body as it arrives. Called on the thread that runs perform().
class BodySink {
 public:
  virtual ~BodySink() = default;
  // `arrived` is stamped when libcurl hands the bytes over, before anything parses them.
  // Return false to abort the transfer (the sink keeps its own reason).
  virtual bool on_body(std::string_view bytes, core::SteadyTime arrived) = 0;
};

struct TlsOptions {
  std::string cacert;     // PEM bundle to trust instead of the system store
  bool insecure = false;  // skip certificate and host name verification
  // Offer the session an earlier handshake of this client was given (a ticket or an id), and keep
  // the one this handshake is given. Off, every handshake is a full one.
  bool resume = false;
};

struct Request {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may carry secrets, never logged
  std::string body;
  std::vector<std::string> resolve;  // CURLOPT_RESOLVE pins, "host:port:address"
  TlsOptions tls;
  // curl's --proxy: unset, libcurl's own choice from http_proxy/https_proxy/no_proxy; "" none.
  std::optional<std::string> proxy;
  bool fresh_connection = false;     // no reuse: connect and TLS are measured
  // The Accept-Encoding sent, e.g. "gzip, deflate"; libcurl then decodes what comes. Empty: none
  // sent, so no server or proxy compresses the answer.
  std::string accept_encoding;
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds connect_timeout{10000};
  std::size_t max_body_bytes = 8u << 20;  // cap on a body kept in Response::body
  BodySink* sink = nullptr;  // a 2xx body streams here; otherwise it is kept in Response::body
  // Within one perform_all: sent no sooner than `start_after` from the call's start (an arrival
  // schedule), and not before every request ahead of it of the same `lane` has ended (a closed
  // loop: a lane is one user who asks again as each answer ends). -1: a lane of its own.
  // `timeout` counts from the request's own start, but never past the call's start plus `timeout`
  // of the first: a late request does not outlive the batch's deadline.
  std::chrono::microseconds start_after{0};
  int lane = -1;
};

// libcurl's phase timers, each counted from the start of the transfer. Absent when the phase
// was not reached. On a reused connection DNS, connect and TLS read zero.
struct PhaseTimes {
  std::optional<Micros> namelookup, connect, appconnect, pretransfer, starttransfer, total;
};

// What the TLS handshake settled, read from the live connection.
struct TlsInfo {
  std::string version;  // "TLSv1.3"
  std::string cipher;
  std::string alpn;     // "h2", "http/1.1" or empty
  int chain_count = 0;  // certificates the server sent
  int chain_bytes = 0;  // their DER size
  bool resumed = false;  // the server took up the session offered: an abbreviated handshake
};

struct Response {
  core::Status status;        // transport outcome; an HTTP error status is not a transport error
  std::string failed_phase;   // resolve, connect, tls, send, wait, receive; empty on success
  long http_status = 0;
  std::string http_version;   // "1.1", "2", "3"
  std::string remote_ip;
  std::string local_ip;  // this host's address on the connection (behind NAT the provider sees another)
  long remote_port = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case names, kept ones only
  std::string body;           // non-streamed or error body, capped at max_body_bytes
  PhaseTimes times;
  std::chrono::system_clock::time_point started_wall;
  Micros sent_after{0};       // from the perform_all call's start to this request's start
  core::SteadyTime started;   // steady stamp of libcurl's transfer start (see client.cpp)
  std::optional<Micros> first_byte_at;  // our stamp of the first response byte, from `started`
  std::optional<Micros> request_out_at; // our stamp of the request headers written, from `started`
  std::optional<Micros> start_lag;      // from handing the request to libcurl to its transfer start
  // Through a proxy's tunnel (CONNECT): the proxy's answer, from `started`; set only when one was
  // asked for on this transfer's own new connection.
  bool tunnelled = false;
  std::optional<Micros> tunnel_at;
  // This transfer and the others of its perform_all call whose time in flight overlapped its own:
  // a request sent alone reads 1, each of four parallel streams 4.
  int in_flight = 1;
  std::int64_t bytes_sent = 0;      // request headers and body
  std::int64_t bytes_received = 0;  // response headers and body
  bool connection_reused = false;
  bool is_tls = false;
  // The connection's TCP counters (tcp_info.h): before this request (zero on a new connection;
  // what the last request on it left, on a reused one), at the first response byte, and after the
  // last; and each change while the body came, stamped with the delivery that saw it.
  struct TcpMark {
    core::SteadyTime at;
    TcpCounters counters;
  };
  std::optional<TcpCounters> tcp_before, tcp_first_byte, tcp_end;
  std::vector<TcpMark> tcp_marks;
  std::optional<TlsInfo> tls;

  std::optional<std::string> header(std::string_view lower_name) const;
  // Time to first response byte: our own stamp, else libcurl's starttransfer (which for large
  // uploads marks the start of the body instead).
  std::optional<Micros> ttfb() const { return first_byte_at ? first_byte_at : times.starttransfer; }
  // The phases of the request, computed here and nowhere else. DNS, connect and TLS are absent
  // on a reused connection (libcurl reads them as zero there) and where the phase was not reached.
  std::optional<Micros> dns_phase() const;
  std::optional<Micros> connect_phase() const;
  std::optional<Micros> tls_phase() const;
  // From the TCP connect to the proxy to its answer to CONNECT: the proxy resolving the host,
  // connecting to it and answering. Absent without a tunnel of this transfer's own.
  std::optional<Micros> tunnel_phase() const;
  // From the request leaving to the first response byte: what the server (and the wire) took.
  // It counts from our own stamp of the request written; libcurl's pretransfer, the fallback,
  // counts from its transfer start, which on a shared connection lies after the time a transfer
  // waited behind its siblings.
  std::optional<Micros> server_wait() const;
};

// Retry-After (RFC 9110, section 10.2.3): delay-seconds or an HTTP-date; nothing when absent or
// unreadable. Negative delays read as zero.
std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::chrono::system_clock::time_point now);

// Response headers worth keeping: ids and server-side timing signals of the common servers.
bool is_kept_header(std::string_view lower_name);
// Headers that name the replica behind a balancer that served a request (Fastly-style
// x-served-by, Fly's fly-instance, ...), in the order they are read. All are kept.
inline constexpr std::array<std::string_view, 4> kReplicaHeaders = {"x-served-by", "x-replica", "fly-instance",
                                                                    "x-backend-server"};

class Client {
 public:
  Client();
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Runs every request in parallel (each when its start_after and lane admit it) and returns one
  // response per request, in order. Connections stay cached in this client between calls, so a
  // later request may reuse one.
  std::vector<Response> perform_all(std::vector<Request>& requests);
  Response perform(Request& request);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace infdoctor::http
