#include "fake/scenario.h"

#include <doctest/doctest.h>

namespace infdoctor::fake {

TEST_CASE("a scenario parses with its defaults") {
  auto s = parse_scenario(R"({"models": {"big": {"overhead_ms": 80, "prefill_ms_per_token": 0.5,
      "decode_ms_per_token": 25, "cold_start": {"idle_s": 3, "penalty_ms": 1500}, "slots": 2,
      "faults": [{"kind": "429", "every": 3, "retry_after_s": 2}]}, "small": {}}, "default_max_tokens": 8})",
                          "inline");
  REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message));
  const ModelSpec& big = s->models.at("big");
  CHECK(big.overhead_ms == 80);
  CHECK(big.prefill_ms_per_token == 0.5);
  CHECK(big.cold_idle_s == 3);
  CHECK(big.cold_penalty_ms == 1500);
  CHECK(big.slots == 2);
  REQUIRE(big.faults.size() == 1);
  CHECK(big.faults[0].retry_after_s == 2);
  CHECK(s->models.at("small").tokens_per_event == 1);
  CHECK(s->default_max_tokens == 8);
}

TEST_CASE("scenario errors name the place") {
  struct Case {
    const char* name;
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {"not json", "{", "not valid JSON"},
      {"no models", "{}", "scenario.models: must be an object"},
      {"unknown key", R"({"models": {"m": {"decode_ms": 3}}})", "scenario.models.m.decode_ms: unknown key"},
      {"wrong type", R"({"models": {"m": {"slots": "two"}}})", "scenario.models.m.slots: must be a number"},
      {"out of range", R"({"models": {"m": {"overhead_ms": -1}}})", "scenario.models.m.overhead_ms: must lie in"},
      {"bad fault", R"({"models": {"m": {"faults": [{"kind": "boom", "every": 1}]}}})",
       "scenario.models.m.faults[0].kind: must be one of"},
      {"fault without selector", R"({"models": {"m": {"faults": [{"kind": "503"}]}}})",
       "scenario.models.m.faults[0]: needs `every` or `first`"},
      {"cold start key", R"({"models": {"m": {"cold_start": {"idle": 3}}}})",
       "scenario.models.m.cold_start.idle: unknown key"},
      {"slow window longer than its period", R"({"models": {"m": {"slow_every_s": 5, "slow_for_s": 6}}})",
       "scenario.models.m.slow_for_s: must not exceed slow_every_s"},
      {"bucket without refill", R"({"models": {"m": {"bucket_size": 5}}})",
       "scenario.models.m.bucket_size: needs bucket_per_s"},
      {"tail factor below one", R"({"models": {"m": {"tail_factor": 0.5}}})",
       "scenario.models.m.tail_factor: must lie in"},
      {"a refusal the fake cannot make", R"({"models": {"m": {"rejects": ["max_tokens", "top_p"]}}})",
       "scenario.models.m.rejects[1]: must be \"max_tokens\" or \"temperature\""},
      {"refusals not a list", R"({"models": {"m": {"rejects": "temperature"}}})", "scenario.models.m.rejects: must be an array"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      auto s = parse_scenario(c.json, "f.json");
      REQUIRE_FALSE(s.ok());
      CHECK(s.error().message.find(c.expect) != std::string::npos);
      CHECK(s.error().message.rfind("f.json: ", 0) == 0);
    }
  }
}

}  // namespace infdoctor::fake
