#pragma once
// Every line infdoctor says to a person on stderr, in one shape: "infdoctor: LEVEL: text" (no
// LEVEL for plain news), scrubbed of secrets, a detail's lines indented under it. Progress lines
// have their own channel (core/progress.h).
#include <string>

namespace infdoctor::core {

// level: "" (news: "bundle written to ..."), "note", "warning" or "error".
void say(const std::string& level, const std::string& text, const std::string& detail = {});

}  // namespace infdoctor::core
