#pragma once
// Test support: rules files for tests of ranking and shares, written from rows of what they vary.
#include <sstream>
#include <string>
#include <vector>

namespace infdoctor::test {

// A rule that always fires ("when": "1"), its title and explanation its id.
struct AlwaysRule {
  std::string id, cause, severity;
  double impact_ms = 0, confidence = 0.5;
};

inline std::string rules_text(const std::string& family, const std::vector<AlwaysRule>& rules) {
  std::ostringstream o;
  o << R"({"family": ")" << family << R"(", "rules": [)";
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const AlwaysRule& r = rules[i];
    o << (i ? ", " : "") << R"({"id": ")" << r.id << R"(", "cause": ")" << r.cause << R"(", "severity": ")"
      << r.severity << R"(", "title": ")" << r.id << R"(", "when": "1", "impact_ms": ")" << r.impact_ms
      << R"(", "confidence": )" << r.confidence << R"(, "explain": ")" << r.id << R"("})";
  }
  o << "]}";
  return o.str();
}

}  // namespace infdoctor::test
