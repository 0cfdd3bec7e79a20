#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "api/openai.h"
#include "run/pacer.h"
#include "support/checks_support.h"
#include "support/fake_process.h"
#include "support/scripted_model.h"
#include "support/seed.h"

namespace infdoctor {

TEST_CASE("sweep: planted 80 ms overhead, 0.5 ms per prompt token and 25 ms per output token come back") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 80, "prefill_ms_per_token": 0.5, "decode_ms_per_token": 25}}})");
  const auto c = test::run_check("sweep", {server->base_url(),
                                           {{"sweep.prompt_tokens", "64,512,1024,2048"},
                                            {"sweep.max_tokens", "1,16,48"},
                                            {"sweep.repeats", "1"}},
                                           "",
                                           {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "prefill_ms_per_token") == doctest::Approx(0.5).epsilon(0.10));
  CHECK(std::abs(test::metric(c, "prefill_overhead_ms") - 80.0) < 15.0);
  CHECK(test::metric(c, "prefill_fit_r2_ratio") > 0.99);
  CHECK(test::metric(c, "max_prompt_tokens_count") == 2048);
  CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(25.0).epsilon(0.05));
  CHECK(test::metric(c, "tpot_p50_ms") == doctest::Approx(25.0).epsilon(0.05));
  CHECK(test::metric(c, "stopped_early_count") == 0);
}

namespace {
// The requests of the sweep's `part` (decode, prefill) it sent with `key` (max_tokens,
// prompt_tokens_asked) at `value`.
int requests_at(const checks::CheckResult& c, const std::string& part, const std::string& key, double value) {
  int n = 0;
  for (const auto& [s, label] : c.requests)
    if (label.is_object() && label.value("sweep", "") == part && label.value(key, 0.0) == value) ++n;
  return n;
}
int decode_requests_at(const checks::CheckResult& c, double max_tokens) { return requests_at(c, "decode", "max_tokens", max_tokens); }
int prefill_requests_at(const checks::CheckResult& c, double prompt_tokens) {
  return requests_at(c, "prefill", "prompt_tokens_asked", prompt_tokens);
}
}  // namespace

TEST_CASE("sweep: a decode size whose first request agrees with the smaller sizes is not repeated, one that does not is") {
  // Paces of 20-40 ms a token: a tenth of one (the bar) is 2-4 ms, above the scheduling noise of a
  // suite running eight tests at once beside a build (at 3-8 ms a token one request in a suite run
  // fell off it; at 10-20 ms one did in a suite that ran while the sanitizer tree was built).
  const double decode = std::uniform_real_distribution<double>(20, 40)(test::rng());
  const std::string model = R"("decode_ms_per_token": )" + std::to_string(decode) + R"(, "overhead_ms": 30, "jitter_ms": 2)";
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,8,24,64"}, {"sweep.repeats", "2"}};
  SUBCASE("steady: the largest size once, the fit as before") {
    auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {)" + model + "}}}");
    const auto c = test::run_check("sweep", {server->base_url(), settings, "", {"Qwen2.5-7B-Instruct", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(decode_requests_at(c, 24) == 2);  // too few before it to know the scatter
    CHECK(decode_requests_at(c, 64) == 1);
    CHECK(c.details["not_repeated"]["max_tokens"] == nlohmann::json({64.0}));
    CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(decode).epsilon(0.05));
  }
  SUBCASE("a stall past 30 tokens: the largest size's first is off the others, so it is repeated") {
    auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {)" + model +
                                   R"(, "faults": [{"kind": "stall", "every": 1, "after_tokens": 30, "stall_ms": 400}]}}})");
    const auto c = test::run_check("sweep", {server->base_url(), settings, "", {"Qwen2.5-7B-Instruct", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(decode_requests_at(c, 64) == 2);
    CHECK_FALSE(c.details.contains("not_repeated"));
  }
}

TEST_CASE("sweep: the run's earlier answers to the decode prompt decide a size's repeat with its own, not the fit") {
  // The baseline's answers to the target go before the sweep in a run, to the same 32-word prompt.
  // Paces of 20-40 ms a token over answers of 24 tokens or more, and 300 ms to the first token: a
  // tenth of each (2-4 ms of a pace averaged over 23 gaps or more, 30 ms) is above a busy suite's
  // scheduling noise.
  const double decode = std::uniform_real_distribution<double>(20, 40)(test::rng());
  const auto model = [](double per_token) {
    return R"({"models": {"Qwen2.5-7B-Instruct": {"decode_ms_per_token": )" + std::to_string(per_token) +
           R"(, "overhead_ms": 300, "jitter_ms": 2}}})";
  };
  const checks::Models models{"Qwen2.5-7B-Instruct", ""};
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,24,64"}, {"sweep.repeats", "2"}};
  const auto baseline_of = [&](const std::string& scenario, const std::string& prompt_tokens) {
    auto server = test::start_fake(scenario);
    const std::vector<std::pair<std::string, std::string>> five = {
        {"baseline.samples", "5"}, {"baseline.max_tokens", "32"}, {"baseline.prompt_tokens", prompt_tokens}};
    const auto b = test::run_check("baseline", test::CheckSetup{server->base_url(), five, "", models});
    REQUIRE_MESSAGE(b.status == checks::CheckStatus::Ok, b.reason);
    return b;
  };
  auto server = test::start_fake(model(decode));
  const auto sweep_after = [&](checks::CheckResult baseline) {
    test::CheckSetup setup{server->base_url(), settings, "", models};
    setup.earlier = {std::move(baseline)};
    const auto c = test::run_check("sweep", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    return c;
  };
  SUBCASE("the same pace: every size once, the fit as before") {
    const auto c = sweep_after(baseline_of(model(decode), "32"));
    for (const double mt : {1.0, 24.0, 64.0}) {
      CAPTURE(mt);
      CHECK(decode_requests_at(c, mt) == 1);
    }
    CHECK(c.details["not_repeated"]["max_tokens"] == nlohmann::json({1.0, 24.0, 64.0}));
    CHECK(c.details["repeats_read_earlier_answers"] == 5);
    CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(decode).epsilon(0.05));
  }
  SUBCASE("answers at twice the pace: the sizes with a pace are repeated, a single token (no pace) is not") {
    const auto c = sweep_after(baseline_of(model(2 * decode), "32"));
    CHECK(decode_requests_at(c, 1) == 1);
    for (const double mt : {24.0, 64.0}) {
      CAPTURE(mt);
      CHECK(decode_requests_at(c, mt) == 2);
    }
    CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(decode).epsilon(0.05));
  }
  SUBCASE("a tokenizer of two tokens a word: the answers are read by the tokens asked, not the words sent") {
    // The run sizes a 32-token prompt to 16 words once it has learnt the model's tokens a word.
    const std::string two = R"({"models": {"Qwen2.5-7B-Instruct": {"decode_ms_per_token": )" + std::to_string(decode) +
                            R"(, "overhead_ms": 300, "jitter_ms": 2, "prompt_tokens_per_word": 2}}})";
    auto server2 = test::start_fake(two);
    const auto b = baseline_of(two, "32");
    int fewer_words = 0;
    for (const auto& [s, label] : b.requests) fewer_words += s.prompt_words < 32 ? 1 : 0;
    CHECK(fewer_words >= 4);
    test::CheckSetup setup{server2->base_url(), settings, "", models};
    setup.earlier = {b};
    const auto c = test::run_check("sweep", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(c.details["repeats_read_earlier_answers"] == 5);
  }
  SUBCASE("answers to another prompt are not read: the smaller sizes are repeated as without them") {
    const auto c = sweep_after(baseline_of(model(decode), "64"));
    CHECK_FALSE(c.details.contains("repeats_read_earlier_answers"));
    CHECK(decode_requests_at(c, 1) == 2);
    CHECK(decode_requests_at(c, 24) == 2);
  }
}

TEST_CASE("sweep: a prompt size on the line of the smaller ones is not repeated, one off it is") {
  // Prefill of 0.5-1 ms a token: a tenth of 1,024 tokens' prediction (the bar) is 54-105 ms. The
  // line through 64 and 256 tokens reaches 1,024 at four and a half times their scatter; at 0.2 ms
  // a token the bar was 23 ms, and in a suite run of eight tests at once one first request at
  // 1,024 fell off it and was repeated (seed 2756926760).
  const double prefill = std::uniform_real_distribution<double>(0.5, 1.0)(test::rng());
  const std::string model = R"("prefill_ms_per_token": )" + std::to_string(prefill) +
                            R"(, "decode_ms_per_token": 4, "overhead_ms": 30, "jitter_ms": 2)";
  const std::vector<std::pair<std::string, std::string>> settings = {
      {"sweep.prompt_tokens", "64,256,1024,2048"}, {"sweep.max_tokens", "1"}, {"sweep.repeats", "2"}};
  SUBCASE("a line: the two larger sizes once each, the fit as before") {
    auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {)" + model + "}}}");
    const auto c = test::run_check("sweep", {server->base_url(), settings, "", {"Qwen2.5-7B-Instruct", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(prefill_requests_at(c, 256) == 2);  // one size before it: no line yet
    CHECK(prefill_requests_at(c, 1024) == 1);
    CHECK(prefill_requests_at(c, 2048) == 1);
    CHECK(c.details["not_repeated"]["prompt_tokens"] == nlohmann::json({1024.0, 2048.0}));
    CHECK(test::metric(c, "prefill_ms_per_token") == doctest::Approx(prefill).epsilon(0.10));
  }
  SUBCASE("prefill growing with the prompt: the largest size's first is above the line, so it is repeated") {
    // 0.2 ms a token per 1,000 tokens more: 840 ms at 2,048 tokens, 210 at 1,024, 13 at 256. The
    // line the smaller sizes draw (pulled up by 1,024's points) misses 2,048's first token by
    // about 600 ms, where a tenth of its prediction is under 250.
    auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {)" + model +
                                   R"(, "prefill_growth_ms_per_1k_tokens": 0.2}}})");
    const auto c = test::run_check("sweep", {server->base_url(), settings, "", {"Qwen2.5-7B-Instruct", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(prefill_requests_at(c, 2048) == 2);
  }
}

TEST_CASE("sweep: responses that stop before max_tokens are counted, and the larger sizes that would cap the same answer are not sent") {
  auto server = test::start_fake(R"({"models": {"m": {"decode_ms_per_token": 2, "output_tokens": 10}}})");
  const auto c = test::run_check("sweep", {server->base_url(),
                                           {{"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,8,32,64"},
                                            {"sweep.repeats", "1"}},
                                           "",
                                           {"m", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  CHECK(test::metric(c, "stopped_early_count") == 1);
  CHECK(test::metric(c, "max_output_tokens_count") == 10);
  CHECK(decode_requests_at(c, 32) == 1);
  CHECK(decode_requests_at(c, 64) == 0);
  CHECK(c.details["not_sent_longer"]["max_tokens"] == nlohmann::json::array({64.0}));
}

TEST_CASE("sweep: answers that end by themselves, at lengths and speeds drawn at random, stop the decode sizes there and the fit holds") {
  std::mt19937 rng(test::seed());
  for (int draw = 0; draw < 4; ++draw) {
    const double per_token = std::uniform_real_distribution<double>(4, 12)(rng);
    const int length = std::uniform_int_distribution<int>(20, 100)(rng);
    CAPTURE(per_token);
    CAPTURE(length);
    auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "decode_ms_per_token": )" +
                                   std::to_string(per_token) + R"(, "output_tokens": )" + std::to_string(length) + "}}}");
    const auto c = test::run_check("sweep", {server->base_url(),
                                             {{"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,16,128,512"}},
                                             "",
                                             {"m", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    // 128 is past every drawn length: its answers end by themselves, and 512 is not sent.
    CHECK(decode_requests_at(c, 16) >= 1);
    CHECK(decode_requests_at(c, 128) >= 1);
    CHECK(decode_requests_at(c, 512) == 0);
    CHECK(test::metric(c, "max_output_tokens_count") == length);
    CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(per_token).epsilon(0.08));
  }
}

TEST_CASE("sweep: past the reference request's output, a steady pace is not sent again, and a pace that slows with the answer is") {
  // The reference request answers in 32 tokens; the decode requests carry a 32-token prompt. Each
  // growth follows from what a token reads, at a pace and overhead drawn at random:
  // - steady, as an engine with a KV cache: each token also reads the earlier tokens' keys and
  //   values, at most 4 % of the pace per 1,000 tokens (rules/README.md, decode.context_slowdown's
  //   bar): the pace at 32 keeps the pace at 8, so 128 would only extend the line;
  // - slowing, as an engine that recomputes the whole context for each token (no KV cache): each
  //   token costs in proportion to its context, 1,000 / 32 paces per 1,000 tokens generated, and
  //   at 32 tokens the pace is 0.375 paces above the pace at 8, past the check's tenth: 128 goes out.
  std::mt19937 rng(test::seed());
  for (int draw = 0; draw < 2; ++draw) {
    const double per_token = std::uniform_real_distribution<double>(8, 16)(rng);
    const double overhead = std::uniform_real_distribution<double>(20, 200)(rng);
    CAPTURE(per_token);
    CAPTURE(overhead);
    const auto fake = [&](double growth_per_1k) {
      return test::start_fake(R"({"models": {"m": {"overhead_ms": )" + std::to_string(overhead) + R"(, "decode_ms_per_token": )" +
                              std::to_string(per_token) + R"(, "decode_ms_per_1k_output": )" + std::to_string(growth_per_1k) +
                              "}}}");
    };
    const std::vector<std::pair<std::string, std::string>> sets = {{"sweep.prompt_tokens", "16"},
                                                                   {"sweep.max_tokens", "1,8,32,128"},
                                                                   {"sweep.decode_prompt_tokens", "32"},
                                                                   {"sweep.workload_output_tokens", "32"}};
    auto steady = fake(0.04 * per_token);
    const auto c = test::run_check("sweep", {steady->base_url(), sets, "", {"m", ""}});
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(decode_requests_at(c, 32) >= 1);
    CHECK(decode_requests_at(c, 128) == 0);
    CHECK(c.details["not_sent_beyond"]["max_tokens"] == nlohmann::json::array({128.0}));
    CHECK(test::metric(c, "decode_ms_per_token") == doctest::Approx(per_token).epsilon(0.08));

    auto slowing = fake(per_token * 1000.0 / 32);
    const auto d = test::run_check("sweep", {slowing->base_url(), sets, "", {"m", ""}});
    REQUIRE_MESSAGE(d.status == checks::CheckStatus::Ok, d.reason);
    CHECK(decode_requests_at(d, 128) >= 1);
    CHECK_FALSE(d.details.contains("not_sent_beyond"));
  }
}

TEST_CASE("sweep: one slow answer at the reference request's output is the tail, and the larger sizes stay unsent") {
  // A steady pace drawn at random, and the first answer at the reference output (32 tokens) 2-5
  // times slower, as a heavy tail makes one in fifty: that size is sent again, and its other
  // answer keeps the pace. The median of the two would be their mean and read as a pace that
  // changed; the fastest of them is what the length allows.
  std::mt19937 rng(test::seed());
  for (int draw = 0; draw < 8; ++draw) {
    const double per_token = std::uniform_real_distribution<double>(8, 80)(rng);
    const double factor = std::uniform_real_distribution<double>(2, 5)(rng);
    CAPTURE(per_token);
    CAPTURE(factor);
    test::FakeClock clock;
    bool slowed = false;
    test::ScriptedModel model(clock, [&](const api::ChatRequest& r, core::SteadyTime) {
      const bool tail = r.max_tokens == 32 && !slowed;
      slowed = slowed || tail;
      const double pace = per_token * (tail ? factor : 1.0), ttft = 60 + 0.02 * r.prompt_tokens_wanted;
      auto s = test::answered(ttft, ttft + pace * (r.max_tokens - 1));
      s.output_tokens = r.max_tokens;
      s.output_tokens_source = api::kTokensFromUsage;
      s.finish_reason = "length";
      if (r.max_tokens > 1) s.tpot_ms = pace;
      return s;
    });
    test::CheckSetup setup{"http://127.0.0.1:9/v1",
                           {{"sweep.prompt_tokens", "16"}, {"sweep.max_tokens", "1,8,32,128"},
                            {"sweep.workload_output_tokens", "32"}},
                           "",
                           {"m", ""}};
    setup.ports.model = &model;
    setup.ports.clock = &clock;
    const auto c = test::run_check("sweep", setup);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    CHECK(decode_requests_at(c, 32) == 2);
    CHECK(decode_requests_at(c, 128) == 0);
    CHECK(c.details["not_sent_beyond"]["max_tokens"] == nlohmann::json::array({128.0}));
  }
}

TEST_CASE("sweep: --max-requests is never exceeded") {
  auto server = test::start_fake(R"({"models": {"m": {}}})");
  test::CheckSetup setup{server->base_url(),
                         {{"sweep.prompt_tokens", "16,32,64"}, {"sweep.max_tokens", "1,2,4"}, {"sweep.repeats", "2"}},
                         "",
                         {"m", ""},
                         5};
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("sweep", setup, &pacer);
  CHECK(c.status == checks::CheckStatus::Error);
  CHECK(c.error == "budget_exhausted");
  CHECK(server->served().size() == 5);
  CHECK(pacer->tally().spent == 5);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("sweep: an engine that caches prompt prefixes does not fool the prefill fit (random slopes and blocks)") {
  // The sweep's prompts are each a prefix of the next; on an engine with a prefix cache (vLLM's
  // blocks, llama.cpp's cache_prompt) the longer ones would be served mostly from cache and the
  // slope would read low. Every prompt of a run is unique from its first word, so nothing is cached.
  std::mt19937_64 rng(1515);
  std::uniform_real_distribution<double> u(0, 1);
  for (int draw = 0; draw < 3; ++draw) {
    const double slope = 0.1 + u(rng) * 0.6;                 // ms per prompt token
    const int block = 1 << (3 + static_cast<int>(u(rng) * 3));  // 8, 16 or 32 tokens
    auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "prefill_ms_per_token": )" +
                                   std::to_string(slope) + R"(, "decode_ms_per_token": 2, "prefix_cache_block_tokens": )" +
                                   std::to_string(block) + "}}}");
    run::Pacer* pacer = nullptr;
    const auto c = test::run_check("sweep", {server->base_url(),
                                             {{"sweep.prompt_tokens", "64,512,1024,1536"},
                                              {"sweep.max_tokens", "1,16"},
                                              {"sweep.repeats", "2"}},
                                             "",
                                             {"m", ""}},
                                   &pacer);
    REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
    INFO("planted " << slope << " ms/token, block " << block);
    CHECK(test::metric(c, "prefill_ms_per_token") == doctest::Approx(slope).epsilon(0.10));
    CHECK(pacer->tally().cached_prompts == 0);  // nothing was served from the cache
    for (const auto& [s, _] : c.requests) CHECK(s.cached_tokens.value_or(-1) == 0);  // the fake reports 0 cached
  }
}

TEST_CASE("the prompt nonce: one unique first word per request, the length in words kept") {
  const std::string prompt = api::synthetic_prompt(40);
  std::set<std::string> firsts;
  for (std::uint64_t n = 1; n <= 500; ++n) {
    const std::string p = run::with_nonce(prompt, 0xabcdef12, n);
    CHECK(std::count(p.begin(), p.end(), ' ') == std::count(prompt.begin(), prompt.end(), ' '));
    CHECK(p.substr(p.find(' ')) == prompt.substr(prompt.find(' ')));
    firsts.insert(p.substr(0, p.find(' ')));
  }
  CHECK(firsts.size() == 500);
  // No two share even their first characters more often than chance: a tokenizer that spells the
  // word out finds no common prefix to cache (the seed's hex once led every word of a run).
  std::set<std::string> heads;
  for (const auto& w : firsts) heads.insert(w.substr(0, 3));  // "n" and two hex digits: 256 kinds
  CHECK(heads.size() > 200);
  CHECK(run::with_nonce(" padded", 1, 1).find(" padded") != std::string::npos);  // not a word first: nonce in front
  CHECK(run::with_nonce("", 1, 1).size() > 1);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("sweep: a prompt longer than the model's context is a recorded limit, not a failed request") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 10, "prefill_ms_per_token": 0.05, "decode_ms_per_token": 1, "context_tokens": 4096}}})");
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("sweep", {server->base_url(),
                                           {{"sweep.prompt_tokens", "64,512,2048,8192,16384"},
                                            {"sweep.max_tokens", "1,16"},
                                            {"sweep.repeats", "1"}},
                                           "",
                                           {"m", ""}},
                                 &pacer);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "refused_prompt_tokens_count") == 8192);
  CHECK(test::metric(c, "max_prompt_tokens_count") == 2048);
  CHECK(test::metric(c, "failures_count") == 0);
  CHECK(pacer->tally().failures.empty());
  for (const auto& s : server->served()) CHECK(s.body_bytes < 100000);  // the 16384-token prompt was never sent
}

TEST_CASE("the shared prefix: the same for one key and no other, the request's own word after it, the length kept") {
  const std::string prompt = api::synthetic_prompt(80);
  const auto words = [](const std::string& p) { return std::count(p.begin(), p.end(), ' '); };
  const auto head = [](const std::string& p, int n) {  // the first n words
    std::size_t at = 0;
    for (int i = 0; i < n; ++i) at = p.find(' ', at + 1);
    return p.substr(0, at);
  };
  const std::string a1 = run::with_shared_prefix(prompt, 0xabcdef12, 1, 64, 1);
  const std::string a2 = run::with_shared_prefix(prompt, 0xabcdef12, 2, 64, 1);
  const std::string b3 = run::with_shared_prefix(prompt, 0xabcdef12, 3, 64, 2);
  const std::string other_run = run::with_shared_prefix(prompt, 0x12345678, 4, 64, 1);
  CHECK(words(a1) == words(prompt));
  CHECK(head(a1, 64) == head(a2, 64));             // one key: one prefix
  CHECK(head(a1, 65) != head(a2, 65));             // then each request's own word
  CHECK(a1.substr(0, 3) != b3.substr(0, 3));       // another key differs from its first word on
  CHECK(a1.substr(0, 3) != other_run.substr(0, 3));  // another run's prefix too
  CHECK(head(a1, 64).substr(a1.find(' ')) == head(prompt, 64).substr(prompt.find(' ')));  // the words after the first kept
  // Its words are not a nonce of the run's requests: those replace a prompt's first word with another seed's word.
  CHECK(a1.substr(0, a1.find(' ')) != run::with_nonce(prompt, 0xabcdef12, 1).substr(0, a1.find(' ')));
}

}  // namespace infdoctor
