#include "prom/exposition.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace infdoctor::prom {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

// Reads a token of the line at `pos`; the reader keeps where it stopped.
class Line {
 public:
  explicit Line(std::string_view text) : s_(text) {}
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_blanks() {
    while (!at_end() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool take(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  // A metric name ([a-zA-Z_:][a-zA-Z0-9_:]*), or a label name without ':'.
  std::optional<std::string> name(bool colons) {
    const std::size_t start = pos_;
    if (at_end() || !name_start(s_[pos_]) || (!colons && s_[pos_] == ':')) return std::nullopt;
    while (!at_end() && name_char(s_[pos_]) && (colons || s_[pos_] != ':')) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  // A quoted label value with the format's three escapes: \\, \" and \n.
  std::optional<std::string> quoted() {
    if (!take('"')) return std::nullopt;
    std::string out;
    while (!at_end()) {
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) return std::nullopt;
      const char e = s_[pos_++];
      if (e == '\\' || e == '"') out += e;
      else if (e == 'n') out += '\n';
      else return std::nullopt;
    }
    return std::nullopt;
  }
  std::string_view word() {
    const std::size_t start = pos_;
    while (!at_end() && s_[pos_] != ' ' && s_[pos_] != '\t') ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string_view rest() const { return at_end() ? std::string_view() : s_.substr(pos_); }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

std::optional<double> number(std::string_view w) {
  if (w == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (w == "+Inf" || w == "Inf") return std::numeric_limits<double>::infinity();
  if (w == "-Inf") return -std::numeric_limits<double>::infinity();
  if (w.empty() || w.size() > 64) return std::nullopt;
  const std::string text(w);
  // strtod would also take "inf", "nan(...)" and hexadecimal: the format has only the above.
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || errno == ERANGE) return std::nullopt;
  return v;
}

bool integer(std::string_view w) {
  if (w.empty() || w.size() > 20) return false;
  std::size_t i = w[0] == '-' ? 1 : 0;
  if (i == w.size()) return false;
  for (; i < w.size(); ++i)
    if (w[i] < '0' || w[i] > '9') return false;
  return true;
}

core::Error error_at(std::size_t line_no, const std::string& what) {
  return core::Error{core::ErrorCode::MalformedStream,
                     "metrics exposition, line " + std::to_string(line_no) + ": " + what, {}};
}

}  // namespace

std::optional<std::string> Sample::label(std::string_view n) const {
  for (const auto& [k, v] : labels)
    if (k == n) return v;
  return std::nullopt;
}

core::Result<Exposition> parse_exposition(std::string_view text) {
  Exposition out;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    Line l(raw);
    l.skip_blanks();
    if (l.at_end()) continue;
    if (l.take('#')) {
      l.skip_blanks();
      const std::string_view keyword = l.word();
      if (keyword != "HELP" && keyword != "TYPE") continue;  // any other comment
      l.skip_blanks();
      const auto family = l.name(true);
      if (!family) return error_at(line_no, "# " + std::string(keyword) + " without a metric name");
      if (keyword == "TYPE") {
        l.skip_blanks();
        const std::string type(l.word());
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" && type != "untyped")
          return error_at(line_no, "unknown type '" + type.substr(0, 32) + "' for " + *family);
        if (out.types.count(*family)) return error_at(line_no, "a second # TYPE for " + *family);
        out.types[*family] = type;
      }
      continue;
    }
    Sample s;
    auto name = l.name(true);
    if (!name) return error_at(line_no, "a sample must start with a metric name");
    s.name = std::move(*name);
    if (l.take('{')) {
      for (;;) {
        l.skip_blanks();
        if (l.take('}')) break;
        auto key = l.name(false);
        if (!key) return error_at(line_no, "a label name expected in " + s.name + "{...}");
        l.skip_blanks();
        if (!l.take('=')) return error_at(line_no, "'=' expected after label " + *key);
        l.skip_blanks();
        auto value = l.quoted();
        if (!value) return error_at(line_no, "label " + *key + " needs a quoted value with only \\\\, \\\" and \\n escaped");
        for (const auto& [k, _] : s.labels)
          if (k == *key) return error_at(line_no, "label " + *key + " given twice");
        if (s.labels.size() >= kMaxLabels) return error_at(line_no, "more than " + std::to_string(kMaxLabels) + " labels");
        s.labels.emplace_back(std::move(*key), std::move(*value));
        l.skip_blanks();
        if (l.take(',')) continue;
        if (l.take('}')) break;
        return error_at(line_no, "',' or '}' expected after label " + s.labels.back().first);
      }
    }
    if (l.peek() != ' ' && l.peek() != '\t') return error_at(line_no, "a blank expected between " + s.name + " and its value");
    l.skip_blanks();
    const std::string_view value = l.word();
    const auto v = number(value);
    if (!v) return error_at(line_no, "'" + std::string(value.substr(0, 32)) + "' is not a number (" + s.name + ")");
    s.value = *v;
    l.skip_blanks();
    if (!l.at_end()) {
      const std::string_view ts = l.word();
      if (!integer(ts)) return error_at(line_no, "'" + std::string(ts.substr(0, 32)) + "' is not a timestamp in milliseconds");
      l.skip_blanks();
      if (!l.at_end()) return error_at(line_no, "text after the timestamp");
    }
    if (out.samples.size() >= kMaxSamples)
      return error_at(line_no, "more than " + std::to_string(kMaxSamples) + " samples");
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::optional<double> sum(const Exposition& e, std::string_view name,
                          const std::vector<std::pair<std::string, std::string>>& match) {
  std::optional<double> total;
  for (const auto& s : e.samples) {
    if (s.name != name) continue;
    bool all = true;
    for (const auto& [k, v] : match) all = all && s.label(k) == v;
    if (!all || std::isnan(s.value)) continue;
    total = total.value_or(0) + s.value;
  }
  return total;
}

}  // namespace infdoctor::prom
