#include "core/message.h"

#include <iostream>
#include <mutex>
#include <sstream>

#include "core/redact.h"

namespace infdoctor::core {

void say(const std::string& level, const std::string& text, const std::string& detail) {
  static std::mutex mu;  // whole lines, from any thread
  std::ostringstream line;
  line << "infdoctor: " << (level.empty() ? "" : level + ": ") << scrub(text) << '\n';
  std::stringstream lines(scrub(detail));
  for (std::string l; std::getline(lines, l);) line << "  " << l << '\n';
  std::lock_guard lock(mu);
  std::cerr << line.str() << std::flush;
}

}  // namespace infdoctor::core
