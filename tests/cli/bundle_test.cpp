// The evidence bundle and `explain`, as a user meets them: the real binary against a fake provider
// that demands a canary API key.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "bundle/bundle.h"
#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const std::string kCanary = "sk-canary-0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e";

std::string scenario() {
  return R"({"api_key": ")" + kCanary + R"(", "models": {
    "big": {"overhead_ms": 120, "decode_ms_per_token": 45, "slots": 1, "cold_start": {"idle_s": 1.5, "penalty_ms": 900}},
    "small": {"overhead_ms": 30, "decode_ms_per_token": 4}}})";
}

net::CommandResult infdoctor(std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/bin/env", "INFDOCTOR_CANARY_KEY=" + kCanary, test::infdoctor_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, 180s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string sha256(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", md[i]);
    out += b;
  }
  return out;
}

std::vector<std::string> run_args(const std::string& base_url, const std::string& bundle) {
  return {"run", "--base-url", base_url, "--api-key-env", "INFDOCTOR_CANARY_KEY", "--model", "big", "--small-model",
          "small", "--checks", "transport,coldstart,baseline,concurrency", "--idle-gaps", "0,1,2.5",
          "--set", "baseline.samples=3", "--set", "baseline.max_tokens=16", "--concurrency", "1,2,4",
          "--set", "concurrency.max_tokens=8", "--bundle", bundle};
}

}  // namespace

TEST_CASE("bundle: a canary key appears in no byte of either bundle form, nor on stdout or stderr") {
  test::FakeProcess fake(scenario());
  REQUIRE(fake.ok());
  test::TempFile dir_holder("", "unused");
  const fs::path base = fs::path(dir_holder.path()).parent_path();
  for (const std::string name : {"evidence", "evidence.tar.gz"}) {
    SUBCASE(name.c_str()) {
      const std::string bundle = (base / name).string();
      const auto r = infdoctor(run_args(fake.base_url(), bundle));
      CHECK(r.exit_code == 2);  // serialised requests: critical
      CHECK(r.out.find(kCanary) == std::string::npos);
      CHECK(r.err.find(kCanary) == std::string::npos);
      CHECK(r.out.find("DIAGNOSIS") != std::string::npos);
      std::vector<std::pair<std::string, std::string>> files;
      if (name.size() > 7 && name.substr(name.size() - 7) == ".tar.gz") {
        struct stat st{};
        REQUIRE(::stat(bundle.c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0600);
        CHECK(slurp(bundle).find(kCanary) == std::string::npos);
        auto read = bundle::read_archive(bundle);
        REQUIRE(read.ok());
        files = read.value();
        CHECK_FALSE(fs::exists(bundle + ".partial"));
      } else {
        for (const auto& e : fs::directory_iterator(bundle)) {
          struct stat st{};
          REQUIRE(::stat(e.path().c_str(), &st) == 0);
          CHECK((st.st_mode & 0777) == 0600);
          files.emplace_back(e.path().filename().string(), slurp(e.path()));
        }
      }
      std::set<std::string> names;
      for (const auto& [n, content] : files) {
        CAPTURE(n);
        names.insert(n);
        CHECK(content.find(kCanary) == std::string::npos);
        CHECK(content.find("sk-canary") == std::string::npos);
      }
      CHECK(names == std::set<std::string>{"summary.md", "results.json", "samples.jsonl", "repro.sh", "report.html",
                                           "manifest.json"});
      // The manifest holds the sha256 of every other file.
      std::map<std::string, std::string> by_name(files.begin(), files.end());
      const auto manifest = nlohmann::json::parse(by_name["manifest.json"]);
      for (const auto& [n, content] : by_name) {
        if (n == "manifest.json") continue;
        CAPTURE(n);
        CHECK(manifest["files"][n]["sha256"] == sha256(content));
      }
      // samples.jsonl: one line per model request, as the run went.
      std::istringstream lines(by_name["samples.jsonl"]);
      int n_lines = 0;
      for (std::string line; std::getline(lines, line); ++n_lines) CHECK(nlohmann::json::parse(line).contains("request_id"));
      const auto results = nlohmann::json::parse(by_name["results.json"]);
      CHECK(n_lines == results["run"]["metrics"]["requests_count"].get<int>());
      CHECK(by_name["repro.sh"].find("${INFDOCTOR_CANARY_KEY:-}") != std::string::npos);
      CHECK(by_name["summary.md"].find("## Ranked causes") != std::string::npos);
      CHECK(by_name["summary.md"].find("req-") != std::string::npos);  // request ids of the slowest requests
      // Every table a check returned, under its own title, in summary.md and report.html alike.
      int tables = 0;
      for (const auto& [id, check] : results["checks"].items())
        for (const auto& t : check["tables"]) {
          ++tables;
          const std::string title = t["title"].get<std::string>();
          CAPTURE(title);
          CHECK(by_name["summary.md"].find("### " + title + "\n") != std::string::npos);
          CHECK(by_name["report.html"].find("<h3>" + title) != std::string::npos);
        }
      CHECK(tables > 0);
    }
  }
}

TEST_CASE("bundle: every model request carries a W3C traceparent, and samples.jsonl and summary.md keep its trace id") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 20, "decode_ms_per_token": 3}}})");
  test::TempFile holder("", "unused");
  const std::string dir = (fs::path(holder.path()).parent_path() / "bundle").string();
  const auto r = infdoctor({"run", "--base-url", server->base_url(), "--model", "big", "--checks", "baseline", "--quick",
                            "--bundle", dir});
  CHECK(r.exit_code == 0);
  // What the server was sent: a version 00 traceparent, a sampled trace of its own per request.
  std::set<std::string> sent;
  for (const auto& s : server->served()) {
    const auto it = s.headers.find("traceparent");
    REQUIRE(it != s.headers.end());
    const std::string& tp = it->second;
    REQUIRE(tp.size() == 55);
    CHECK(tp.rfind("00-", 0) == 0);
    CHECK(tp.substr(35, 1) == "-");
    CHECK(tp.substr(52) == "-01");
    CHECK(tp.substr(3, 32).find_first_not_of("0123456789abcdef") == std::string::npos);
    sent.insert(tp.substr(3, 32));
  }
  CHECK(sent.size() == server->served().size());  // never the same trace twice
  std::set<std::string> kept;
  std::istringstream lines(slurp(dir + "/samples.jsonl"));
  for (std::string line; std::getline(lines, line);) kept.insert(nlohmann::json::parse(line)["trace_id"].get<std::string>());
  CHECK(kept == sent);
  const std::string summary = slurp(dir + "/summary.md");
  CHECK(summary.find("| trace id |") != std::string::npos);
  int shown = 0;  // the slowest requests' rows, each with its trace id beside its request id
  for (const auto& id : sent) shown += summary.find("` | `" + id + "`") != std::string::npos;
  CHECK(shown >= 1);
}

TEST_CASE("explain on a saved bundle reproduces the run's diagnosis exactly") {
  test::FakeProcess fake(scenario());
  REQUIRE(fake.ok());
  test::TempFile holder("", "unused");
  const std::string bundle = (fs::path(holder.path()).parent_path() / "b.tar.gz").string();
  const auto r = infdoctor(run_args(fake.base_url(), bundle));
  REQUIRE(fs::exists(bundle));
  const auto saved = nlohmann::json::parse(bundle::read_results(bundle).value().dump());
  REQUIRE(saved["diagnosis"].size() >= 2);
  const auto causes = [&] {
    std::set<std::string> c;
    for (const auto& f : saved["diagnosis"]) c.insert(f["cause"].get<std::string>());
    return c;
  }();
  CHECK(causes.count("queueing") == 1);
  CHECK(causes.count("cold_start") == 1);
  for (const auto& target : std::vector<std::string>{bundle, bundle + ".dir"}) {
    std::string path = target;
    if (target != bundle) {  // the same results as a directory bundle's results.json
      fs::create_directories(target);
      std::ofstream(target + "/results.json") << saved.dump();
    }
    const auto e = infdoctor({"explain", path, "--json"});
    CHECK(e.exit_code == r.exit_code);
    const auto again = nlohmann::json::parse(e.out);
    CHECK(again["diagnosis"] == saved["diagnosis"]);
  }
  const auto text = infdoctor({"explain", bundle});
  CHECK(text.out.find("DIAGNOSIS (ranked by attributed milliseconds)") != std::string::npos);
}

TEST_CASE("explain and rules check: bad input is one clear message and exit code 3") {
  test::TempFile bad_rules(R"({"family": "dns", "rules": [{"id": "dns.x", "cause": "dns_slow", "severity": "info",
    "title": "t", "when": "dns.p50_ms >", "impact_ms": "1", "confidence": 1, "explain": "e"}]})",
                           "dns.json");
  const std::string dir = fs::path(bad_rules.path()).parent_path().string();
  const auto check = infdoctor({"rules", "check", dir});
  CHECK(check.exit_code == 3);
  CHECK(check.err.find("dns.json:2: rule dns.x: when:") != std::string::npos);
  CHECK(check.err.find("at position") != std::string::npos);
  const auto good = infdoctor({"rules", "check", std::string(INFDOCTOR_SOURCE_DIR) + "/rules"});
  CHECK(good.exit_code == 0);
  const auto missing = infdoctor({"explain", "/nonexistent/results.json"});
  CHECK(missing.exit_code == 3);
  CHECK(missing.err.rfind("infdoctor: error: cannot read /nonexistent/results.json", 0) == 0);
  test::TempFile garbage("{\"schema\": \"something else\"}", "results.json");
  const auto wrong = infdoctor({"explain", garbage.path()});
  CHECK(wrong.exit_code == 3);
  CHECK(wrong.err.find("not an infdoctor results file") != std::string::npos);
}

}  // namespace infdoctor
