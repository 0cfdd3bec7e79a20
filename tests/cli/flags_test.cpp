// One meaning per flag, curl's where curl has the flag, and the hints a wrong URL scheme, an
// untrusted certificate or a forgotten proxy deserve: the real binary against the fake provider.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

const char* kModel = R"({"models": {"m": {"overhead_ms": 5, "decode_ms_per_token": 1}}})";

// Runs `args` with `env` added to the environment.
net::CommandResult command(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, 120s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

net::CommandResult infdoctor(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
  args.insert(args.begin(), test::infdoctor_bin());
  return command(args, env);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("--json [FILE] means the same in every command") {
  auto server = test::start_fake(kModel);
  const test::TempFile scratch("", "scratch");
  const std::string& dir = scratch.dir();
  // Alone it is stdout, and the next flag stays a flag (it used to become the file's name).
  auto r = infdoctor({"run", "--base-url", server->base_url(), "--model", "m", "--checks", "baseline", "--json",
                      "--quick", "--max-requests", "20"});
  CHECK(r.exit_code == 0);
  CHECK(nlohmann::json::parse(r.out).contains("checks"));
  CHECK_FALSE(std::filesystem::exists("--quick"));
  // With FILE it is written there, in probe as in run.
  r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "--json", dir + "/probe.json"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("POST " + server->base_url()) == 0);  // the table still comes, as run's report does
  CHECK(nlohmann::json::parse(slurp(dir + "/probe.json"))["http_status"] == 200);
  r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "--json"});
  CHECK(nlohmann::json::parse(r.out)["http_status"] == 200);
  r = infdoctor({"run", "--base-url", server->base_url(), "--model", "m", "--checks", "baseline", "--quick", "--json",
                 dir + "/results.json"});
  CHECK(r.exit_code == 0);
  r = infdoctor({"explain", dir + "/results.json", "--json", dir + "/diagnosis.json"});
  CHECK(r.exit_code == 0);
  CHECK(nlohmann::json::parse(slurp(dir + "/diagnosis.json")).contains("diagnosis"));
  // A positional read as --json's FILE is named, not "0 runs" or a missing-file error.
  r = infdoctor({"history", "--json", dir + "/runs.db"});
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("'" + dir + "/runs.db' was read as --json's FILE; put the history FILE before --json") !=
        std::string::npos);
}

TEST_CASE("flags renamed so that one name means one thing say their new name") {
  auto r = infdoctor({"run", "--base-url", "http://127.0.0.1:9/v1", "--prompt-tokens", "64,512"});
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("--prompt-tokens is now --sweep-prompt-tokens") != std::string::npos);
  r = infdoctor({"run", "--base-url", "http://127.0.0.1:9/v1", "--max-tokens", "1,32"});
  CHECK(r.err.find("--max-tokens is now --sweep-max-tokens") != std::string::npos);
  r = infdoctor({"probe", "--base-url", "http://127.0.0.1:9/v1", "-m", "gpt-4o"});
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("-m is now --model (-m is curl's --max-time)") != std::string::npos);
  // A number of seconds is -m's value, however it is written.
  auto server = test::start_fake(kModel);
  for (const char* seconds : {"5", ".5", "2.5e1"})
    CHECK(infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "-m", seconds}).exit_code == 0);
  // The help of run and probe lists curl's letters with curl's meanings.
  for (const char* cmd : {"run", "probe"}) {
    r = infdoctor({cmd, "--help"});
    for (const char* want : {"-m,--max-time", "-H,--header", "-x,--proxy", "-k,--insecure", "-s,--quiet", "-v,--verbose"})
      CHECK_MESSAGE(r.out.find(want) != std::string::npos, cmd << " --help lacks " << want);
  }
}

TEST_CASE("run --help groups its flags: target, connection, checks, workload, output, scheduled runs, and the load ramp has flags of its own") {
  const auto r = infdoctor({"run", "--help"});
  REQUIRE(r.exit_code == 0);
  std::istringstream in(r.out);
  std::vector<std::string> groups;
  std::map<std::string, std::string> group_of;  // a flag's long name: the group it is listed under
  std::string group, line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == ':' && line.front() != ' ') {
      group = line.substr(0, line.size() - 1);
      if (group != "Options") groups.push_back(group);
      continue;
    }
    // An option's line: "  -x,--proxy TEXT  ..." or "  --base-url TEXT  ..."
    if (line.rfind("  -", 0) != 0) continue;
    const auto at = line.find("--");
    if (at == std::string::npos) continue;
    const auto end = line.find_first_of(" ,=", at);
    group_of[line.substr(at, end - at)] = group;
  }
  CHECK(groups == std::vector<std::string>{"Target", "Connection", "Checks", "Workload", "Output", "Scheduled runs"});
  // Every flag but --help is in a group, none left in the ungrouped list.
  for (const auto& [flag, g] : group_of) {
    CAPTURE(flag);
    if (flag != "--help") CHECK(g != "Options");
  }
  CHECK(group_of.size() >= 40);
  for (const auto& [flag, g] : std::vector<std::pair<std::string, std::string>>{
           {"--base-url", "Target"}, {"--model", "Target"}, {"--proxy", "Connection"}, {"--cacert", "Connection"},
           {"--checks", "Checks"}, {"--load-levels", "Checks"}, {"--load-rates", "Checks"}, {"--load-mix", "Checks"},
           {"--workload", "Workload"}, {"--body", "Workload"}, {"--slo", "Workload"}, {"--json", "Output"},
           {"--bundle", "Output"}, {"--prom", "Scheduled runs"}, {"--push", "Scheduled runs"}, {"--history", "Scheduled runs"}}) {
    CAPTURE(flag);
    CHECK(group_of[flag] == g);
  }
  // A load flag is its setting under another name: the same plan as --set load.*.
  const auto plan = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "--base-url", "http://127.0.0.1:9/v1", "--model", "Qwen2.5-7B-Instruct",
                                     "--checks", "load", "--dry-run"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto p = infdoctor(args);
    CHECK(p.exit_code == 0);
    return p.out;
  };
  CHECK(plan({"--load-levels", "3,6"}) == plan({"--set", "load.levels=3,6"}));
  CHECK(plan({"--load-levels", "3,6"}) != plan({"--set", "load.levels=3,7"}));
  CHECK(plan({"--load-rates", "2,4"}) == plan({"--set", "load.rates=2,4"}));
}

TEST_CASE("-m is curl's --max-time: a first token later than it fails the request in about that time") {
  auto server = test::start_fake(R"({"models": {"slow": {"overhead_ms": 3000}}})");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "slow", "-m", "0.4"});
  const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.exit_code == 3);
  INFO(r.err);
  CHECK(r.err.find("timed out") != std::string::npos);
  CHECK(took_ms > 350);
  CHECK(took_ms < 2500);  // well before the 3 s first token
}

TEST_CASE("-H adds a header to every request, and a credential in it is never printed") {
  auto server = test::start_fake(kModel);
  const auto r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "-H", "X-Team: sre", "-H",
                            "X-Api-Token: tok-header-secret-1234", "-v", "--json"});
  CHECK(r.exit_code == 0);
  const auto served = server->served();
  REQUIRE(served.size() == 1);
  CHECK(served[0].headers.at("x-team") == "sre");
  CHECK(served[0].headers.at("x-api-token") == "tok-header-secret-1234");
  CHECK(r.err.find("> POST " + server->base_url() + "/chat/completions") != std::string::npos);
  CHECK(r.err.find("< HTTP/1.1 200") != std::string::npos);
  CHECK((r.out + r.err).find("tok-header-secret") == std::string::npos);
  const auto bad = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "-H", "Bearer tok-no-colon-secret"});
  CHECK(bad.exit_code == 64);
  CHECK(bad.err.find("-H wants \"Name: value\"") != std::string::npos);
  CHECK(bad.err.find("tok-no-colon-secret") == std::string::npos);  // a malformed header is not echoed
}

TEST_CASE("run -v: one line per model request as it completes") {
  auto server = test::start_fake(kModel);
  const auto r = infdoctor({"run", "--base-url", server->base_url(), "--model", "m", "--checks", "baseline", "--quick",
                            "-v", "--json", "-"});
  CHECK(r.exit_code == 0);
  std::size_t lines = 0;
  for (auto at = r.err.find("baseline: HTTP/1.1 200, first token "); at != std::string::npos;
       at = r.err.find("baseline: HTTP/1.1 200, first token ", at + 1))
    ++lines;
  CHECK(lines > 0);
  CHECK(lines == server->served().size());
}

TEST_CASE("a proxy from the environment is named, and --proxy '' goes direct") {
  auto server = test::start_fake(kModel);
  const std::string dead_proxy = "http://127.0.0.1:9";  // discard: nothing listens
  auto r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m"}, {"http_proxy=" + dead_proxy});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("note: the request goes through the proxy http://127.0.0.1:9 (from $http_proxy)") !=
        std::string::npos);
  CHECK(r.err.find("through the proxy http://127.0.0.1:9 (from $http_proxy)") != std::string::npos);
  CHECK(r.err.find("no_proxy, --proxy ''") != std::string::npos);
  r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m", "--proxy", ""}, {"http_proxy=" + dead_proxy});
  CHECK(r.exit_code == 0);
  r = infdoctor({"probe", "--base-url", server->base_url(), "--model", "m"},
                {"http_proxy=" + dead_proxy, "no_proxy=localhost,127.0.0.1"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("proxy") == std::string::npos);
  // run warns before the plan, even with --quiet: every timing would include the proxy.
  r = infdoctor({"run", "--base-url", server->base_url(), "--checks", "transport", "--quick", "-s", "--json", "-"},
                {"http_proxy=" + dead_proxy});
  CHECK(r.err.find("warning: every HTTP request goes through the proxy http://127.0.0.1:9 (from $http_proxy)") !=
        std::string::npos);
}

TEST_CASE("the wrong scheme and an untrusted certificate get the fix, not only OpenSSL's words") {
  auto plain = test::start_fake(kModel);
  auto tls = test::start_fake(kModel, /*tls=*/true);
  const std::string plain_port = plain->base_url().substr(plain->base_url().rfind(':'));
  const std::string tls_port = tls->base_url().substr(tls->base_url().rfind(':'));
  auto r = infdoctor({"probe", "--base-url", "https://127.0.0.1" + plain_port, "--model", "m"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("use http:// in the base URL") != std::string::npos);
  r = infdoctor({"probe", "--base-url", "http://127.0.0.1" + tls_port, "--model", "m"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("use https:// in the base URL") != std::string::npos);
  r = infdoctor({"probe", "--base-url", "https://localhost" + tls_port, "--model", "m"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("not signed by a CA this machine trusts") != std::string::npos);
  CHECK(r.err.find("--cacert FILE") != std::string::npos);
  CHECK(r.err.find("-k") != std::string::npos);
  r = infdoctor({"probe", "--base-url", "https://localhost" + tls_port, "--model", "m", "-k"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("warning: -k: the server's certificate and name are not checked") != std::string::npos);
  // run: the same line, and exit 3 (nothing measured), not a critical finding.
  r = infdoctor({"run", "--base-url", "https://localhost" + tls_port, "--model", "m", "--checks", "baseline", "--quick",
                 "--json", "-"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("--cacert FILE") != std::string::npos);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("repro.sh runs as is against another server and model, with the run's own request") {
  auto first = test::start_fake(R"({"models": {"m": {"overhead_ms": 5, "decode_ms_per_token": 1}}})");
  const test::TempFile scratch("", "scratch");
  const std::string bundle = scratch.dir() + "/bundle";
  auto r = infdoctor({"run", "--base-url", first->base_url(), "--model", "m", "--checks", "baseline", "--quick", "-s",
                      "--set", "baseline.prompt_tokens=50", "--set", "baseline.max_tokens=7", "--bundle", bundle});
  REQUIRE(r.exit_code == 0);
  // The first server is gone; the script is pointed elsewhere from the environment alone.
  first.reset();
  auto second = test::start_fake(R"({"models": {"other": {"overhead_ms": 5, "decode_ms_per_token": 1}}})");
  r = command({"sh", bundle + "/repro.sh"}, {"BASE_URL=" + second->base_url(), "MODEL=other", "OUT=" + scratch.dir()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("the target model: first content after ") != std::string::npos);
  const auto served = second->served();
  REQUIRE(served.size() == 1);  // the baseline's request (the fake logs model requests)
  CHECK(served[0].model == "other");
  CHECK(served[0].status == 200);
  // The stream is in its file, not on the terminal: the run's request, its prompt and max_tokens.
  CHECK(r.out.find("data:") == std::string::npos);
  std::ifstream in(scratch.dir() + "/repro-1.sse");
  const std::string stream((std::istreambuf_iterator<char>(in)), {});
  CHECK(stream.find("\"prompt_tokens\":50,") != std::string::npos);
  CHECK(stream.find("\"completion_tokens\":7,") != std::string::npos);
}

TEST_CASE("rules list: every built-in rule with its severity, cause and condition, and a broken directory is exit 3") {
  auto r = infdoctor({"rules", "list", "--json"});
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["rules"].size() >= 20);
  for (const auto& rule : j["rules"]) {
    CHECK(rule["id"].get<std::string>().find('.') != std::string::npos);
    CHECK(!rule["when"].get<std::string>().empty());
  }
  r = infdoctor({"rules", "list"});
  CHECK(r.out.find("built-in rules: " + std::to_string(j["rules"].size()) + " rules") == 0);
  // The severity a report can show, the critical condition with it; a rule without a cause says so.
  CHECK(r.out.find("queueing.slots  [warning, critical when ") != std::string::npos);
  CHECK(r.out.find("errors.failed_requests  [warning, critical when ") != std::string::npos);
  CHECK(r.out.find("no latency cause, scope endpoint]") != std::string::npos);
  CHECK(r.out.find("cause , ") == std::string::npos);
  CHECK(r.out.find(" && ") == std::string::npos);
  CHECK(r.out.find(" and ") != std::string::npos);
  CHECK(infdoctor({"rules", "list", "--rules", "/nonexistent-rules-dir"}).exit_code == 3);
}

TEST_CASE("demo says whether the diagnosis matched what it planted") {
  const auto r = infdoctor({"demo", "--fault", "healthy", "-s"});
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("infdoctor: demo: no finding above info, as planted") != std::string::npos);
}

}  // namespace infdoctor
