// A test's random draws, reproducible: the seed comes from INFDOCTOR_TEST_SEED when it is set and
// from std::random_device otherwise, and is printed once to stderr, so a failing draw can be run again.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

namespace infdoctor::test {

inline std::uint32_t seed() {
  static const std::uint32_t s = [] {
    const char* given = std::getenv("INFDOCTOR_TEST_SEED");
    const std::uint32_t v = given && *given ? static_cast<std::uint32_t>(std::strtoul(given, nullptr, 10))
                                            : std::random_device{}();
    std::fprintf(stderr, "test draws: seed %u (INFDOCTOR_TEST_SEED=%u repeats them)\n", v, v);
    return v;
  }();
  return s;
}

// One generator for a whole test program, seeded as above.
inline std::mt19937& rng() {
  static std::mt19937 r(seed());
  return r;
}

}  // namespace infdoctor::test
