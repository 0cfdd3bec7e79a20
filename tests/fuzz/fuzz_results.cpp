// libFuzzer target: reading a results.json back, as `infdoctor explain` does with a bundle, then
// diagnosing and rendering it. A saved file may come from an older or newer infdoctor, or be
// edited by hand: it must load or be refused with a message, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bundle/bundle.h"
#include "report/text.h"
#include "run/runner.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  auto result = infdoctor::run::from_json(j);
  if (!result.ok()) return 0;
  std::vector<std::string> warnings;
  static const auto rules = infdoctor::run::load_rules("", warnings);
  if (rules.ok()) result->diagnosis = infdoctor::rules::diagnose(rules.value(), infdoctor::run::flatten_metrics(*result));
  (void)infdoctor::report::render_text(*result);
  (void)infdoctor::run::to_json(*result);
  (void)infdoctor::bundle::render_html(*result);
  (void)infdoctor::run::exit_code(*result);
  return 0;
}
