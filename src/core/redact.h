#pragma once
// Removes secrets from text that may be printed or saved: user:password in URLs and the values
// of query parameters whose names speak of keys, tokens, secrets or signatures.
#include <string>
#include <string_view>

namespace infdoctor::core {

std::string redact_url(std::string_view url);

}  // namespace infdoctor::core
