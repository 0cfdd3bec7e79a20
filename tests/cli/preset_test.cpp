// Every preset builds the request its endpoint expects: path, query, the header that carries the
// key, its own headers and body fields, checked on what the fake provider received. The fake
// speaks both flavours, so an Anthropic Messages stream is measured like an OpenAI one.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "cli/endpoint_flags.h"
#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

const char* kScenario = R"({"api_key": "sk-preset-test", "models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 2}}})";

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("each preset builds the right request, checked against the fake provider") {
  auto server = test::start_fake(kScenario);
  for (const auto& preset : api::presets()) {
    CAPTURE(preset.name);
    const std::string env = preset.key_env.empty() ? "INFDOCTOR_TEST_KEY" : preset.key_env;
    ::setenv(env.c_str(), "sk-preset-test", 1);
    api::EndpointSpec flags;
    flags.preset = preset.name;
    flags.base_url = server->base_url();  // the fake stands in for the provider's own host
    if (preset.key_env.empty()) flags.api_key_env = env;  // a keyless server: the key is still sent when given
    auto ep = api::make_endpoint(flags);
    REQUIRE_MESSAGE(ep.ok(), ep.error().message);
    api::ChatRequest chat;
    chat.model = "m";
    chat.prompt = "one two three four";
    chat.max_tokens = 8;
    http::Client client;
    const auto before = server->served().size();
    const auto s = api::run_chat(client, ep.value(), chat);
    REQUIRE_MESSAGE(s.ok, s.error_message);
    const auto served = server->served();
    REQUIRE(served.size() == before + 1);
    const auto& r = served.back();
    const bool anthropic = preset.flavour == api::Flavour::Anthropic;
    std::string path = anthropic ? "POST /v1/messages" : "POST /v1/chat/completions";
    if (!preset.query.empty()) path += "?" + preset.query;
    CHECK(r.request_line == path);
    const char* key_header = preset.auth == api::Auth::XApiKey ? "x-api-key"
                             : preset.auth == api::Auth::ApiKey ? "api-key" : "authorization";
    CHECK(r.key_header == key_header);
    CHECK(r.anthropic_version == (anthropic ? "2023-06-01" : ""));
    CHECK(has(r.body_keys, "max_tokens"));
    CHECK(has(r.body_keys, "messages"));
    CHECK(has(r.body_keys, "stream_options") == !anthropic);
    // Measured alike in both flavours: tokens, usage, the request ID under the flavour's header.
    CHECK(s.content_events == 8);
    CHECK(*s.output_tokens == 8);
    CHECK(s.tokens_from_usage);
    CHECK(*s.prompt_tokens == 4);
    CHECK(s.request_id == r.request_id);
    CHECK(*s.ttft_ms >= 20.0);
    ::unsetenv(env.c_str());
  }
}

TEST_CASE("the Anthropic flavour: non-streamed messages, errors in its own shape, a refused key") {
  auto server = test::start_fake(kScenario);
  ::setenv("ANTHROPIC_API_KEY", "sk-preset-test", 1);
  api::EndpointSpec flags;
  flags.preset = "anthropic";
  flags.base_url = server->base_url();
  auto ep = api::make_endpoint(flags);
  REQUIRE(ep.ok());
  http::Client client;
  api::ChatRequest chat;
  chat.model = "m";
  chat.prompt = "hi there";
  chat.max_tokens = 5;
  chat.stream = false;
  const auto s = api::run_chat(client, ep.value(), chat);
  REQUIRE_MESSAGE(s.ok, s.error_message);
  CHECK(*s.output_tokens == 5);
  CHECK(s.finish_reason == "max_tokens");

  chat.stream = true;
  chat.model = "no-such-model";
  const auto missing = api::run_chat(client, ep.value(), chat);
  CHECK_FALSE(missing.ok);
  CHECK(missing.http_status == 404);
  CHECK(missing.error_message.find("does not exist") != std::string::npos);

  ::setenv("ANTHROPIC_API_KEY", "sk-wrong", 1);
  auto wrong = api::make_endpoint(flags);
  REQUIRE(wrong.ok());
  chat.model = "m";
  const auto refused = api::run_chat(client, wrong.value(), chat);
  CHECK(refused.http_status == 401);
  ::unsetenv("ANTHROPIC_API_KEY");
}

TEST_CASE("preset errors name what is missing") {
  api::EndpointSpec flags;
  flags.preset = "no-such";
  auto bad = api::make_endpoint(flags);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("unknown --preset 'no-such'") != std::string::npos);
  CHECK(bad.error().message.find("azure-openai") != std::string::npos);
  flags.preset = "azure-openai";
  auto azure = api::make_endpoint(flags);
  REQUIRE_FALSE(azure.ok());
  CHECK(azure.error().message.find("has no default base URL: give --base-url https://RESOURCE.openai.azure.com") !=
        std::string::npos);
  // A hosted preset brings its own base URL, ahead of $OPENAI_BASE_URL.
  ::setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1", 1);
  flags.preset = "groq";
  auto groq = api::make_endpoint(flags);
  REQUIRE(groq.ok());
  CHECK(groq->base_url == "https://api.groq.com/openai/v1");
  CHECK(groq->key_env == "GROQ_API_KEY");
  flags.preset.clear();
  auto plain = api::make_endpoint(flags);
  REQUIRE(plain.ok());
  CHECK(plain->base_url == "http://127.0.0.1:9/v1");
  ::unsetenv("OPENAI_BASE_URL");
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("run --preset anthropic: the same checks measure a Messages API, repro.sh speaks its dialect") {
  using namespace std::chrono_literals;
  auto server = test::start_fake(
      R"({"api_key": "sk-ant-canary-9f8e", "models": {"claude": {"overhead_ms": 60, "prefill_ms_per_token": 0.05, "decode_ms_per_token": 6}}})");
  ::setenv("ANTHROPIC_API_KEY", "sk-ant-canary-9f8e", 1);
  const std::string dir = "/tmp/infdoctor-anthropic-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto r = net::run_command({test::infdoctor_bin(), "run", "--preset", "anthropic", "--base-url", server->base_url(),
                             "--model", "claude", "--checks", "transport,baseline,sweep", "--sweep-prompt-tokens", "64,1024",
                             "--sweep-max-tokens", "1,64", "--bundle", dir, "--json", "-"},
                            120s);
  ::unsetenv("ANTHROPIC_API_KEY");
  REQUIRE(r.ok());
  CAPTURE(r->err);
  const auto j = nlohmann::json::parse(r->out);
  CHECK(j["checks"]["baseline"]["status"] == "ok");
  CHECK(j["checks"]["sweep"]["metrics"]["decode_ms_per_token"].get<double>() == doctest::Approx(6).epsilon(0.15));
  CHECK(j["checks"]["sweep"]["metrics"]["prefill_ms_per_token"].get<double>() == doctest::Approx(0.05).epsilon(0.3));
  CHECK(j["checks"]["transport"]["status"] == "ok");  // GET /v1/models with x-api-key
  // The preset's signals: the fake sends request-id on every message, no rate-limit headers.
  REQUIRE(j["preset"]["name"] == "anthropic");
  const int requests = j["preset"]["requests"];
  CHECK(requests >= 5);
  int checked = 0;
  for (const auto& sig : j["preset"]["signals"]) {
    if (sig["signal"] == "request-id") {
      CHECK(sig["seen_in"] == requests);
      ++checked;
    }
    if (sig["signal"] == "anthropic-ratelimit-*") {
      CHECK(sig["seen_in"] == 0);
      ++checked;
    }
  }
  CHECK(checked == 2);  // both signals are in the report
  for (const auto& s : server->served()) {
    CHECK(s.key_header == "x-api-key");
    CHECK(s.request_line.rfind("POST /v1/messages", 0) == 0);
  }
  std::ifstream in(dir + "/repro.sh");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string repro = ss.str();
  CHECK(repro.find("x-api-key: ${ANTHROPIC_API_KEY:-}") != std::string::npos);
  CHECK(repro.find("'anthropic-version: 2023-06-01'") != std::string::npos);
  CHECK(repro.find("/messages\"") != std::string::npos);
  CHECK(repro.find("stream_options") == std::string::npos);
  CHECK(repro.find("sk-ant-canary") == std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace infdoctor
