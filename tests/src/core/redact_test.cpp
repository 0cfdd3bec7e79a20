#include "core/redact.h"

#include <doctest/doctest.h>

namespace infdoctor::core {

TEST_CASE("URLs lose their secrets and keep the rest") {
  CHECK(redact_url("https://api.example.com/v1") == "https://api.example.com/v1");
  CHECK(redact_url("https://user:sk-secret@api.example.com/v1") == "https://REDACTED@api.example.com/v1");
  CHECK(redact_url("https://h/v1/chat?api-version=2024-10-21&api_key=sk-123&x=1") ==
        "https://h/v1/chat?api-version=2024-10-21&api_key=REDACTED&x=1");
  CHECK(redact_url("https://h/p?key=abc#frag") == "https://h/p?key=REDACTED#frag");
  CHECK(redact_url("https://h/p?Access_Token=abc&sig=zz") == "https://h/p?Access_Token=REDACTED&sig=REDACTED");
  CHECK(redact_url("https://h/p?flag") == "https://h/p?flag");
  CHECK(redact_url("https://h/a@b") == "https://h/a@b");  // an @ in the path is not userinfo
}

TEST_CASE("secret headers lose their values") {
  for (const char* h : {"Authorization: Bearer sk-1", "authorization: Basic dXNlcg==", "Proxy-Authorization: x",
                        "api-key: abc", "X-Api-Key: abc", "Cookie: session=1", "Set-Cookie: a=b; HttpOnly",
                        "x-goog-api-key: k", "X-Auth-Token: t", "anthropic-api-key: k"}) {
    const std::string line = h;
    CHECK_MESSAGE(redact_header_line(line) == line.substr(0, line.find(':')) + ": REDACTED", line);
  }
  CHECK(redact_header_line("x-request-id: req-1") == "x-request-id: req-1");
  CHECK(redact_header_line("content-type: text/event-stream") == "content-type: text/event-stream");
  CHECK(redact_header_line("no colon here") == "no colon here");
}

TEST_CASE("a registered secret is scrubbed wherever it appears") {
  const std::string key = "sk-test-scrub-0123456789abcdef";
  CHECK(scrub("Incorrect API key provided: " + key) == "Incorrect API key provided: " + key);  // not registered yet
  register_secret(key);
  CHECK(scrub("Incorrect API key provided: " + key) == "Incorrect API key provided: REDACTED");
  CHECK(scrub(key + key + " and " + key) == "REDACTEDREDACTED and REDACTED");
  CHECK(scrub("{\"message\":\"" + key + "\"}") == "{\"message\":\"REDACTED\"}");
  CHECK(scrub("nothing secret") == "nothing secret");
  register_secret("abc");  // too short to be a key: it would blank out ordinary words
  CHECK(scrub("abc") == "abc");
}

}  // namespace infdoctor::core
