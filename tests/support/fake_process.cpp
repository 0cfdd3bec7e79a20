#include "support/fake_process.h"

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

namespace infdoctor::test {

TempFile::TempFile(const std::string& content, const std::string& name) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "infdoctor-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) FAIL("cannot create a temporary directory");
  dir_ = tmpl;
  path_ = dir_ + "/" + name;
  std::ofstream(path_, std::ios::binary) << content;
}

TempFile::~TempFile() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::unique_ptr<fake::Server> start_fake(const std::string& scenario_json, bool tls) {
  auto scenario = fake::parse_scenario(scenario_json, "test scenario");
  REQUIRE_MESSAGE(scenario.ok(), (scenario.ok() ? "" : scenario.error().message));
  fake::ServerOptions opts;
  if (tls) {
    opts.tls_cert = certs_dir() + "/server.pem";
    opts.tls_key = certs_dir() + "/server.key";
  }
  auto server = fake::Server::start(std::move(scenario.value()), opts);
  REQUIRE_MESSAGE(server.ok(), (server.ok() ? "" : server.error().message + ": " + server.error().detail));
  return std::move(server.value());
}

FakeProcess::FakeProcess(const std::string& scenario_json, bool tls) : scenario_(scenario_json, "scenario.json") {
  std::vector<std::string> argv = {fake_bin(), "--listen", "127.0.0.1:0", "--scenario", scenario_.path()};
  if (tls) {
    argv.insert(argv.end(), {"--tls-cert", certs_dir() + "/server.pem", "--tls-key", certs_dir() + "/server.key"});
  }
  auto p = net::Process::start(argv);
  REQUIRE_MESSAGE(p.ok(), (p.ok() ? "" : p.error().message));
  auto line = (*p)->read_line(std::chrono::seconds(10));
  REQUIRE_MESSAGE(line.ok(), (line.ok() ? "" : line.error().message));
  const std::string prefix = "listening on ";
  REQUIRE(line->rfind(prefix, 0) == 0);
  base_url_ = std::string(tls ? "https://" : "http://") + line->substr(prefix.size()) + "/v1";
  proc_ = std::move(p.value());
}

}  // namespace infdoctor::test
