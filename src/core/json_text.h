#pragma once
// The JSON contract's one rule for text: unmeasured or absent is null, never ""; and reading an
// integer from a file someone else may have written.
#include <cmath>
#include <limits>
#include <string_view>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace infdoctor::core {

inline nlohmann::json text_or_null(std::string_view s) {
  return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s);
}

// j.get<T>() for an integer T, refusing (nlohmann's type_error, as a wrong type is) a number that
// T cannot hold: nlohmann converts a float such as 1e300 unchecked, which is undefined behaviour.
template <class T>
T get_checked(const nlohmann::json& j) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (j.is_number_float()) {
      // T holds [-2^digits, 2^digits) when signed, [0, 2^digits) when not; both ends are exact doubles.
      const double d = j.get<double>(), end = std::ldexp(1.0, std::numeric_limits<T>::digits);
      if (!(d >= (std::is_signed_v<T> ? -end : 0.0) && d < end))
        throw nlohmann::json::type_error::create(302, "number out of range for an integer", &j);
    }
  }
  return j.get<T>();
}

}  // namespace infdoctor::core
