// libFuzzer target: reading a results.json back, as `infdoctor explain` does with a bundle, then
// diagnosing and rendering it. A saved file may come from an older or newer infdoctor, or be
// edited by hand: it must load or be refused with a message, never crash. Its Prometheus text,
// whatever the run holds (names, labels, NaN, huge numbers), must be what the strict reader of
// the format takes.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "bundle/bundle.h"
#include "prom/exposition.h"
#include "report/prometheus.h"
#include "report/text.h"
#include "run/runner.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  auto result = infdoctor::results::from_json(j);
  if (!result.ok()) return 0;
  std::vector<std::string> warnings;
  static const auto rules = infdoctor::run::load_rules("", warnings);
  if (rules.ok()) result->diagnosis = infdoctor::rules::diagnose(rules.value(), infdoctor::results::flatten_metrics(*result));
  (void)infdoctor::report::render_text(*result);
  (void)infdoctor::results::to_json(*result);
  (void)infdoctor::bundle::render_html(*result);
  infdoctor::report::PromTarget t;
  t.labels = {result->target.base_url, result->models.target, "quick", "fuzz"};
  t.run = &result.value();
  t.exit_code = infdoctor::results::exit_code(*result);
  t.totals = infdoctor::report::tally(*result);
  if (rules.ok()) t.rules = &rules.value();
  if (!infdoctor::prom::parse_exposition(infdoctor::report::render_prometheus({t})).ok()) std::abort();
  return 0;
}
