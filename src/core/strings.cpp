#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace infdoctor::core {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    if (end > start) out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void appendf(std::string& out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n >= 0 && static_cast<std::size_t>(n) < sizeof buf) {
    out.append(buf, static_cast<std::size_t>(n));
  } else if (n > 0) {
    std::string big(static_cast<std::size_t>(n) + 1, '\0');
    std::vsnprintf(big.data(), big.size(), fmt, again);
    big.resize(static_cast<std::size_t>(n));
    out += big;
  }
  va_end(again);
}

std::string fill_placeholders(const std::string& text, const std::function<std::string(const std::string&)>& value) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto open = text.find('{', i);
    const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
    if (close == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    out += value(text.substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
}

std::string fmt(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string count_of(double n, const std::string& noun) {
  char buf[32];
  const double whole = std::round(n);
  std::snprintf(buf, sizeof buf, std::abs(n - whole) < 0.05 || std::abs(n) >= 100 ? "%.0f" : "%.1f", n);
  return std::string(buf) + " " + noun + (std::string(buf) == "1" ? "" : "s");
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  return join_by(items, sep, [](const std::string& s) -> const std::string& { return s; });
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates, std::size_t max_edits) {
  std::string best;
  std::size_t best_d = max_edits + 1;
  for (const auto& c : candidates) {
    std::vector<std::size_t> row(c.size() + 1);  // Levenshtein distance, one row at a time
    for (std::size_t j = 0; j <= c.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= word.size(); ++i) {
      std::size_t diag = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= c.size(); ++j) {
        const std::size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (word[i - 1] == c[j - 1] ? 0 : 1)});
        diag = up;
      }
    }
    if (row[c.size()] < best_d) {
      best_d = row[c.size()];
      best = c;
    }
  }
  return best;
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace infdoctor::core
