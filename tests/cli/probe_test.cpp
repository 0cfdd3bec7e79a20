// `infdoctor probe` as a user runs it: the real binary against the infdoctor-fake program.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

const char* kCanary = "sk-canary-7f3a9c1e5b2d4f608a1c3e5g7i9k";

net::CommandResult probe(std::vector<std::string> args, const std::string& key_env = "") {
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (!key_env.empty()) argv.push_back("INFDOCTOR_TEST_KEY=" + key_env);
  argv.push_back(test::infdoctor_bin());
  argv.push_back("probe");
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, 30s);
  REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
  CHECK_FALSE(r->timed_out);
  return r.value();
}

}  // namespace

TEST_CASE("probe --body: the user's own body goes as it is, its model or --model's, and its prompt is counted as sent") {
  test::FakeProcess fake(R"({"models": {"gpt-4o": {"overhead_ms": 40, "prefill_ms_per_token": 0.5, "decode_ms_per_token": 5},
                              "gpt-4o-mini": {"overhead_ms": 20, "decode_ms_per_token": 2}}})");
  REQUIRE(fake.ok());
  std::string system;
  for (int i = 0; i < 400; ++i) system += "rule" + std::to_string(i % 20) + " ";
  const nlohmann::json body = {{"model", "gpt-4o"},
                               {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", "why so slow"}}}},
                               {"max_tokens", 12}};
  test::TempFile file(body.dump() + "\n{\"messages\": []}\n", "body.jsonl");  // the first of JSON Lines
  auto r = probe({"--base-url", fake.base_url(), "--body", file.path(), "--json"});
  CHECK(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["prompt_tokens"] == 403);
  CHECK(j["output_tokens"] == 12);
  CHECK(j["ttft_ms"].get<double>() == doctest::Approx(40 + 0.5 * 403).epsilon(0.15));  // the prefill of the body's prompt
  r = probe({"--base-url", fake.base_url(), "--body", file.path(), "--model", "gpt-4o-mini", "--json"});
  CHECK(r.exit_code == 0);
  j = nlohmann::json::parse(r.out);
  CHECK(j["ttft_ms"].get<double>() < 40);  // the small model answered
  test::TempFile bad("{\"prompt\": \"a completions request\"}", "bad.json");
  r = probe({"--base-url", fake.base_url(), "--body", bad.path()});
  CHECK(r.exit_code == 64);
  CHECK(r.err.find("its first body is not a chat or messages request") != std::string::npos);
}

TEST_CASE("probe --json against the fake provider, with a key the server requires") {
  test::FakeProcess fake(std::string(R"({"api_key": ")") + kCanary +
                         R"(", "models": {"m": {"overhead_ms": 120, "decode_ms_per_token": 10, "timing_headers": true}}})");
  REQUIRE(fake.ok());
  const auto r = probe({"--base-url", fake.base_url(), "--model", "m", "--max-tokens", "16", "--api-key-env",
                        "INFDOCTOR_TEST_KEY", "--json"},
                       kCanary);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["http_status"] == 200);
  CHECK(j["output_tokens"] == 16);
  CHECK(j["ttft_ms"].get<double>() == doctest::Approx(120).epsilon(0.1));
  CHECK(j["itl_p50_ms"].get<double>() == doctest::Approx(10).epsilon(0.2));
  CHECK(j["output_tokens_per_s"].get<double>() == doctest::Approx(100).epsilon(0.2));
  CHECK(j["request_id"].get<std::string>().rfind("req-", 0) == 0);
  for (const char* key : {"http_status", "request_id", "remote_ip", "dns_ms", "connect_ms", "tls_ms", "ttfb_ms",
                          "ttft_ms", "total_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms", "output_tokens",
                          "prompt_tokens", "output_tokens_per_s"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["tls_ms"].is_null());  // plain HTTP: not measured, not zero
  CHECK(r.out.find(kCanary) == std::string::npos);
  CHECK(r.err.find(kCanary) == std::string::npos);
}

TEST_CASE("probe's table over TLS with --cacert") {
  test::FakeProcess fake(R"({"models": {"m": {"overhead_ms": 50, "decode_ms_per_token": 5}}})", /*tls=*/true);
  REQUIRE(fake.ok());
  const auto r = probe({"--base-url", fake.base_url(), "--model", "m", "--cacert", test::ca_pem()});
  CHECK(r.exit_code == 0);
  for (const char* want : {"TLS handshake", "First token", "Generation", "inter-token", "request id req-", "ttft"})
    CHECK_MESSAGE(r.out.find(want) != std::string::npos, want);
  CHECK(r.err.empty());
}

TEST_CASE("probe failures: one line naming the cause and, where known, the fix, exit code 3 or 64") {
  test::FakeProcess fake(R"({"models": {"m": {}}})");
  REQUIRE(fake.ok());
  struct Case {
    const char* name;
    std::vector<std::string> args;
    const char* expect;
    int exit_code;  // 3 could not run, 64 a wrong command line
  };
  const std::vector<Case> cases = {
      {"unknown model", {"--base-url", fake.base_url(), "--model", "nope"}, "does not know model 'nope' (HTTP 404: The model `nope` does not exist): check --model", 3},
      {"refused", {"--base-url", "http://127.0.0.1:1/v1", "--model", "m"}, "nothing accepts connections at http://127.0.0.1:1/v1 (could not connect", 3},
      {"no URL", {"--base-url", "", "--model", "m"}, "no endpoint", 64},
      {"bad scheme", {"--base-url", "ftp://x/v1", "--model", "m"}, "--base-url must start with", 64},
      {"no model", {"--base-url", fake.base_url()}, "--model is required", 64},
      {"TLS to a plain server", {"--base-url", "https" + fake.base_url().substr(4), "--model", "m"}, "closed the connection during the TLS handshake", 3},
  };
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      const auto r = probe(c.args, kCanary);
      CHECK(r.exit_code == c.exit_code);
      CHECK_MESSAGE(r.err.find(c.expect) != std::string::npos, r.err);
      CHECK(r.err.rfind("infdoctor: error: ", 0) == 0);
      CHECK(r.err.find(kCanary) == std::string::npos);
    }
  }
}

TEST_CASE("probe --help teaches") {
  const auto r = probe({"--help"});
  CHECK(r.exit_code == 0);
  for (const char* want : {"--base-url", "--model", "--prompt-tokens", "--max-tokens", "--cacert", "--insecure",
                           "--json", "--api-key-env", "--timeout"})
    CHECK_MESSAGE(r.out.find(want) != std::string::npos, want);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("probe adapts to a reasoning model that refuses max_tokens and temperature, as run does") {
  test::FakeProcess fake(R"({"models": {"o4-mini": {"overhead_ms": 40, "decode_ms_per_token": 4, "rejects": ["max_tokens", "temperature"]}}})");
  REQUIRE(fake.ok());
  const auto r = probe({"--base-url", fake.base_url(), "--model", "o4-mini", "--max-tokens", "12", "--json"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["http_status"] == 200);
  CHECK(j["output_tokens"] == 12);  // max_completion_tokens carried the same limit
  CHECK(r.err.find("the endpoint refused max_tokens: renamed to max_completion_tokens") != std::string::npos);
}

}  // namespace infdoctor
