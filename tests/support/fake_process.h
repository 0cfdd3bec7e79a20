#pragma once
// Test support: the fake provider in-process (fake::Server) or as the infdoctor-fake program,
// temporary files, and the paths the build hands to tests.
#include <cstdlib>
#include <memory>
#include <string>

#include "fake/server.h"
#include "net/subprocess.h"

namespace infdoctor::test {

// The infdoctor binary the tests drive: this build's, or INFDOCTOR_TEST_BIN's (an earlier commit's
// build, to show what a test catches there).
inline std::string infdoctor_bin() {
  const char* other = std::getenv("INFDOCTOR_TEST_BIN");
  return other && *other ? other : INFDOCTOR_BIN;
}
inline std::string fake_bin() { return INFDOCTOR_FAKE_BIN; }
inline std::string certs_dir() { return INFDOCTOR_TEST_CERTS; }
inline std::string fixtures_dir() { return INFDOCTOR_FIXTURES; }
inline std::string ca_pem() { return INFDOCTOR_TEST_CERTS "/ca.pem"; }

// A file in a fresh temporary directory, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& content, const std::string& name = "file");
  ~TempFile();
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }  // its own directory, removed with it

 private:
  std::string dir_, path_;
};

// Starts an in-process fake provider from scenario JSON; fails the test when it cannot.
std::unique_ptr<fake::Server> start_fake(const std::string& scenario_json, bool tls = false);

// The infdoctor-fake program on 127.0.0.1 and a free port, stopped by the destructor.
class FakeProcess {
 public:
  explicit FakeProcess(const std::string& scenario_json, bool tls = false);
  const std::string& base_url() const { return base_url_; }
  bool ok() const { return proc_ != nullptr; }

 private:
  TempFile scenario_;
  std::unique_ptr<net::Process> proc_;
  std::string base_url_;
};

}  // namespace infdoctor::test
