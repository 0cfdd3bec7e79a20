// Progress on stderr in every mode: one timestamped line per step in a pipe or a log, one live
// line on a terminal (a pseudo-terminal from util-linux's script(1)), nothing with --quiet; stdout
// carries only the report.
#include <doctest/doctest.h>

#include <regex>
#include <set>
#include <thread>

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

TEST_CASE("progress: in a real terminal (tmux), the live line counts an idle wait down and is gone before the report") {
  auto server = test::start_fake(kScenario);
  const test::TempFile scratch("", "scratch");
  const std::string sock = scratch.dir() + "/tmux.sock";
  std::string command;
  for (const auto& a : {test::infdoctor_bin(), std::string("run"), std::string("--base-url"), server->base_url()})
    command += "'" + a + "' ";
  command += "--model m --checks coldstart --idle-gaps 0,4; echo EXIT=$?; sleep 120";
  auto tmux = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-S", sock});
    auto r = net::run_command(args, 10s);
    REQUIRE(r.ok());
    return r.value();
  };
  REQUIRE(tmux({"new-session", "-d", "-x", "160", "-y", "50", command}).exit_code == 0);
  // One line on the screen; its countdown read about every 200 ms until the run ends (at most 60 s).
  const std::regex live(R"(\[1/1\] +\d+\.\d s  coldstart: idle 4 s before the next request  \((\d+) s left\))");
  std::set<int> seen_left;
  std::string screen;
  int live_lines_at_once = 0;
  for (int i = 0; i < 300 && screen.find("EXIT=") == std::string::npos; ++i) {
    screen = tmux({"capture-pane", "-p", "-t", "0"}).out;
    int lines = 0;
    for (auto it = std::sregex_iterator(screen.begin(), screen.end(), live); it != std::sregex_iterator(); ++it) {
      seen_left.insert(std::stoi((*it)[1]));
      ++lines;
    }
    live_lines_at_once = std::max(live_lines_at_once, lines);
    std::this_thread::sleep_for(200ms);
  }
  tmux({"kill-server"});
  INFO(screen);
  CHECK(screen.find("EXIT=0") != std::string::npos);
  CHECK(live_lines_at_once == 1);  // rewritten in place, never a scroll of lines
  CHECK(seen_left.size() >= 2);    // it moved: 4, 3, 2, 1 s left as the wait went on
  CHECK((seen_left.empty() || *seen_left.rbegin() <= 4));
  CHECK(screen.find("s left") == std::string::npos);  // cleared: the report stands alone
  CHECK(screen.find("infdoctor run ") != std::string::npos);
}

}  // namespace infdoctor
