// The exit-code contract, with the real binary: 3 when the run could not measure what it came for
// (no key, a refused key, an unknown model, a wrong base URL, nothing listening), with one line
// naming the cause and the fix; 1 and 2 only for what was measured.
#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

const char* kKeyed = R"({"api_key": "sk-fake-right-0123456789", "models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 2}}})";

net::CommandResult run(const std::string& base_url, std::vector<std::string> args) {
  std::vector<std::string> argv = {test::infdoctor_bin(), "run", "--base-url", base_url, "--quick", "--json", "-"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, 120s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

// The last line of stderr: the one that names the cause.
std::string last_line(const std::string& err) {
  std::string s = err;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

std::size_t model_requests(const fake::Server& server) {
  std::size_t n = 0;
  for (const auto& s : server.served())
    if (s.request_line.find("/chat/completions") != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("exit 3: no key to a provider that wants one, said before anything is sent, one request spent") {
  auto server = test::start_fake(kKeyed);
  const auto r = run(server->base_url(), {"--model", "m", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"});
  CHECK(r.exit_code == 3);
  const auto note = r.err.find("note: no API key ($INFDOCTOR_TEST_NO_SUCH_KEY is unset or empty)");
  CHECK(note != std::string::npos);
  CHECK(note < r.err.find("plan:"));
  CHECK(last_line(r.err).find("error: could not reach the model: the provider wants an API key and none was sent") !=
        std::string::npos);
  CHECK(last_line(r.err).find("set $INFDOCTOR_TEST_NO_SUCH_KEY") != std::string::npos);
  CHECK(model_requests(*server) == 1);  // the first 401 ends the model checks; nothing hammers
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["unreachable"].is_string());
  for (const auto& f : j["diagnosis"]) CHECK(f["severity"] != "critical");  // a config mistake is not a critical endpoint
}

TEST_CASE("exit 3: a refused key, never printed") {
  auto server = test::start_fake(kKeyed);
  test::TempFile key("sk-fake-wrong-9876543210\n", "key");
  const auto r = run(server->base_url(), {"--model", "m", "--api-key-file", key.path()});
  CHECK(r.exit_code == 3);
  CHECK(last_line(r.err).find("the provider refused the API key") != std::string::npos);
  CHECK(r.err.find("sk-fake-wrong") == std::string::npos);  // the fake echoes it; infdoctor does not
  CHECK(r.out.find("sk-fake-wrong") == std::string::npos);
}

TEST_CASE("exit 3: an unknown model, with where to list the known ones") {
  auto server = test::start_fake(kKeyed);
  test::TempFile key("sk-fake-right-0123456789", "key");
  const auto r = run(server->base_url(), {"--model", "nope", "--api-key-file", key.path()});
  CHECK(r.exit_code == 3);
  CHECK(last_line(r.err).find("does not know model 'nope'") != std::string::npos);
  CHECK(last_line(r.err).find("/v1/models lists") != std::string::npos);
}

TEST_CASE("exit 3: the text report says the cause once, gives no diagnosis, and the stopped checks say so briefly") {
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 20, "decode_ms_per_token": 2}}})");
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model",
                             "Qwen2.5-72B-Instruct", "--quick", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"},
                            120s);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 3);
  const std::string& out = r->out;
  CAPTURE(out);
  const std::string cause = "does not know model 'Qwen2.5-72B-Instruct'";
  const auto first = out.find(cause);
  CHECK(first != std::string::npos);
  CHECK(out.find(cause, first + 1) == std::string::npos);  // once, however many checks it stopped
  CHECK(out.find("DIAGNOSIS") == std::string::npos);
  CHECK(out.find("No diagnosis") != std::string::npos);
  const auto row = out.find("\n  baseline ");
  REQUIRE(row != std::string::npos);
  CHECK(out.substr(row, out.find('\n', row + 1) - row).find("not measured: the model could not be reached (above)") !=
        std::string::npos);
  CHECK(out.find("path           ok") != std::string::npos);  // what needs no model was still measured
}

TEST_CASE("exit 3: a base URL with the wrong path, and transport says its GETs met 404") {
  auto server = test::start_fake(kKeyed);
  test::TempFile key("sk-fake-right-0123456789", "key");
  std::string base = server->base_url();
  base.replace(base.rfind("/v1"), 3, "/api");
  const auto r = run(base, {"--model", "m", "--api-key-file", key.path()});
  CHECK(r.exit_code == 3);
  CHECK(last_line(r.err).find("is the base URL right? For OpenAI-compatible servers it usually ends in /v1") !=
        std::string::npos);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["checks"]["transport"]["metrics"]["not_found_count"].get<double>() > 0);
}

TEST_CASE("exit 3: nothing listens on the port, path says refused, not a healthy reply") {
  std::string base;
  {
    auto server = test::start_fake(kKeyed);
    base = server->base_url();
  }  // stopped: its port now refuses
  const auto r = run(base, {"--model", "m", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"});
  CHECK(r.exit_code == 3);
  CHECK(last_line(r.err).find("nothing accepts connections at") != std::string::npos);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["checks"]["path"]["metrics"]["tcp_refused_count"].get<double>() > 0);
}

TEST_CASE("exit 2, not 3: a provider that answers every request with 503 was measured failing") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 10, "faults": [{"kind": "503", "every": 1, "retry_after_s": 0}]}}})");
  const auto r = run(server->base_url(), {"--model", "m", "--checks", "baseline", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"});
  CHECK(r.exit_code == 2);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["unreachable"].is_null());
  REQUIRE(!j["diagnosis"].empty());
  CHECK(j["diagnosis"][0]["rule"] == "errors.failed_requests");
}

TEST_CASE("exit 64: a wrong command line is named, with a suggestion and the command's --help, before anything is sent") {
  auto server = test::start_fake(kKeyed);
  const std::string url = server->base_url();
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* expect;
    const char* help;
  };
  const std::vector<Case> cases = {
      {"a typo of a flag", {"run", "--base-url", url, "--modle", "m"}, "unknown option --modle for 'run'; did you mean --model?",
       "(see 'infdoctor run --help')"},
      {"a typo of a command", {"rnu", "--base-url", url}, "unknown command 'rnu'; did you mean run?", "(see 'infdoctor --help')"},
      {"a typo of a nested command", {"rules", "chek", "rules"}, "unknown command 'chek'; did you mean check?",
       "(see 'infdoctor rules --help')"},
      {"a setting no check has", {"run", "--base-url", url, "--model", "m", "--set", "transport.sample=3"},
       "'transport.sample' is no setting of that check (its settings: samples, max_addresses, path)", "(see 'infdoctor run --help')"},
      {"a negative limit, caught by --dry-run", {"run", "--base-url", url, "--model", "m", "--slo", "ttft_p50_ms=-5", "--dry-run"},
       "--slo: '-5' is not a limit", "(see 'infdoctor run --help')"},
      {"an unknown limit, with the names there are", {"run", "--base-url", url, "--model", "m", "--slo", "ttfx=5", "--dry-run"},
       "short names: ", "(see 'infdoctor run --help')"},
      {"history --model without --target", {"history", "/nonexistent.db", "--model", "m"}, "give --target URL too",
       "(see 'infdoctor history --help')"},
      {"a bad scheme", {"probe", "--base-url", "ftp://x/v1", "--model", "m"}, "--base-url must start with http:// or https://",
       "(see 'infdoctor probe --help')"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      std::vector<std::string> argv = {test::infdoctor_bin()};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      const auto r = net::run_command(argv, 30s);
      REQUIRE(r.ok());
      CHECK(r->exit_code == 64);
      CHECK_MESSAGE(r->err.rfind("infdoctor: error: ", 0) == 0, r->err);
      CHECK_MESSAGE(r->err.find(c.expect) != std::string::npos, r->err);
      CHECK(last_line(r->err) == c.help);
    }
  }
  CHECK(server->served().empty());
}

TEST_CASE("a stream cut short without its terminator: probe exits 3 naming it, run counts it as a broken stream") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 10, "decode_ms_per_token": 1, "faults": [{"kind": "cut_stream", "every": 1, "after_tokens": 3}]}}})");
  const auto p = net::run_command({test::infdoctor_bin(), "probe", "--base-url", server->base_url(), "--model", "m"}, 30s);
  REQUIRE(p.ok());
  CHECK(p->exit_code == 3);
  CHECK_MESSAGE(last_line(p->err).find("the stream ended without [DONE] and without a finish reason") != std::string::npos, p->err);
  const auto r = run(server->base_url(), {"--model", "m", "--checks", "baseline", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"});
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["run"]["metrics"]["broken_stream_count"].get<double>() >= 1);
  CHECK(r.exit_code == 2);
}

TEST_CASE("exit 3 before the first request: an output that cannot be written is named at once") {
  auto server = test::start_fake(kKeyed);
  for (const char* flag : {"--json", "--prom"}) {
    CAPTURE(flag);
    const auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--quick",
                                     flag, "/nonexistent-dir/out.txt"},
                                    30s);
    REQUIRE(r.ok());
    CHECK(r->exit_code == 3);
    CHECK(r->err.rfind(std::string("infdoctor: error: cannot write ") + flag + " /nonexistent-dir/out.txt", 0) == 0);
  }
  CHECK(server->served().empty());
}

TEST_CASE("a proxy's HTML error page is one line, its title, in probe's error and the run's report") {
  auto server = test::start_fake(R"({"models": {"m": {"faults": [{"kind": "html_502", "every": 1}]}}})");
  const auto p = net::run_command({test::infdoctor_bin(), "probe", "--base-url", server->base_url(), "--model", "m"}, 30s);
  REQUIRE(p.ok());
  CHECK(p->exit_code == 3);
  CHECK(p->err.rfind("infdoctor: error: http: HTTP 502: 502 Bad Gateway (request id ", 0) == 0);
  CHECK(std::count(p->err.begin(), p->err.end(), '\n') == 1);
  const auto r = run(server->base_url(), {"--model", "m", "--checks", "baseline", "--api-key-env", "INFDOCTOR_TEST_NO_SUCH_KEY"});
  CHECK(r.exit_code == 2);  // measured: the provider's proxy failed every request
  CHECK(r.out.find("<html>") == std::string::npos);
  CHECK(r.out.find("HTTP 502: 502 Bad Gateway") != std::string::npos);
}

}  // namespace infdoctor
