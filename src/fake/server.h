#pragma once
// infdoctor-fake: a real HTTP/1.1 server (Boost.Beast, optionally TLS) speaking the OpenAI
// chat-completions API (/v1/chat/completions) and the Anthropic Messages API (/v1/messages), with the delays and faults of a Scenario planted per model. Tests, the
// demo and the benchmarks measure against it. One thread per connection keeps each planted delay
// a plain wait on an absolute steady-clock deadline.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "fake/scenario.h"

namespace infdoctor::fake {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: the kernel picks a free one
  std::string tls_cert;    // PEM files; both set = HTTPS
  std::string tls_key;
};

// What the server saw, for tests: one entry per chat request.
struct ServedRequest {
  std::string model;
  core::SteadyTime arrived;
  int status = 0;
  std::string request_id;
  std::size_t body_bytes = 0;
  // How it was asked: "POST /v1/messages?x=y", the header that carried the key ("authorization",
  // "api-key", "x-api-key" or ""), the anthropic-version header, and the body's top-level keys.
  std::string request_line;
  std::string key_header;
  std::string anthropic_version;
  std::vector<std::string> body_keys;
  // Every other header, lower-case name to value (user-agent, accept-encoding, -H extras).
  std::map<std::string, std::string> headers;
};

class Server {
 public:
  static core::Result<std::unique_ptr<Server>> start(Scenario scenario, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const;
  const std::string& host() const;
  std::string base_url() const;  // http(s)://host:port/v1
  std::vector<ServedRequest> served() const;
  void stop();  // idempotent: closes the listener and every connection, joins every thread

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace infdoctor::fake
