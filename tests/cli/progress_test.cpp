// Progress on stderr in every mode: one timestamped line per step in a pipe or a log, one live
// line on a terminal (a pseudo-terminal from util-linux's script(1)), nothing with --quiet; stdout
// carries only the report.
#include <doctest/doctest.h>

#include <regex>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

const char* kScenario = R"({"models": {"m": {"overhead_ms": 10, "decode_ms_per_token": 1}}})";

std::vector<std::string> run_args(const std::string& url) {
  return {test::infdoctor_bin(), "run", "--base-url", url, "--model", "m", "--checks", "transport,baseline",
          "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"};
}

}  // namespace

TEST_CASE("progress: in a pipe, one timestamped line per step with the check's place in the run") {
  auto server = test::start_fake(kScenario);
  const auto r = net::run_command(run_args(server->base_url()), 60s);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  const std::regex line(R"(infdoctor: \d\d:\d\d:\d\dZ \[2/2\] \d+\.\d s: baseline: m 1/\d+\n)");
  CHECK_MESSAGE(std::regex_search(r->err, line), r->err);
  CHECK(r->err.find("[1/2]") != std::string::npos);
  CHECK(r->err.find('\r') == std::string::npos);       // no terminal control in a log
  CHECK(r->out.find("infdoctor: ") == std::string::npos);  // stdout is the report alone
}

TEST_CASE("progress: --quiet leaves errors and warnings only") {
  auto server = test::start_fake(kScenario);
  auto args = run_args(server->base_url());
  args.push_back("--quiet");
  const auto r = net::run_command(args, 60s);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK_MESSAGE(r->err.empty(), r->err);
}

TEST_CASE("progress: on a terminal, one live line rewritten in place and cleared before the report") {
  auto server = test::start_fake(kScenario);
  std::string command;
  for (const auto& a : run_args(server->base_url())) command += "'" + a + "' ";
  // script(1) runs the command on a pseudo-terminal and copies what it wrote to stdout; it wants
  // a standard input, which run_command closes.
  const auto r = net::run_command({"sh", "-c", "script -qec \"" + command + "2>&1\" /dev/null </dev/null"}, 60s);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK_MESSAGE(r->out.find("\r\033[K[2/2]") != std::string::npos, r->out);
  CHECK(r->out.find("Z [2/2]") == std::string::npos);  // no timestamped log lines
  CHECK(r->out.find("\r\033[Kinfdoctor run ") != std::string::npos);  // the line is cleared, then the report
}

}  // namespace infdoctor
