#include "http/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/interrupt.h"
#include "core/strings.h"

namespace infdoctor::http {
namespace {

using core::Error;
using core::ErrorCode;

constexpr std::size_t kMaxHeaderBytes = 64u << 10;  // all response headers of one response
constexpr std::size_t kMaxKeptHeaderValue = 1024;

void ensure_curl_global() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

// Sockets libcurl closed, and whether each was connected when it closed. A failed transfer does
// not record its connect time, so this tells a TLS failure from a TCP one.
struct SocketLedger {
  std::unordered_map<curl_socket_t, bool> closed_connected;
  // What each open connection's TCP counters read after its last request: the next request on it
  // counts from there.
  std::unordered_map<curl_socket_t, TcpCounters> tcp_after;
  // Every socket opened and not yet closed: a transfer finds its connection among them by its
  // local port (libcurl names the socket of a transfer only once it is done).
  std::unordered_set<curl_socket_t> open;
};

bool is_connected(curl_socket_t fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  return ::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0;
}

// When the event loop last learned that sockets had data: bytes read while serving that wake-up
// are stamped with it, so the 256th stream of a burst is not stamped later than the first because
// its turn to be read came later. Bytes that arrive while the batch is served share the stamp,
// early by at most the batch's processing time; a response to a request written during the batch
// came after it, and is stamped when read. Outside a wake-up: the time of reading.
struct ArrivalClock {
  std::optional<core::SteadyTime> ready_at;
};

// One transfer: the easy handle, the request it serves and what was seen so far.
struct Transfer {
  const ArrivalClock* arrivals = nullptr;
  Request* req = nullptr;
  Response resp;
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  curl_slist* resolve_list = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {};
  core::SteadyTime added;                     // when handed to the multi handle
  std::optional<core::SteadyTime> first_header;
  std::optional<core::SteadyTime> socket_opened;  // the first socket libcurl opened for it
  std::optional<core::SteadyTime> request_out;    // the request headers were written to the socket
  // Through a proxy's tunnel: the CONNECT written, and the proxy's answer to it.
  std::optional<core::SteadyTime> tunnel_asked, tunnel_answered;
  std::optional<core::SteadyTime> ended_at;   // when its transfer ended (done, failed or cut)
  std::size_t header_bytes = 0;
  bool body_to_sink = false;                  // decided once per response, at the first body byte
  bool decided = false;
  std::optional<Error> abort_reason;
  bool finished = false;
  bool admitted = false;                      // handed to the multi handle (or failed to be)
  std::vector<curl_socket_t> sockets;         // opened for this transfer (several with happy eyeballs)
  SocketLedger* ledger = nullptr;
  curl_socket_t tcp_fd = CURL_SOCKET_BAD;     // the connection it used, once a response byte came
  bool tcp_looked = false;

  // The open socket whose local and remote ports are the transfer's.
  curl_socket_t find_socket() const {
    long local = 0, remote = 0;
    if (!ledger || curl_easy_getinfo(easy, CURLINFO_LOCAL_PORT, &local) != CURLE_OK ||
        curl_easy_getinfo(easy, CURLINFO_PRIMARY_PORT, &remote) != CURLE_OK || local <= 0)
      return CURL_SOCKET_BAD;
    const auto port_of = [](const sockaddr_storage& ss) -> long {
      if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&ss)->sin6_port);
      if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&ss)->sin_port);
      return -1;
    };
    // The sockets this transfer opened first (a new connection), then every open one (a reused one).
    std::vector<curl_socket_t> candidates(sockets.rbegin(), sockets.rend());
    candidates.insert(candidates.end(), ledger->open.begin(), ledger->open.end());
    for (const curl_socket_t fd : candidates) {
      sockaddr_storage mine{}, peer{};
      socklen_t mine_len = sizeof mine, peer_len = sizeof peer;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &mine_len) != 0 ||
          ::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
        continue;
      if (port_of(mine) == local && port_of(peer) == remote) return fd;
    }
    return CURL_SOCKET_BAD;
  }

  // Reads the connection's TCP counters at a delivery: the first at the first response byte, then
  // a mark each time they move.
  void read_tcp(core::SteadyTime at) {
    if (!std::exchange(tcp_looked, true)) tcp_fd = find_socket();
    const auto c = read_tcp_counters(static_cast<int>(tcp_fd));
    if (!c) return;
    if (!resp.tcp_first_byte) resp.tcp_first_byte = c;
    else if (c->loss_signals() != resp.tcp_end->loss_signals()) resp.tcp_marks.push_back({at, *c});
    resp.tcp_end = c;
  }

  core::SteadyTime arrival() const {
    const auto& ready = arrivals->ready_at;
    if (ready && (!request_out || *request_out <= *ready)) return *ready;
    return core::SteadyClock::now();
  }

  ~Transfer() {
    if (easy) curl_easy_cleanup(easy);
    curl_slist_free_all(header_list);
    curl_slist_free_all(resolve_list);
  }
};

curl_socket_t on_open_socket(void* user, curlsocktype, curl_sockaddr* addr) {
  auto* t = static_cast<Transfer*>(user);
  if (!t->socket_opened) t->socket_opened = core::SteadyClock::now();
  const curl_socket_t fd = ::socket(addr->family, addr->socktype | SOCK_CLOEXEC, addr->protocol);
  if (fd >= 0) t->sockets.push_back(fd);
  if (fd >= 0 && t->ledger) t->ledger->open.insert(fd);
  return fd < 0 ? CURL_SOCKET_BAD : fd;
}

// libcurl reports the request headers after writing them (with a small body, in the same write).
// Through a proxy's tunnel the first headers out are the CONNECT and the first in its answer
// (CURLOPT_SUPPRESS_CONNECT_HEADERS keeps them from the header callback, not from here): those
// moments time the tunnel, and the request leaves after it. Only the moments and the word CONNECT
// are looked at; nothing libcurl passes here is logged or stored.
int on_debug(CURL*, curl_infotype type, char* data, size_t size, void* user) {
  auto* t = static_cast<Transfer*>(user);
  constexpr std::string_view kConnect = "CONNECT ";
  if (type == CURLINFO_HEADER_OUT && !t->request_out) {
    if (!t->tunnel_asked && std::string_view(data, std::min(size, kConnect.size())) == kConnect)
      t->tunnel_asked = core::SteadyClock::now();
    else if (!t->tunnel_asked || t->tunnel_answered)
      t->request_out = core::SteadyClock::now();
  } else if (type == CURLINFO_HEADER_IN && t->tunnel_asked && !t->tunnel_answered && !t->request_out) {
    t->tunnel_answered = core::SteadyClock::now();
  }
  return 0;
}

// Registered on the client's ledger, which outlives every connection in libcurl's cache.
int on_close_socket(void* user, curl_socket_t fd) {
  auto* ledger = static_cast<SocketLedger*>(user);
  ledger->closed_connected[fd] = is_connected(fd);
  ledger->tcp_after.erase(fd);
  ledger->open.erase(fd);
  return ::close(fd);
}

// Reads the negotiated TLS parameters while the connection is alive (libcurl's OpenSSL backend).
std::optional<TlsInfo> read_tls(CURL* easy) {
  curl_tlssessioninfo* info = nullptr;
  if (curl_easy_getinfo(easy, CURLINFO_TLS_SSL_PTR, &info) != CURLE_OK || !info ||
      info->backend != CURLSSLBACKEND_OPENSSL || !info->internals)
    return std::nullopt;
  SSL* ssl = static_cast<SSL*>(info->internals);
  TlsInfo t;
  t.version = SSL_get_version(ssl);
  if (const char* c = SSL_get_cipher_name(ssl)) t.cipher = c;
  const unsigned char* alpn = nullptr;
  unsigned int alpn_len = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
  if (alpn) t.alpn.assign(reinterpret_cast<const char*>(alpn), alpn_len);
  t.resumed = SSL_session_reused(ssl) == 1;
  if (STACK_OF(X509)* chain = SSL_get_peer_cert_chain(ssl)) {
    t.chain_count = sk_X509_num(chain);
    for (int i = 0; i < t.chain_count; ++i) {
      const int len = i2d_X509(sk_X509_value(chain, i), nullptr);
      if (len > 0) t.chain_bytes += len;
    }
  }
  return t;
}

// What a libcurl data callback is handed: its transfer, when the bytes arrived, how many.
struct Delivery {
  Transfer* t;
  core::SteadyTime at;
  size_t n;
};
Delivery delivery(void* user, size_t size, size_t nmemb) {
  auto* t = static_cast<Transfer*>(user);
  return {t, t->arrival(), size * nmemb};
}

size_t on_header(char* data, size_t size, size_t nmemb, void* user) {
  const auto [t, now, n] = delivery(user, size, nmemb);
  if (!t->first_header) {
    t->first_header = now;
    t->resp.tls = read_tls(t->easy);
    t->read_tcp(now);
  }
  std::string_view line(data, n);
  if (line.rfind("HTTP/", 0) == 0) {
    // A new response starts (after a 1xx, or a redirect): only the last one's headers count.
    t->resp.headers.clear();
    t->header_bytes = 0;
  }
  t->header_bytes += n;
  if (t->header_bytes > kMaxHeaderBytes) {
    t->abort_reason = Error{ErrorCode::ResponseTooLarge, "response headers exceed 64 KiB", {}};
    return 0;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return n;
  std::string name = core::lower(trim(line.substr(0, colon)));
  if (!is_kept_header(name)) return n;
  std::string_view value = trim(line.substr(colon + 1));
  if (value.size() > kMaxKeptHeaderValue) value = value.substr(0, kMaxKeptHeaderValue);
  t->resp.headers.emplace_back(std::move(name), std::string(value));
  return n;
}

size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  const auto [t, arrived, n] = delivery(user, size, nmemb);
  t->read_tcp(arrived);
  if (!t->decided) {
    long code = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    t->body_to_sink = t->req->sink != nullptr && code >= 200 && code < 300;
    t->decided = true;
  }
  if (t->body_to_sink) {
    if (!t->req->sink->on_body(std::string_view(data, n), arrived)) {
      t->abort_reason = Error{ErrorCode::MalformedStream, "response stream rejected by its parser", {}};
      return 0;
    }
    return n;
  }
  if (t->resp.body.size() + n > t->req->max_body_bytes) {
    t->abort_reason = Error{ErrorCode::ResponseTooLarge,
                            "response body exceeds " + std::to_string(t->req->max_body_bytes) + " bytes", {}};
    return 0;
  }
  t->resp.body.append(data, n);
  return n;
}

std::optional<Micros> timer(CURL* easy, CURLINFO info) {
  curl_off_t v = 0;
  if (curl_easy_getinfo(easy, info, &v) != CURLE_OK || v <= 0) return std::nullopt;
  return Micros(v);
}

// Which phase a failed transfer was in: from the error where it names one, otherwise from how far
// libcurl's timers got (a failed transfer may not record its connect time, so the code comes first).
std::string phase_of(ErrorCode code, const Response& r, bool tcp_connected) {
  switch (code) {
    case ErrorCode::ResolveFailed: return "resolve";
    case ErrorCode::ConnectFailed: return "connect";
    case ErrorCode::TlsFailed: return "tls";
    default: break;
  }
  if (!r.connection_reused && !tcp_connected) return r.times.namelookup || !r.remote_ip.empty() ? "connect" : "resolve";
  if (r.is_tls && !r.times.appconnect && !r.connection_reused) return "tls";
  if (!r.times.pretransfer) return "send";
  if (!r.times.starttransfer) return "wait";
  return "receive";
}

ErrorCode code_of(CURLcode rc) {
  ErrorCode code = ErrorCode::Io;
  switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      code = ErrorCode::ResolveFailed;
      break;
    case CURLE_COULDNT_CONNECT:
      code = ErrorCode::ConnectFailed;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      code = ErrorCode::Timeout;
      break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
      code = ErrorCode::TlsFailed;
      break;
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      code = ErrorCode::ConnectionClosed;
      break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      code = ErrorCode::InvalidArgument;
      break;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
      code = ErrorCode::MalformedStream;
      break;
    default:
      break;
  }
  return code;
}

void setup(Transfer& t, SocketLedger& ledger) {
  t.ledger = &ledger;
  Request& r = *t.req;
  CURL* e = t.easy;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.errbuf);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, &on_open_socket);
  curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &t);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, &on_close_socket);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETDATA, &ledger);
  // The debug callback is the one place libcurl says when the request left; with it set,
  // VERBOSE prints nothing.
  curl_easy_setopt(e, CURLOPT_DEBUGFUNCTION, &on_debug);
  curl_easy_setopt(e, CURLOPT_DEBUGDATA, &t);
  curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // phase timers add up over redirects
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  // Byte counts stay wire counts when the answer is compressed: libcurl counts before it decodes.
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, r.accept_encoding.empty() ? nullptr : r.accept_encoding.c_str());
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "infdoctor/0.1");
  if (r.fresh_connection) {
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
  } else if (r.url.rfind("https://", 0) == 0) {
    // Parallel requests wait for the first connection's TLS handshake to say whether it
    // multiplexes (ALPN h2) and then share it, as an HTTP/2 client does, instead of each opening
    // its own. Over plain HTTP nothing says so before a response, and they would wait for one.
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  }
  if (!r.tls.cacert.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, r.tls.cacert.c_str());
  if (r.tls.insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (r.proxy) curl_easy_setopt(e, CURLOPT_PROXY, r.proxy->c_str());
  // A proxy's answer to CONNECT is not the server's response: its status line would be taken for
  // the first response byte. The debug callback still sees it and times the tunnel.
  curl_easy_setopt(e, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  for (const auto& h : r.headers) t.header_list = curl_slist_append(t.header_list, h.c_str());
  // A large POST would otherwise wait for "100 Continue" and distort the phase timers.
  t.header_list = curl_slist_append(t.header_list, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.header_list);
  for (const auto& pin : r.resolve) t.resolve_list = curl_slist_append(t.resolve_list, pin.c_str());
  if (t.resolve_list) curl_easy_setopt(e, CURLOPT_RESOLVE, t.resolve_list);
  // A body goes as POST's does; PUT (a Pushgateway's) names its own method over it.
  if (r.method == "POST" || (r.method != "GET" && !r.body.empty())) {
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  }
  if (r.method != "GET" && r.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
}

void finish(Transfer& t, CURLcode rc, SocketLedger& ledger) {
  CURL* e = t.easy;
  Response& r = t.resp;
  r.times.namelookup = timer(e, CURLINFO_NAMELOOKUP_TIME_T);
  r.times.connect = timer(e, CURLINFO_CONNECT_TIME_T);
  r.times.appconnect = timer(e, CURLINFO_APPCONNECT_TIME_T);
  r.times.pretransfer = timer(e, CURLINFO_PRETRANSFER_TIME_T);
  r.times.starttransfer = timer(e, CURLINFO_STARTTRANSFER_TIME_T);
  r.times.total = timer(e, CURLINFO_TOTAL_TIME_T);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r.http_status);
  long version = 0;
  curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
  switch (version) {
    case CURL_HTTP_VERSION_1_0: r.http_version = "1.0"; break;
    case CURL_HTTP_VERSION_1_1: r.http_version = "1.1"; break;
    case CURL_HTTP_VERSION_2_0: r.http_version = "2"; break;
    case CURL_HTTP_VERSION_3: r.http_version = "3"; break;
    default: break;
  }
  char* ip = nullptr;
  if (curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &ip) == CURLE_OK && ip) r.remote_ip = ip;
  if (char* local = nullptr; curl_easy_getinfo(e, CURLINFO_LOCAL_IP, &local) == CURLE_OK && local) r.local_ip = local;
  curl_easy_getinfo(e, CURLINFO_PRIMARY_PORT, &r.remote_port);
  long connects = 0;
  curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
  r.connection_reused = connects == 0 && rc == CURLE_OK;
  char* scheme = nullptr;
  if (curl_easy_getinfo(e, CURLINFO_SCHEME, &scheme) == CURLE_OK && scheme)
    r.is_tls = core::lower(scheme) == "https";
  long req_size = 0;
  curl_easy_getinfo(e, CURLINFO_REQUEST_SIZE, &req_size);
  curl_off_t up = 0;
  curl_easy_getinfo(e, CURLINFO_SIZE_UPLOAD_T, &up);
  r.bytes_sent = req_size + up;
  long header_size = 0;
  curl_easy_getinfo(e, CURLINFO_HEADER_SIZE, &header_size);
  curl_off_t down = 0;
  curl_easy_getinfo(e, CURLINFO_SIZE_DOWNLOAD_T, &down);
  r.bytes_received = header_size + down;

  // libcurl's timers count from its own transfer start, which lies a little after we handed the
  // handle over. Our stamp of the socket being opened and libcurl's namelookup mark the same
  // moment (resolve done, connect next), so on a fresh connection they put libcurl's origin on
  // our steady clock and every stamp shares one axis. (starttransfer cannot serve: for a large
  // upload libcurl 7.88 sets it when the body starts to go out, not at the first response byte.)
  r.started = t.added;
  if (t.socket_opened && r.times.namelookup) {
    const auto origin = *t.socket_opened - *r.times.namelookup;
    if (origin > t.added) r.started = std::chrono::time_point_cast<core::SteadyTime::duration>(origin);
  }
  r.start_lag = core::elapsed_us(t.added, r.started);
  if (t.first_header) r.first_byte_at = core::elapsed_us(r.started, *t.first_header);
  if (t.request_out && *t.request_out >= r.started) r.request_out_at = core::elapsed_us(r.started, *t.request_out);
  if (t.tunnel_answered && *t.tunnel_answered >= r.started) r.tunnel_at = core::elapsed_us(r.started, *t.tunnel_answered);
  r.tunnelled = t.tunnel_asked.has_value();

  if (t.tcp_fd != CURL_SOCKET_BAD && r.tcp_end) {
    const auto before = ledger.tcp_after.find(t.tcp_fd);
    if (!r.connection_reused) r.tcp_before = TcpCounters{};
    else if (before != ledger.tcp_after.end()) r.tcp_before = before->second;
    ledger.tcp_after[t.tcp_fd] = *r.tcp_end;
  }
  t.finished = true;
  t.ended_at = core::SteadyClock::now();
  bool tcp_connected = r.times.connect.has_value();
  if (rc != CURLE_OK) {
    for (curl_socket_t fd : t.sockets) {
      auto it = ledger.closed_connected.find(fd);
      tcp_connected = tcp_connected || (it != ledger.closed_connected.end() ? it->second : is_connected(fd));
    }
  }
  if (t.abort_reason) {
    r.status = *t.abort_reason;
    r.failed_phase = t.abort_reason->code == ErrorCode::Interrupted ? phase_of(ErrorCode::Interrupted, r, tcp_connected)
                                                                     : "receive";
  } else if (rc != CURLE_OK) {
    ErrorCode code = code_of(rc);
    long os_errno = 0;
    curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
    if (code == ErrorCode::ConnectionClosed && os_errno == ECONNRESET) code = ErrorCode::ConnectionReset;
    r.failed_phase = phase_of(code, r, tcp_connected);
    std::string detail = t.errbuf[0] ? std::string(t.errbuf) : std::string(curl_easy_strerror(rc));
    r.status = Error{code, std::string(core::error_info(code).text), std::move(detail)};
  }
}

// libcurl's socket interface on an epoll set: a wake-up costs work for the sockets that have
// something to do, not for every transfer in flight (256 streams stay cheap).
struct EventLoop {
  CURLM* multi = nullptr;
  int epfd = -1;
  std::optional<core::SteadyTime> timer;  // when libcurl wants curl_multi_socket_action(TIMEOUT)
  ArrivalClock arrivals;
};

int on_socket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) {
  auto* loop = static_cast<EventLoop*>(userp);
  if (what == CURL_POLL_REMOVE) {
    ::epoll_ctl(loop->epfd, EPOLL_CTL_DEL, s, nullptr);  // may already be gone with the socket
    curl_multi_assign(loop->multi, s, nullptr);
    return 0;
  }
  epoll_event ev{};
  ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0u);
  ev.data.fd = s;
  if (socketp) {
    ::epoll_ctl(loop->epfd, EPOLL_CTL_MOD, s, &ev);
    return 0;
  }
  if (::epoll_ctl(loop->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
    ::epoll_ctl(loop->epfd, EPOLL_CTL_MOD, s, &ev);
  curl_multi_assign(loop->multi, s, loop);  // any non-null marks "registered"
  return 0;
}

int on_timer(CURLM*, long timeout_ms, void* userp) {
  auto* loop = static_cast<EventLoop*>(userp);
  if (timeout_ms < 0) loop->timer.reset();
  else loop->timer = core::SteadyClock::now() + std::chrono::milliseconds(timeout_ms);
  return 0;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_retry_after(std::string_view value,
                                                           std::chrono::system_clock::time_point now) {
  const std::string v(trim(value));
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const double secs = std::strtod(v.c_str(), &end);
  if (end && *end == '\0') {
    if (!(secs >= 0)) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(static_cast<long long>(std::min(secs, 86400.0) * 1000));
  }
  const time_t when = curl_getdate(v.c_str(), nullptr);
  if (when < 0) return std::nullopt;
  const auto delta = std::chrono::system_clock::from_time_t(when) - now;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(delta);
  return std::clamp(ms, std::chrono::milliseconds(0), std::chrono::milliseconds(86400000));
}

bool is_kept_header(std::string_view n) {
  static constexpr std::array<std::string_view, 28> kKept = {
      "x-request-id", "request-id", "x-amzn-requestid", "apim-request-id", "cf-ray",
      "openai-processing-ms", "openai-model", "server-timing", "x-compute-time", "x-compute-type",
      "x-queue-time", "x-inference-time", "x-time-per-token", "x-prompt-tokens", "x-generated-tokens",
      "x-envoy-upstream-service-time", "retry-after", "retry-after-ms", "content-type", "content-encoding", "server", "via", "x-cache", "age",
      // Gateways' own: LiteLLM's time, Cloudflare AI Gateway's cache, Azure's deployment load and region.
      "x-litellm-overhead-duration-ms", "cf-aig-cache-status", "azure-openai-deployment-utilization", "x-ms-region"};
  if (std::find(kKept.begin(), kKept.end(), n) != kKept.end()) return true;
  if (std::find(kReplicaHeaders.begin(), kReplicaHeaders.end(), n) != kReplicaHeaders.end()) return true;
  return n.rfind("x-ratelimit-", 0) == 0 || n.rfind("anthropic-ratelimit-", 0) == 0;
}

namespace {
std::optional<Micros> between(const std::optional<Micros>& earlier, const std::optional<Micros>& later) {
  if (!earlier || !later || *later < *earlier) return std::nullopt;
  return *later - *earlier;
}
}  // namespace

std::optional<Micros> Response::dns_phase() const {
  return connection_reused ? std::nullopt : times.namelookup;
}

std::optional<Micros> Response::connect_phase() const {
  return connection_reused ? std::nullopt : between(times.namelookup, times.connect);
}

std::optional<Micros> Response::tunnel_phase() const {
  return connection_reused || !tunnelled ? std::nullopt : between(times.connect, tunnel_at);
}

std::optional<Micros> Response::tls_phase() const {
  if (connection_reused || !is_tls) return std::nullopt;
  // Through a tunnel libcurl's connect marks the proxy's TCP connect and appconnect the end of the
  // handshake with the server: the proxy's answer lies between.
  return between(tunnelled && tunnel_at ? tunnel_at : times.connect, times.appconnect);
}

std::optional<Micros> Response::server_wait() const {
  return between(request_out_at ? request_out_at : times.pretransfer, ttfb());
}

std::optional<std::string> Response::header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers)
    if (k == lower_name) return v;
  return std::nullopt;
}

struct Client::Impl {
  CURLM* multi = nullptr;
  // TLS sessions kept for the requests that resume (TlsOptions::resume). One thread uses the
  // client, so the share needs no locks.
  CURLSH* sessions = nullptr;
  SocketLedger ledger;
  EventLoop loop;
};

Client::Client() : impl_(std::make_unique<Impl>()) {
  ensure_curl_global();
  impl_->multi = curl_multi_init();
  impl_->sessions = curl_share_init();
  if (impl_->sessions) curl_share_setopt(impl_->sessions, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  impl_->loop.multi = impl_->multi;
  impl_->loop.epfd = ::epoll_create1(EPOLL_CLOEXEC);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETFUNCTION, &on_socket);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETDATA, &impl_->loop);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERFUNCTION, &on_timer);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERDATA, &impl_->loop);
}

Client::~Client() {
  if (impl_->multi) curl_multi_cleanup(impl_->multi);
  if (impl_->sessions) curl_share_cleanup(impl_->sessions);  // after every handle that used it
  if (impl_->loop.epfd >= 0) ::close(impl_->loop.epfd);
}

Response Client::perform(Request& request) {
  std::vector<Request> one;
  one.push_back(std::move(request));
  auto out = perform_all(one);
  request = std::move(one.front());
  return std::move(out.front());
}

std::vector<Response> Client::perform_all(std::vector<Request>& requests) {
  const auto call_start = core::SteadyClock::now();
  std::vector<std::unique_ptr<Transfer>> transfers;
  transfers.reserve(requests.size());
  for (auto& req : requests) {
    auto t = std::make_unique<Transfer>();
    t->req = &req;
    transfers.push_back(std::move(t));
  }
  // The batch's deadline is its first request's timeout from the call's start.
  const auto batch_deadline = call_start + (requests.empty() ? std::chrono::milliseconds(0) : requests.front().timeout);
  std::map<int, std::size_t> lane_busy;  // lane -> transfers of it admitted and not yet ended
  std::size_t next = 0;                  // transfers are admitted in order
  std::size_t admitted_n = 0;
  const auto lane_free = [&](const Transfer& t) { return t.req->lane < 0 || lane_busy[t.req->lane] == 0; };
  const auto admit = [&](Transfer& t, core::SteadyTime now) {
    Request& req = *t.req;
    if (t.req->lane >= 0) ++lane_busy[t.req->lane];
    t.admitted = true;
    ++admitted_n;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(batch_deadline - now);
    if (now - call_start >= std::chrono::milliseconds(1))
      req.timeout = std::max(std::chrono::milliseconds(1), std::min(req.timeout, left));
    req.connect_timeout = std::min(req.connect_timeout, req.timeout);
    t.easy = curl_easy_init();
    if (!t.easy) {
      t.resp.status = Error{ErrorCode::Internal, "could not create a libcurl handle", {}};
      return;
    }
    setup(t, impl_->ledger);
    if (req.tls.resume && impl_->sessions) curl_easy_setopt(t.easy, CURLOPT_SHARE, impl_->sessions);
    t.arrivals = &impl_->loop.arrivals;
    curl_easy_setopt(t.easy, CURLOPT_PRIVATE, &t);
    t.resp.started_wall = std::chrono::system_clock::now();
    t.added = core::SteadyClock::now();
    t.resp.sent_after = std::chrono::duration_cast<Micros>(t.added - call_start);
    if (curl_multi_add_handle(impl_->multi, t.easy) != CURLM_OK) {
      t.resp.status = Error{ErrorCode::Internal, "could not add a libcurl handle", {}};
      curl_easy_cleanup(t.easy);
      t.easy = nullptr;
    }
  };
  const auto ended = [&](Transfer& t) {
    if (t.req->lane >= 0 && lane_busy[t.req->lane] > 0) --lane_busy[t.req->lane];
  };
  // Admits, in order, every transfer whose start has come and whose lane is free; a transfer that
  // could not be added ends at once. The time of the next start that waits, if any.
  const auto admit_due = [&]() -> std::optional<core::SteadyTime> {
    for (;;) {
      const auto now = core::SteadyClock::now();
      // A transfer admitted out of order (its lane freed before an earlier one's) keeps its
      // place: the scan skips the admitted ones.
      while (next < transfers.size() && transfers[next]->admitted) ++next;
      std::optional<core::SteadyTime> wake;
      bool added = false;
      for (std::size_t i = next; i < transfers.size(); ++i) {
        Transfer& t = *transfers[i];
        if (t.admitted) continue;
        const auto due = call_start + t.req->start_after;
        if (due > now) {
          if (!wake || due < *wake) wake = due;
          continue;
        }
        if (!lane_free(t)) continue;
        admit(t, now);
        added = true;
        if (!t.easy) ended(t);
      }
      if (!added) return wake;
    }
  };

  // Every transfer carries its own CURLOPT_TIMEOUT_MS, so this loop ends when the slowest one
  // has finished or timed out.
  EventLoop& loop = impl_->loop;
  int running = 0;
  auto next_start = admit_due();
  curl_multi_socket_action(impl_->multi, CURL_SOCKET_TIMEOUT, 0, &running);
  for (;;) {
    int left = 0;
    bool any_ended = false;
    while (CURLMsg* msg = curl_multi_info_read(impl_->multi, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode rc = msg->data.result;
      curl_multi_remove_handle(impl_->multi, msg->easy_handle);
      finish(*t, rc, impl_->ledger);
      ended(*t);
      any_ended = true;
    }
    if (any_ended || (next_start && core::SteadyClock::now() >= *next_start)) {
      const std::size_t before = admitted_n;
      next_start = admit_due();
      if (admitted_n != before) {
        // Start the new transfers, then read what that finished before deciding anything.
        curl_multi_socket_action(impl_->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        continue;
      }
    }
    const bool waiting = admitted_n < transfers.size();
    if (running == 0 && !waiting) break;
    // Nothing running, nothing scheduled, and requests waiting on lanes that never free: none
    // can be sent (a guard; admission frees a lane whenever a transfer of it ends).
    const bool stuck = waiting && running == 0 && !next_start && !any_ended;
    if (core::interrupted() || stuck) {
      // Ctrl-C: every transfer still running ends now, marked as interrupted; those not yet sent
      // are not sent.
      for (auto& t : transfers) {
        if (!t->admitted) {
          t->admitted = true;
          t->resp.status = stuck ? core::Status(Error{ErrorCode::Internal, "not sent: its lane never freed", {}})
                                 : core::Status(core::interrupted_error());
          continue;
        }
        if (!t->easy || t->finished) continue;
        t->abort_reason = core::interrupted_error();
        curl_multi_remove_handle(impl_->multi, t->easy);
        finish(*t, CURLE_ABORTED_BY_CALLBACK, impl_->ledger);
      }
      break;
    }
    // Wait for a socket, libcurl's timer, the next scheduled start, or 50 ms (to look at the
    // interrupt flag).
    int wait_ms = 50;
    const auto until = [&](core::SteadyTime t) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - core::SteadyClock::now()).count();
      wait_ms = std::min(wait_ms, static_cast<int>(std::clamp<long long>(ms, 0, 50)));
    };
    if (loop.timer) until(*loop.timer);
    if (next_start) until(*next_start);
    epoll_event events[256];
    const int n = ::epoll_wait(loop.epfd, events, 256, wait_ms);
    if (n > 0) loop.arrivals.ready_at = core::SteadyClock::now();
    for (int i = 0; i < n; ++i) {
      int mask = 0;
      if (events[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
      if (events[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
      if (events[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
      curl_multi_socket_action(impl_->multi, events[i].data.fd, mask, &running);
    }
    loop.arrivals.ready_at.reset();
    if (loop.timer && core::SteadyClock::now() >= *loop.timer) {
      loop.timer.reset();
      curl_multi_socket_action(impl_->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }

  impl_->ledger.closed_connected.clear();  // fd numbers are reused; only this call's closes matter
  // Each transfer's company: the others of the call whose time in flight overlapped its own. A
  // batch's streams all read the batch's size, a closed loop's requests the users beside them.
  for (auto& t : transfers) {
    if (!t->easy || !t->ended_at) continue;
    for (const auto& o : transfers)
      if (o != t && o->easy && o->ended_at && o->added < *t->ended_at && t->added < *o->ended_at) ++t->resp.in_flight;
  }
  std::vector<Response> out;
  out.reserve(transfers.size());
  for (auto& t : transfers) out.push_back(std::move(t->resp));
  return out;
}

}  // namespace infdoctor::http
