#include "serve/http_server.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <list>
#include <mutex>
#include <thread>

namespace infdoctor::serve {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

constexpr int kIoTimeoutS = 30;  // a scraper's whole request and our whole answer, each

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string percent_decode(const std::string& s, bool plus_is_space) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct HttpServer::Impl {
  Handler handler;
  std::size_t max_connections = 32;
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::string address;

  struct Connection {
    std::thread thread;
    int fd = -1;
    std::atomic<bool> done{false};
  };
  std::mutex mu;
  std::list<Connection> connections;
  bool stopping = false;

  void accept_loop() {
    for (;;) {
      tcp::socket sock(io);
      beast::error_code ec;
      acceptor.accept(sock, ec);
      std::lock_guard lock(mu);
      if (stopping) return;
      if (ec) continue;
      reap();
      if (connections.size() >= max_connections) {
        // Busy: answered at once rather than queued behind slow probes.
        serve_busy(sock);
        continue;
      }
      auto& c = connections.emplace_back();
      c.fd = sock.native_handle();
      c.thread = std::thread([this, &c, s = std::move(sock)]() mutable {
        serve(std::move(s));
        c.done = true;
      });
    }
  }

  // Joins the threads of connections that ended (under `mu`).
  void reap() {
    for (auto it = connections.begin(); it != connections.end();) {
      if (it->done) {
        it->thread.join();
        it = connections.erase(it);
      } else {
        ++it;
      }
    }
  }

  static void bound_io(tcp::socket& sock) {
    timeval tv{kIoTimeoutS, 0};
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }

  static void write(tcp::socket& sock, HttpResponse r, bool keep_alive, beast::error_code& ec) {
    const auto send = [&](auto& res) {
      res.set(bhttp::field::server, "infdoctor");
      res.set(bhttp::field::content_type, r.content_type);
      res.keep_alive(keep_alive);
      res.prepare_payload();
      bhttp::write(sock, res, ec);
    };
    if (r.shared_body) {  // written from where it is; `r` holds it until then
      bhttp::response<bhttp::span_body<const char>> res{static_cast<bhttp::status>(r.status), 11};
      res.body() = {r.shared_body->data(), r.shared_body->size()};
      return send(res);
    }
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(r.status), 11};
    res.body() = std::move(r.body);
    send(res);
  }

  void serve_busy(tcp::socket& sock) {
    bound_io(sock);
    beast::error_code ec;
    write(sock, {503, "text/plain; charset=utf-8", "too many connections\n"}, false, ec);
    sock.close(ec);
  }

  void serve(tcp::socket sock) {
    bound_io(sock);
    beast::flat_buffer buf;
    beast::error_code ec;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(64 * 1024);
      parser.header_limit(16 * 1024);
      bhttp::read(sock, buf, parser, ec);
      if (ec) break;
      const auto& req = parser.get();
      HttpRequest r;
      r.method = std::string(req.method_string());
      const std::string target(req.target());
      const auto q = target.find('?');
      r.path = percent_decode(target.substr(0, q), false);
      if (q != std::string::npos) {
        std::string rest = target.substr(q + 1);
        std::size_t start = 0;
        while (start <= rest.size()) {
          const auto amp = rest.find('&', start);
          const std::string part = rest.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
          if (!part.empty()) {
            const auto eq = part.find('=');
            r.query[percent_decode(part.substr(0, eq), true)] =
                eq == std::string::npos ? "" : percent_decode(part.substr(eq + 1), true);
          }
          if (amp == std::string::npos) break;
          start = amp + 1;
        }
      }
      for (const auto& f : req) {
        std::string name(f.name_string());
        for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        r.headers[name] = std::string(f.value());
      }
      HttpResponse resp;
      if (r.method != "GET" && r.method != "HEAD") {
        resp = {405, "text/plain; charset=utf-8", "only GET\n"};
      } else {
        try {
          resp = handler(r);
        } catch (const std::exception& e) {
          resp = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what() + "\n"};
        }
      }
      if (r.method == "HEAD") {
        resp.body.clear();
        resp.shared_body.reset();
      }
      bool keep = req.keep_alive();
      {
        std::lock_guard lock(mu);
        keep = keep && !stopping;
      }
      write(sock, std::move(resp), keep, ec);
      if (ec || !keep) break;
    }
    sock.shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

core::Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, Handler handler,
                                                            std::size_t max_connections) {
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos)
    return core::make_error(core::ErrorCode::InvalidArgument, "--listen " + listen + ": want HOST:PORT or :PORT");
  std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || port < 0 || port > 65535)
    return core::make_error(core::ErrorCode::InvalidArgument, "--listen " + listen + ": the port is not a number from 0 to 65535");
  auto impl = std::make_unique<Impl>();
  impl->handler = std::move(handler);
  impl->max_connections = max_connections;
  beast::error_code ec;
  const auto addr = net::ip::make_address(host, ec);
  if (ec)
    return core::make_error(core::ErrorCode::InvalidArgument,
                            "--listen " + listen + ": '" + host + "' is not an IP address");
  const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return core::make_error(core::ErrorCode::Io, "cannot listen on " + listen, ec.message());
  const auto bound = impl->acceptor.local_endpoint(ec);
  impl->address = (bound.address().is_v6() ? "[" + bound.address().to_string() + "]" : bound.address().to_string()) + ":" +
                  std::to_string(bound.port());
  Impl* raw = impl.get();
  raw->accept_thread = std::thread([raw] { raw->accept_loop(); });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

std::string HttpServer::address() const { return impl_->address; }

void HttpServer::stop() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.mu);
    if (im.stopping) return;
    im.stopping = true;
    // Wakes the blocking accept, and every connection's blocking read.
    ::shutdown(im.acceptor.native_handle(), SHUT_RDWR);
    for (auto& c : im.connections)
      if (!c.done) ::shutdown(c.fd, SHUT_RDWR);
  }
  if (im.accept_thread.joinable()) im.accept_thread.join();
  beast::error_code ec;
  im.acceptor.close(ec);
  std::list<Impl::Connection> ending;
  {
    std::lock_guard lock(im.mu);
    ending.splice(ending.end(), im.connections);  // the elements stay where their threads see them
  }
  for (auto& c : ending)
    if (c.thread.joinable()) c.thread.join();
}

}  // namespace infdoctor::serve
