#pragma once
// Test support: Debian's nginx (.ci/install-deps installs nginx-light) in front of a server, with
// a config written to a temporary directory, listening on a loopback port picked free, in the
// foreground as one process, and stopped by its PID (SIGTERM, then SIGKILL).
#include <memory>
#include <string>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor::test {

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

}  // namespace infdoctor::test
