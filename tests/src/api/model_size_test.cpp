#include "api/model_size.h"

#include <doctest/doctest.h>

namespace infdoctor::api {

TEST_CASE("model sizes from names: total, active for a mixture of experts, none where the name states none") {
  struct Case {
    const char* name;
    double billions;  // 0: none
  };
  const Case cases[] = {
      {"llama-3.1-70b-instruct", 70},
      {"meta-llama/Llama-3.3-70B-Instruct", 70},
      {"Qwen2.5-0.5B", 0.5},
      {"qwen2.5-1.5b-instruct", 1.5},
      {"SmolLM2-360M", 0.36},
      {"Qwen3-30B-A3B", 3},
      {"gemma-3n-e4b-it", 4},
      {"mistral-7b-v0.1", 7},
      {"gpt-oss-120b", 120},
      {"llama3.1:8b-instruct-q4_K_M", 8},
      {"mixtral-8x7b", 0},
      {"gpt-4o", 0},
      {"gpt-4o-mini", 0},
      {"claude-3-5-haiku-latest", 0},
      {"demo-model", 0},
      {"phi-3-mini-4k-instruct", 0},
      {"bert-base", 0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    const auto got = parameters_from_name(c.name);
    if (c.billions == 0) {
      CHECK_FALSE(got.has_value());
    } else {
      REQUIRE(got.has_value());
      CHECK(*got == doctest::Approx(c.billions));
    }
  }
}

}  // namespace infdoctor::api
