#include "support/fronts.h"

#include "http/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <doctest/doctest.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

namespace infdoctor::test {

// A loopback port free a moment ago: a server binds it next (a start that loses the race retries).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

namespace {

bool accepts(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

std::string config(const NginxOptions& o, const std::string& dir, int port) {
  std::ostringstream c;
  c << "daemon off;\nmaster_process off;\nerror_log " << dir << "/error.log info;\npid " << dir << "/nginx.pid;\n"
    << "events { worker_connections 256; }\n"
    << "http {\n  access_log off;\n";
  for (const char* t : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"})
    c << "  " << t << "_temp_path " << dir << "/" << t << ";\n";
  c << "  server {\n    listen 127.0.0.1:" << port << (o.tls ? " ssl" : "") << ";\n";
  if (o.tls)
    c << "    ssl_certificate " << certs_dir() << "/server.pem;\n    ssl_certificate_key " << certs_dir()
      << "/server.key;\n";
  c << "    " << o.server << "\n"
    << "    location / {\n      proxy_pass http://" << o.upstream << ";\n      proxy_http_version 1.1;\n      "
    << o.location << "\n    }\n  }\n}\n";
  return c.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts argv_for(port) on a free port until it listens there within `wait`, up to three ports
// (another process may take a port between the pick and the bind).
std::unique_ptr<net::Process> start_listening(const std::function<std::vector<std::string>(int)>& argv_for, int& port,
                                              std::chrono::seconds wait = std::chrono::seconds(10)) {
  using namespace std::chrono_literals;
  for (int attempt = 0; attempt < 3; ++attempt) {
    port = free_port();
    REQUIRE(port > 0);
    const auto argv = argv_for(port);
    auto p = net::Process::start(argv);
    REQUIRE_MESSAGE(p.ok(), argv.front() << " did not start (.ci/install-deps installs it): "
                                         << (p.ok() ? "" : p.error().message));
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline && (*p)->running() && !accepts(port))
      std::this_thread::sleep_for(10ms);
    if ((*p)->running() && accepts(port)) return std::move(p.value());
  }
  return nullptr;
}

}  // namespace

Nginx::Nginx(const NginxOptions& o) : conf_("", "nginx.conf") {
  proc_ = start_listening(
      [&](int port) {
        std::ofstream(conf_.path()) << config(o, conf_.dir(), port);
        return std::vector<std::string>{"/usr/sbin/nginx", "-p", conf_.dir(), "-c", conf_.path(), "-e",
                                        conf_.dir() + "/error.log"};
      },
      port_);
  REQUIRE_MESSAGE(proc_ != nullptr, "nginx did not listen: " << error_log());
  base_url_ = std::string(o.tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_) + "/v1";
}

Nginx::~Nginx() {
  if (proc_) proc_->stop();
}

std::string Nginx::error_log() const { return read_file(conf_.dir() + "/error.log"); }

// An empty config file: nghttpx otherwise reads /etc/nghttpx/nghttpx.conf.
Nghttpx::Nghttpx(const std::string& upstream, const std::vector<std::string>& options) : conf_("", "nghttpx.conf") {
  int port = 0;
  const std::string backend = upstream.substr(0, upstream.rfind(':')) + "," + upstream.substr(upstream.rfind(':') + 1);
  proc_ = start_listening(
      [&](int p) {
        std::vector<std::string> argv = {"/usr/sbin/nghttpx", "--conf=" + conf_.path(),
                                         "--frontend=127.0.0.1," + std::to_string(p), "--backend=" + backend,
                                         "--workers=1", "--no-ocsp", "--errorlog-file=" + conf_.dir() + "/error.log"};
        argv.insert(argv.end(), options.begin(), options.end());
        argv.push_back(certs_dir() + "/server.key");
        argv.push_back(certs_dir() + "/server.pem");
        return argv;
      },
      port);
  REQUIRE_MESSAGE(proc_ != nullptr, "nghttpx did not listen: " << error_log());
  base_url_ = "https://127.0.0.1:" + std::to_string(port) + "/v1";
}

Nghttpx::~Nghttpx() {
  if (proc_) proc_->stop();
}

std::string Nghttpx::error_log() const { return read_file(conf_.dir() + "/error.log"); }

}  // namespace infdoctor::test

namespace infdoctor::test {

Fetched http_get(const std::string& url, const std::vector<std::string>& headers) {
  http::Request req;
  req.url = url;
  req.headers = headers;
  req.proxy = "";
  req.timeout = std::chrono::seconds(30);
  http::Client client;
  const http::Response r = client.perform(req);
  if (!r.status.ok()) return {};
  return {r.http_status, r.body};
}

namespace {

// Waits up to `limit` for GET url to answer 200.
bool answers(const std::string& url, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (http_get(url).status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Starts a server of the Prometheus family, `args` and its --web.listen-address on a free
// loopback port, waits for its /-/ready, and returns its URL.
std::string start_ready(std::unique_ptr<net::Process>& proc, const std::vector<std::string>& args) {
  int port = 0;
  proc = start_listening(
      [&](int p) {
        auto argv = args;
        argv.insert(argv.end(), {"--web.listen-address=127.0.0.1:" + std::to_string(p), "--log.level=warn"});
        return argv;
      },
      port);
  REQUIRE_MESSAGE(proc != nullptr, args.front() << " did not listen");
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  REQUIRE_MESSAGE(answers(url + "/-/ready", std::chrono::seconds(30)), args.front() << " was not ready in 30 s");
  return url;
}

}  // namespace

Prometheus::Prometheus(const std::string& scrape_configs) : conf_("", "prometheus.yml") {
  std::ofstream(conf_.path()) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                              << "scrape_configs:\n"
                              << scrape_configs;
  url_ = start_ready(proc_, {"/usr/bin/prometheus", "--config.file=" + conf_.path(),
                             "--storage.tsdb.path=" + conf_.dir() + "/data"});
}

Prometheus::~Prometheus() {
  if (proc_) proc_->stop();
}

nlohmann::json Prometheus::query(const std::string& promql) const {
  std::string q;
  for (unsigned char c : promql) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~') {
      q.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      q += buf;
    }
  }
  const Fetched f = http_get(url_ + "/api/v1/query?query=" + q);
  auto j = nlohmann::json::parse(f.body, nullptr, false);
  if (j.is_discarded()) return {{"status", "error"}, {"error", "HTTP " + std::to_string(f.status) + ": " + f.body}};
  return j;
}

Pushgateway::Pushgateway() : dir_("", "pushgateway.data") {
  url_ = start_ready(proc_, {"/usr/bin/prometheus-pushgateway", "--persistence.file=" + dir_.path()});
}

Pushgateway::~Pushgateway() {
  if (proc_) proc_->stop();
}

std::string LlamaEngine::dir() { return INFDOCTOR_ENGINE_DIR; }

std::optional<std::string> LlamaEngine::unavailable_reason() {
  for (const char* f : {"/shim.mjs", "/target.gguf", "/small.gguf", "/node_modules/node-llama-cpp/package.json"})
    if (!std::ifstream(dir() + f)) return "the engine is not prepared in " + dir() + " (tests/engine/setup.sh; it needs Node.js 20)";
  return std::nullopt;
}

LlamaEngine::LlamaEngine(const LlamaEngineOptions& o) {
  if (auto why = unavailable_reason()) FAIL(*why);
  std::vector<std::string> argv;
  if (!o.netns.empty()) argv = {"ip", "netns", "exec", o.netns};
  argv.insert(argv.end(), {"/usr/bin/env", "node", dir() + "/shim.mjs", "--host", o.host, "--port", "0", "--slots",
                           std::to_string(o.slots)});
  for (const auto& [name, file] : o.models) argv.insert(argv.end(), {"--model", name + "=" + dir() + "/" + file});
  for (const auto& [name, ms] : o.overhead_ms) argv.insert(argv.end(), {"--overhead-ms", name + "=" + std::to_string(ms)});
  auto p = net::Process::start(argv);
  REQUIRE_MESSAGE(p.ok(), "the engine did not start: " << (p.ok() ? "" : p.error().message));
  proc_ = std::move(p.value());
  // It says where it listens once its models are loaded.
  const auto line = proc_->read_line(std::chrono::seconds(60));
  REQUIRE_MESSAGE(line.ok(), "the engine (node " << dir() << "/shim.mjs) did not listen within 60 s");
  const std::string prefix = "listening on ";
  REQUIRE_MESSAGE(line->rfind(prefix, 0) == 0, "the engine said: " << *line);
  base_url_ = "http://" + o.host + ":" + line->substr(prefix.size()) + "/v1";
}

LlamaEngine::~LlamaEngine() {
  if (proc_) proc_->stop();
}

}  // namespace infdoctor::test
