// libFuzzer target: an engine's /metrics as infdoctor reads it. The bytes go to the exposition
// parser and, when they parse, to the engine reader and the run metrics built from two scrapes (the
// second with every counter doubled). None may crash; a parsed sample has a valid name and no more
// labels than allowed, and no mean or count read from the counters' growth is negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "prom/exposition.h"
#include "run/engine_metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = infdoctor::prom::parse_exposition(text);
  if (!e.ok()) {
    if (e.error().message.rfind("metrics exposition, line ", 0) != 0) std::abort();
    return 0;
  }
  for (const auto& s : e->samples) {
    if (s.name.empty() || s.labels.size() > infdoctor::prom::kMaxLabels) std::abort();
    if ((s.name[0] >= '0' && s.name[0] <= '9')) std::abort();
  }
  if (auto snap = infdoctor::run::read_engine(*e)) {
    auto later = *snap;
    later.after = "concurrency";
    for (auto* f : {&later.queue_sum_s, &later.queue_count, &later.ttft_sum_s, &later.ttft_count, &later.prefix_queries,
                    &later.prefix_hits, &later.preemptions})
      if (*f) **f *= 2;
    for (const auto& [name, v] : infdoctor::run::engine_metrics({*snap, later}))
      if (v < 0 && name != "run.engine_waiting_max_count" && name != "run.engine_running_max_count" &&
          name != "run.engine_kv_cache_usage_max_ratio")
        std::abort();  // gauges are as the engine wrote them; what grew cannot be below zero
  }
  return 0;
}
