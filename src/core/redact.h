#pragma once
// Removes secrets from text that may be printed or saved: user:password in URLs, the values of
// query parameters and headers whose names speak of keys, tokens, secrets, signatures, auth or
// cookies, and any registered secret (the API key) wherever it appears, even echoed back by a
// server inside an error message.
#include <string>
#include <string_view>

namespace infdoctor::core {

std::string redact_url(std::string_view url);

// Authorization, Proxy-Authorization, api-key, x-api-key, Cookie, Set-Cookie: any name with key,
// token, secret, sig, password, auth, credential or cookie in it (the same test as query keys).
bool is_secret_header(std::string_view name);
// "Name: value" with the value replaced by REDACTED when the name is a secret one.
std::string redact_header_line(std::string_view line);

// The process's secrets (the API key once read). Texts that leave the process go through scrub(),
// which replaces every occurrence of a registered secret with REDACTED. Thread-safe.
void register_secret(std::string secret);
std::string scrub(std::string_view text);

}  // namespace infdoctor::core
