#include "api/model_size.h"

#include <cctype>
#include <vector>

namespace infdoctor::api {
namespace {

struct Size {
  double billions = 0;
  char prefix = 0;  // the letter just before the number ('a' for active, 'x' for experts), or 0
};

// Every "<number><b|m>" that stands alone: not followed by a letter or digit, and preceded by a
// separator, the start, or one letter (the 'a' of "a3b", the 'e' of "e4b", the 'x' of "8x7b").
std::vector<Size> sizes_in(const std::string& name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<Size> out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) continue;
    if (i > 0 && (std::isdigit(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '.')) continue;
    char prefix = 0;
    if (i > 0 && std::isalpha(static_cast<unsigned char>(s[i - 1]))) {
      prefix = s[i - 1];
      if (i > 1 && std::isalnum(static_cast<unsigned char>(s[i - 2])) && prefix != 'x') continue;  // inside a word
    }
    std::size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      ++j;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
    if (j >= s.size() || (s[j] != 'b' && s[j] != 'm')) continue;
    if (j + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[j + 1]))) continue;
    const double v = std::stod(s.substr(i, j - i));
    out.push_back({s[j] == 'm' ? v / 1000.0 : v, prefix});
  }
  return out;
}

}  // namespace

std::optional<double> parameters_from_name(const std::string& model) {
  std::optional<double> total, active;
  bool experts = false;
  for (const auto& sz : sizes_in(model)) {
    if (sz.prefix == 'a' || sz.prefix == 'e') active = sz.billions;
    else if (sz.prefix == 'x') experts = true;
    else total = sz.billions;
  }
  if (active) return active;
  if (experts) return std::nullopt;
  if (total && *total > 0) return total;
  return std::nullopt;
}

}  // namespace infdoctor::api
