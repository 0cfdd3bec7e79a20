#pragma once
// Test support: the real fronts users put before a model server, and the real monitoring behind
// infdoctor, from Debian's packages (.ci/install-deps): nginx (nginx-light), nghttpx
// (nghttp2-proxy), prometheus and prometheus-pushgateway. Each runs with its config
// written to a temporary directory, listens on a loopback port picked free, stays in the
// foreground as one process, and is stopped by its PID (SIGTERM, then SIGKILL).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor::test {

// "host:port" of a fake provider, what a front passes to.
inline std::string address_of(const fake::Server& s) { return s.host() + ":" + std::to_string(s.port()); }

struct NginxOptions {
  std::string upstream{};    // host:port that `location /` passes to
  std::string location{};    // directives inside `location /`, after proxy_pass
  std::string server{};      // directives of the server block (gzip, client_max_body_size, ssl_*)
  bool tls = false;          // listen with ssl on the test certificate (certs_dir())
};

class Nginx {
 public:
  // Fails the test, with nginx's own error log, when it does not start within 10 s.
  explicit Nginx(const NginxOptions& o);
  ~Nginx();
  Nginx(const Nginx&) = delete;
  Nginx& operator=(const Nginx&) = delete;

  // "http://127.0.0.1:PORT/v1" (https with tls).
  const std::string& base_url() const { return base_url_; }
  int port() const { return port_; }
  std::string error_log() const;

 private:
  TempFile conf_;
  std::unique_ptr<net::Process> proc_;
  std::string base_url_;
  int port_ = 0;
};

// llama.cpp behind tests/engine/shim.mjs, through npm's node-llama-cpp: the tests' real engine,
// prepared in the build tree by tests/engine/setup.sh (ctest's "engine: setup" fixture).
struct LlamaEngineOptions {
  // Served name -> GGUF file in the engine directory ("target.gguf", "small.gguf").
  std::vector<std::pair<std::string, std::string>> models{};
  int slots = 4;  // sequences decoded at once per model; more requests wait in line
  std::vector<std::pair<std::string, double>> overhead_ms{};  // a planted wait before a model starts
  std::string netns{};              // run inside this network namespace (the lab's server), or here
  std::string host = "127.0.0.1";  // the address it listens on
};

class LlamaEngine {
 public:
  static std::string dir();
  // Why the engine cannot run here, or nothing.
  static std::optional<std::string> unavailable_reason();
  // Fails the test when it does not listen within 60 s.
  explicit LlamaEngine(const LlamaEngineOptions& o);
  ~LlamaEngine();
  LlamaEngine(const LlamaEngine&) = delete;
  LlamaEngine& operator=(const LlamaEngine&) = delete;

  const std::string& base_url() const { return base_url_; }  // "http://127.0.0.1:PORT/v1"

 private:
  std::unique_ptr<net::Process> proc_;
  std::string base_url_;
};

// nghttpx terminating TLS (the test certificate) and HTTP/2 in front of an HTTP/1.1 server.
class Nghttpx {
 public:
  // `options`: more of nghttpx's own, e.g. "--backend-connections-per-frontend=2".
  Nghttpx(const std::string& upstream, const std::vector<std::string>& options = {});
  ~Nghttpx();
  Nghttpx(const Nghttpx&) = delete;
  Nghttpx& operator=(const Nghttpx&) = delete;

  const std::string& base_url() const { return base_url_; }  // "https://127.0.0.1:PORT/v1"
  std::string error_log() const;

 private:
  TempFile conf_;
  std::unique_ptr<net::Process> proc_;
  std::string base_url_;
};

// Prometheus scraping what `scrape_configs` (the YAML list, items indented by two spaces) names,
// every second, its TSDB in a temporary directory.
class Prometheus {
 public:
  explicit Prometheus(const std::string& scrape_configs);
  ~Prometheus();
  Prometheus(const Prometheus&) = delete;
  Prometheus& operator=(const Prometheus&) = delete;

  const std::string& url() const { return url_; }  // "http://127.0.0.1:PORT"
  // /api/v1/query's answer; {"status": "error", ...} when the query is wrong or Prometheus is not there.
  nlohmann::json query(const std::string& promql) const;

 private:
  TempFile conf_;
  std::unique_ptr<net::Process> proc_;
  std::string url_;
};

// The Pushgateway, its persistence file in a temporary directory.
class Pushgateway {
 public:
  Pushgateway();
  ~Pushgateway();
  Pushgateway(const Pushgateway&) = delete;
  Pushgateway& operator=(const Pushgateway&) = delete;
  const std::string& url() const { return url_; }  // "http://127.0.0.1:PORT"

 private:
  TempFile dir_;
  std::unique_ptr<net::Process> proc_;
  std::string url_;
};

// One GET: the status (0 when it failed) and the body.
struct Fetched {
  long status = 0;
  std::string body;
};
Fetched http_get(const std::string& url, const std::vector<std::string>& headers = {});

// A loopback port free a moment ago.
int free_port();

}  // namespace infdoctor::test
