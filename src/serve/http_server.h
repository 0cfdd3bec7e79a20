#pragma once
// The exporter's own HTTP/1.1 server (Boost.Beast): GET requests answered by one handler, one
// thread per connection up to a limit, keep-alive for a scraper that keeps its connection, and
// every read and write bounded in time so a stuck client frees its thread.
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/result.h"

namespace infdoctor::serve {

struct HttpRequest {
  std::string method;
  std::string path;                          // without the query, percent-decoded
  std::map<std::string, std::string> query;  // percent-decoded
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Sent instead of `body` when set: a large body its handler keeps and fills again once no
  // answer holds it (/metrics of a thousand targets is megabytes; its pages stay mapped).
  std::shared_ptr<const std::string> shared_body{};
};

using Handler = std::function<HttpResponse(const HttpRequest&)>;

class HttpServer {
 public:
  // `listen`: HOST:PORT, [V6]:PORT, or :PORT for every interface; port 0 picks a free one.
  static core::Result<std::unique_ptr<HttpServer>> start(const std::string& listen, Handler handler,
                                                         std::size_t max_connections = 32);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  std::string address() const;  // "127.0.0.1:9474", the port as bound
  void stop();                  // idempotent: closes the listener and every connection, joins their threads

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "%2Fa+b" -> "/a b" (a '+' is a space in a query).
std::string percent_decode(const std::string& s, bool plus_is_space);

}  // namespace infdoctor::serve
