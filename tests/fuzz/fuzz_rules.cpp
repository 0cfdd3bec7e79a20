// libFuzzer target: the rules loader, as `--rules DIR` and `infdoctor rules check` use it. Any
// text must either load or be reported as errors; whatever loads must then diagnose metrics
// without crashing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rules/rules.h"
#include "run/slo.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::string> known = infdoctor::run::known_metrics();
  static const std::map<std::string, double> metrics = [] {
    std::map<std::string, double> m;
    double v = 0.5;
    for (const auto& name : known) m[name] = (v *= 1.7) > 1e6 ? (v = 0.25) : v;
    return m;
  }();
  std::vector<infdoctor::rules::RuleFile> files = {
      {"fuzz.json", std::string(reinterpret_cast<const char*>(data), size)}};
  infdoctor::rules::LoadReport report;
  const auto set = infdoctor::rules::load_texts(files, known, report);
  if (!report.errors.empty()) return 0;
  (void)infdoctor::rules::diagnose(set, metrics);
  return 0;
}
