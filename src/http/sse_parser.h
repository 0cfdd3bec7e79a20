#pragma once
// Incremental Server-Sent Events parser (WHATWG HTML, "Server-sent events", section 9.2.6).
// Bytes may be split anywhere: mid-line, mid-UTF-8 sequence, between CR and LF. Lines end in
// CRLF, LF or CR; `:` starts a comment; several `data:` lines join with '\n'; a blank line
// dispatches. Memory is bounded: a line or event larger than the cap is dropped and counted.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace infdoctor::http {

struct SseEvent {
  std::string event;  // the `event:` field; empty means "message"
  std::string data;
  std::string id;
};

class SseParser {
 public:
  static constexpr std::size_t kDefaultMaxEventBytes = 4u << 20;
  explicit SseParser(std::size_t max_event_bytes = kDefaultMaxEventBytes) : max_(max_event_bytes) {}

  // Appends every event completed by `bytes` to `out`.
  void feed(std::string_view bytes, std::vector<SseEvent>& out);

  // Events dropped because a line or the event's data exceeded the cap.
  std::size_t oversized_count() const { return oversized_; }
  // Comment lines seen (`: keep-alive` and the like).
  std::size_t comment_count() const { return comments_; }
  // True when bytes after the last dispatched event have not formed a complete event yet:
  // at end of stream that is a truncated event.
  bool has_partial() const {
    return !line_.empty() || data_started_ || !cur_.event.empty() || discarding_ || line_overflow_;
  }
  // Bytes held for the line and event under construction; never more than about twice the cap.
  std::size_t buffered_bytes() const { return line_.size() + cur_.data.size(); }

 private:
  void process_line(std::string_view line, std::vector<SseEvent>& out);
  void reset_event();

  std::size_t max_;
  std::string line_;        // bytes of the current, unterminated line
  SseEvent cur_;            // fields gathered for the event being built
  bool data_started_ = false;
  bool skip_lf_ = false;    // last byte was CR: a following LF belongs to the same line end
  bool discarding_ = false; // the current event overflowed; drop until the blank line
  bool line_overflow_ = false;  // the current line overflowed; drop until its terminator
  std::size_t bom_matched_ = 0;  // bytes of a leading BOM seen so far; 3 once decided
  std::size_t oversized_ = 0;
  std::size_t comments_ = 0;
};

}  // namespace infdoctor::http
