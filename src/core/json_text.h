#pragma once
// The JSON contract's one rule for text: unmeasured or absent is null, never "".
#include <string_view>

#include <nlohmann/json.hpp>

namespace infdoctor::core {

inline nlohmann::json text_or_null(std::string_view s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

}  // namespace infdoctor::core
