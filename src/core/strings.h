#pragma once
// Joining and splitting the comma lists that flags, options and messages are made of.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace infdoctor::core {

// The items of `text` between `sep`, empty items dropped: "a,,b" -> {"a", "b"}.
std::vector<std::string> split(std::string_view text, char sep = ',');

// printf into the end of `out`.
void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// `text` with every {name} replaced by value(name); text after an unclosed '{' stays as it is.
std::string fill_placeholders(const std::string& text, const std::function<std::string(const std::string&)>& value);
// A count with its noun, plural unless it rounds to one: "1 stream", "3 streams", "2.5 streams",
// whole from 100 on ("12346 tokens").
std::string count_of(double n, const std::string& noun);
// One number through a printf format: fmt("%.1f ms", 12.34) is "12.3 ms".
std::string fmt(const char* format, double v);

// The candidate nearest to `word` within `max_edits` edits (insertions, deletions, substitutions),
// for "did you mean"; empty when none is that near.
std::string closest(const std::string& word, const std::vector<std::string>& candidates, std::size_t max_edits = 2);

// `s` in ASCII lower case (header names, HTML tags, messages searched for a word).
std::string lower(std::string_view s);
// Text for HTML: < > & and " as entities.
std::string html_escape(std::string_view s);

// `items` with `sep` between them.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

// `f(item)` of every item, with `sep` between them.
template <class Range, class F>
std::string join_by(const Range& items, std::string_view sep, F&& f) {
  std::string out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out += sep;
    out += f(item);
    first = false;
  }
  return out;
}

}  // namespace infdoctor::core
