// libFuzzer target: the SSE parser. The input is split at points chosen by its first bytes, so
// the fuzzer explores chunk boundaries as well as contents; every split must give the events the
// whole input gives, and the parser's buffer must stay within its bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "http/sse_parser.h"

namespace {
using infdoctor::http::SseEvent;
using infdoctor::http::SseParser;

constexpr std::size_t kCap = 256;  // small, so the fuzzer reaches the oversize paths

bool same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].data != b[i].data || a[i].event != b[i].event || a[i].id != b[i].id) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t step = 1 + data[0] % 16;  // chunk length of the split feed
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);

  SseParser whole(kCap);
  std::vector<SseEvent> a;
  whole.feed(in, a);

  SseParser split(kCap);
  std::vector<SseEvent> b;
  for (std::size_t i = 0; i < in.size(); i += step) {
    split.feed(in.substr(i, step), b);
    if (split.buffered_bytes() > 2 * kCap + 8) std::abort();
  }
  if (!same(a, b) || whole.oversized_count() != split.oversized_count()) std::abort();
  return 0;
}
