#pragma once
// A strict reader of Prometheus's text exposition format (version 0.0.4), what an engine's
// /metrics answers: `# HELP` and `# TYPE` lines, other comments, and samples
// `name{label="value",...} value [timestamp]`. Anything else is an error naming its line:
// a scrape is read whole or not at all, never half-guessed.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace infdoctor::prom {

struct Sample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  // in the order written
  double value = 0;                                         // NaN and +-Inf as written

  std::optional<std::string> label(std::string_view name) const;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram, summary, untyped
};

// Bounds on what one scrape may hold; beyond them the scrape is refused.
inline constexpr std::size_t kMaxSamples = 200000;
inline constexpr std::size_t kMaxLabels = 64;

core::Result<Exposition> parse_exposition(std::string_view text);

// The sum over every sample of `name` whose labels include `match` (all of it when empty);
// nothing when no sample has that name.
std::optional<double> sum(const Exposition& e, std::string_view name,
                          const std::vector<std::pair<std::string, std::string>>& match = {});

}  // namespace infdoctor::prom
