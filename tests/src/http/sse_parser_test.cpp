#include "http/sse_parser.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

namespace infdoctor::http {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(INFDOCTOR_FIXTURES "/streams/") + name, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<SseEvent> parse_chunks(const std::vector<std::string_view>& chunks, SseParser& p) {
  std::vector<SseEvent> out;
  for (auto c : chunks) p.feed(c, out);
  return out;
}

std::vector<SseEvent> parse_all(std::string_view s) {
  SseParser p;
  return parse_chunks({s}, p);
}

void require_same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].data == b[i].data);
    CHECK(a[i].event == b[i].event);
    CHECK(a[i].id == b[i].id);
  }
}

struct StreamCase {
  const char* file;
  std::size_t events;
};
const StreamCase kStreams[] = {
    {"openai.sse", 9}, {"vllm.sse", 10}, {"llamacpp.sse", 5}, {"proxy_crlf.sse", 5}, {"error_mid.sse", 4},
};

}  // namespace

TEST_CASE("recorded streams parse the same at every split point") {
  for (const auto& c : kStreams) {
    SUBCASE(c.file) {
      const std::string s = read_fixture(c.file);
      const auto whole = parse_all(s);
      REQUIRE(whole.size() == c.events);
      // Two chunks, split at every byte (mid-line, mid-UTF-8, between CR and LF).
      for (std::size_t i = 0; i <= s.size(); ++i) {
        CAPTURE(i);
        SseParser p;
        const auto got = parse_chunks({std::string_view(s).substr(0, i), std::string_view(s).substr(i)}, p);
        require_same(got, whole);
        CHECK_FALSE(p.has_partial());
      }
      // One byte at a time.
      SseParser p;
      std::vector<SseEvent> bytewise;
      for (char ch : s) p.feed(std::string_view(&ch, 1), bytewise);
      require_same(bytewise, whole);
      // Three chunks at a spread of split pairs.
      for (std::size_t i = 0; i < s.size(); i += 7) {
        for (std::size_t j = i; j <= s.size(); j += 13) {
          SseParser p3;
          const std::string_view v(s);
          require_same(parse_chunks({v.substr(0, i), v.substr(i, j - i), v.substr(j)}, p3), whole);
        }
      }
    }
  }
}

TEST_CASE("fields: multi-line data, event, id, comments, CR-only endings") {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed(": hello\nevent: update\nid: 7\ndata: a\ndata:b\ndata:  c\n\n", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].event == "update");
  CHECK(out[0].id == "7");
  CHECK(out[0].data == "a\nb\n c");  // one leading space is stripped, not two
  CHECK(p.comment_count() == 1);
  out.clear();
  p.feed("data: x\rdata: y\r\rdata: z\r\n\r\n", out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].data == "x\ny");
  CHECK(out[1].data == "z");
}

TEST_CASE("empty data dispatches, an event without data does not") {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("data:\n\nevent: ping\n\nretry: 5\n\n", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].data.empty());
}

TEST_CASE("a leading byte order mark is ignored, even split, and elsewhere it is data") {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("\xEF", out);
  p.feed("\xBB", out);
  p.feed("\xBF" "data: x\n\n", out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == "x");
  p.feed("data: \xEF\xBB\xBFy\n\n", out);
  REQUIRE(out.size() == 2);
  CHECK(out[1].data == "\xEF\xBB\xBFy");
  SseParser q;
  std::vector<SseEvent> o2;
  q.feed("\xEFxdata: z\n\n", o2);  // not a BOM: the bytes stay on the first line
  CHECK(o2.empty());
  q.feed("data: w\n\n", o2);
  REQUIRE(o2.size() == 1);
  CHECK(o2[0].data == "w");
}

TEST_CASE("an unterminated event is partial, not dispatched") {
  SseParser p;
  std::vector<SseEvent> out;
  p.feed("data: {\"a\":1}\n", out);
  CHECK(out.empty());
  CHECK(p.has_partial());
  p.feed("\n", out);
  CHECK(out.size() == 1);
  CHECK_FALSE(p.has_partial());
}

TEST_CASE("memory stays bounded: an oversized line or event is dropped and counted") {
  SseParser p(1024);
  std::vector<SseEvent> out;
  const std::string big(5000, 'x');
  SUBCASE("one long line, fed in pieces") {
    p.feed("data: ", out);
    for (int i = 0; i < 10; ++i) p.feed(big, out);
    p.feed("\n\ndata: ok\n\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "ok");
    CHECK(p.oversized_count() == 1);
  }
  SUBCASE("many short data lines") {
    for (int i = 0; i < 100; ++i) p.feed("data: " + std::string(50, 'y') + "\n", out);
    p.feed("\ndata: ok\n\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "ok");
    CHECK(p.oversized_count() == 1);
  }
  SUBCASE("an overflowing line that ends exactly at a chunk edge does not end the event") {
    p.feed("data: " + big, out);
    p.feed("\ndata: still the same event\n\ndata: next\n\n", out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "next");
  }
  SUBCASE("an overlong line read whole is dropped as it is when read in pieces") {
    const std::string stream = "id: " + big + "\ndata: lost\n\ndata: ok\n\n";
    std::vector<SseEvent> pieces;
    SseParser q(1024);
    for (std::size_t i = 0; i < stream.size(); i += 7) q.feed(std::string_view(stream).substr(i, 7), pieces);
    p.feed(stream, out);
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "ok");
    CHECK(p.oversized_count() == 1);
    REQUIRE(pieces.size() == 1);
    CHECK(pieces[0].data == "ok");
    CHECK(q.oversized_count() == 1);
  }
}

TEST_CASE("garbage without line structure yields no events and no growth past the cap") {
  SseParser p(4096);
  std::vector<SseEvent> out;
  std::string junk;
  for (int i = 0; i < 100000; ++i) junk.push_back(static_cast<char>('A' + (i * 7) % 26));
  p.feed(junk, out);
  CHECK(out.empty());
  CHECK(p.has_partial());  // the stream is mid-line
  CHECK(p.buffered_bytes() <= 4096);
}

}  // namespace infdoctor::http
