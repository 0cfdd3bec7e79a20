#pragma once
// Digests: SHA-256 in hex (the bundle's manifest checks its files by it, and a replayed body is
// named by it where the body itself must not go), and a fast mix for drawing words.
#include <cstdint>
#include <string>

namespace infdoctor::core {

std::string sha256_hex(const std::string& data);

// splitmix64's mixing of a 64-bit state into a well-spread value (a state advanced by
// kGoldenGamma per step): the synthetic prompt's words and the requests' nonces are drawn by it.
inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace infdoctor::core
