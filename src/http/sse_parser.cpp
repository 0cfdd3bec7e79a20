#include "http/sse_parser.h"

#include <cstring>

namespace infdoctor::http {

void SseParser::reset_event() {
  cur_ = SseEvent{};
  data_started_ = false;
}

void SseParser::feed(std::string_view bytes, std::vector<SseEvent>& out) {
  static constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const char* p = bytes.data();
  std::size_t i = 0;
  // A UTF-8 byte order mark at the very start of the stream is ignored; it may arrive split.
  while (bom_matched_ < kBom.size() && i < bytes.size()) {
    if (p[i] == kBom[bom_matched_]) {
      ++bom_matched_;
      ++i;
      continue;
    }
    line_.append(kBom.substr(0, bom_matched_));  // a false start: those bytes were data
    bom_matched_ = kBom.size();
  }
  while (i < bytes.size()) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (p[i] == '\n') {
        ++i;
        continue;
      }
    }
    // Find the next line terminator.
    std::size_t j = i;
    while (j < bytes.size() && p[j] != '\n' && p[j] != '\r') ++j;
    if (j == bytes.size()) {
      if (!line_overflow_) {
        if (line_.size() + (j - i) > max_) {
          line_overflow_ = true;  // the rest of this line is dropped, and with it the event
          discarding_ = true;
          line_.clear();
        } else {
          line_.append(p + i, j - i);
        }
      }
      return;
    }
    if (p[j] == '\r') skip_lf_ = true;
    if (line_overflow_) {
      line_overflow_ = false;  // the overflowing line ends here; it is not a blank line
    } else if (line_.size() + (j - i) > max_) {
      discarding_ = true;  // the same line split across reads would have overflowed above
      line_.clear();
    } else if (line_.empty()) {
      process_line(std::string_view(p + i, j - i), out);
    } else {
      line_.append(p + i, j - i);
      process_line(line_, out);
      line_.clear();
    }
    i = j + 1;
  }
}

void SseParser::process_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {
    if (discarding_) {
      ++oversized_;
      discarding_ = false;
    } else if (data_started_) {
      if (!cur_.data.empty() && cur_.data.back() == '\n') cur_.data.pop_back();
      out.push_back(std::move(cur_));
    }
    reset_event();
    return;
  }
  if (discarding_) return;
  if (line.front() == ':') {
    ++comments_;
    return;
  }
  std::string_view field = line;
  std::string_view value;
  if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (cur_.data.size() + value.size() + 1 > max_) {
      discarding_ = true;
      reset_event();
      return;
    }
    cur_.data.append(value);
    cur_.data.push_back('\n');
    data_started_ = true;
  } else if (field == "event") {
    cur_.event.assign(value.substr(0, std::min(value.size(), max_)));
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) cur_.id.assign(value.substr(0, std::min(value.size(), max_)));
  }
  // `retry` and unknown fields are ignored, as the spec says.
}

}  // namespace infdoctor::http
