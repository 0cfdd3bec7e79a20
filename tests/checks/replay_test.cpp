#include <doctest/doctest.h>

#include <random>

#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

// `n` words of a system prompt, the same every time.
std::string words(int n, const std::string& word) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? " " : "") + word + std::to_string(i % 97);
  return out;
}

nlohmann::json chat_body(const std::string& system, const std::string& user, int max_tokens) {
  return {{"model", "gpt-4o-mini"},
          {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", user}}}},
          {"max_tokens", max_tokens}};
}

std::string fake_with_cache(double prefill, bool cache) {
  return R"({"models": {"gpt-4o-mini": {"overhead_ms": 30, "prefill_ms_per_token": )" + std::to_string(prefill) +
         R"(, "decode_ms_per_token": 3, "output_tokens": 40)" + (cache ? R"(, "prefix_cache_block_tokens": 16)" : "") +
         "}}}";
}

}  // namespace

TEST_CASE("replay: a body with a long system prompt, as planted: its prompt, its stable prefix and what the cache saves on it") {
  std::mt19937 rng(test::seed());
  const double prefill = std::uniform_real_distribution<double>(0.1, 0.4)(rng);
  const int system = std::uniform_int_distribution<int>(3000, 8000)(rng);
  MESSAGE("planted: a system prompt of " << system << " words, 200 of the user's, prefill " << prefill << " ms a token");
  auto server = test::start_fake(fake_with_cache(prefill, true));
  const std::string body = chat_body(words(system, "rule"), words(200, "ask"), 512).dump();
  const auto c = test::run_check("replay", test::CheckSetup{server->base_url(), {{"replay.body", body}}, "", {"", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "bodies_count") == 1);
  CHECK(test::metric(c, "samples_count") == 3);
  CHECK(test::metric(c, "prompt_tokens_count") == doctest::Approx(system + 200).epsilon(0.01));
  CHECK(test::metric(c, "stable_prefix_tokens_count") == doctest::Approx(system).epsilon(0.05));
  CHECK(test::metric(c, "cached_tokens_p50_count") == doctest::Approx(system).epsilon(0.01));  // whole blocks of it
  CHECK(test::metric(c, "prefix_saved_ms") == doctest::Approx(prefill * system).epsilon(0.1));
  CHECK(test::metric(c, "max_tokens_count") == 512);
  CHECK(test::metric(c, "output_tokens_p50_count") == 40);
  CHECK(test::metric(c, "bytes_per_token_ratio") > 4);
  // The body itself is nowhere in what the check keeps: its hash names it.
  const std::string kept = checks::to_json(c).dump();
  CHECK(kept.find("ask17") == std::string::npos);
  CHECK(kept.find("body_sha256") != std::string::npos);
  MESSAGE("found: prefix " << test::metric(c, "stable_prefix_tokens_count") << " tokens, the cache saves "
                           << test::metric(c, "prefix_saved_ms") << " ms on it (planted " << prefill * system << ")");
}

TEST_CASE("replay: several bodies as JSON Lines share the messages they all begin with, and no cache saves nothing") {
  auto server = test::start_fake(fake_with_cache(0.2, false));
  const std::string system = words(2000, "rule");
  std::string lines;
  for (const char* q : {"first", "second", "third"}) lines += chat_body(system, words(100, q), 64).dump() + "\n";
  const auto c = test::run_check("replay", test::CheckSetup{server->base_url(),
                                                            {{"replay.body", lines}, {"replay.repeats", "2"}},
                                                            "",
                                                            {"gpt-4o-mini", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "bodies_count") == 3);
  CHECK(test::metric(c, "samples_count") == 6);
  CHECK(test::metric(c, "stable_prefix_tokens_count") == doctest::Approx(2000).epsilon(0.05));
  CHECK(test::metric(c, "cached_tokens_p50_count") == 0);
  CHECK(c.metrics.count("prefix_saved_ms") == 0);
}

TEST_CASE("replay: a body that is not JSON, or not a chat, is named by its line before anything is sent") {
  checks::Options o;
  o.set("replay.body", "{\"messages\": []}\nnot json\n{\"prompt\": \"completions\"}\n");
  for (const auto& e : checks::registry())
    if (e.id == "replay") (void)e.make(o);
  REQUIRE(o.errors().size() == 2);
  // Odd shapes in a body that is a chat are its to have: read without a throw, planned as sent.
  checks::Options odd;
  odd.set("replay.body", R"({"messages": ["text", {"role": 7, "content": null}, {"role": "user", "content": [1, {"text": "hi"}]}],
                             "max_tokens": null, "tools": [{"type": "function"}]})");
  for (const auto& e : checks::registry())
    if (e.id == "replay") {
      const auto check = e.make(odd);
      CHECK(odd.errors().empty());
      REQUIRE(check->plan().size() == 1);
      CHECK(check->plan()[0].max_tokens == 0);
    }
  CHECK(o.errors()[0] == "replay.body: line 2 is not a JSON object (a body is one OpenAI chat or Anthropic messages request)");
  CHECK(o.errors()[1] == "replay.body: body 2 has no \"messages\" list: it is not a chat or messages request");
}

}  // namespace infdoctor
