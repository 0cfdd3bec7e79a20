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

}  // namespace infdoctor::core
