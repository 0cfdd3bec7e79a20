#include "checks/registry.h"

namespace infdoctor::checks {

const std::vector<CheckEntry>& registry() {
  // dns first: it resolves the addresses that path and transport probe one by one. coldstart
  // before the other model checks: the run's first model request must be its own.
  static const std::vector<CheckEntry> kAll = {
      {"dns", make_dns_check},
      {"path", make_path_check},
      {"transport", make_transport_check},
      {"coldstart", make_coldstart_check},
      {"baseline", make_baseline_check},
      {"sweep", make_sweep_check},
      {"serialization", make_serialization_check},
      {"concurrency", make_concurrency_check},
      {"soak", make_soak_check},
  };
  return kAll;
}

std::vector<MetricInfo> all_metrics() {
  std::vector<MetricInfo> out;
  const Options defaults;
  for (const auto& e : registry()) {
    const auto check = e.make(defaults);
    const auto& m = check->info().metrics;
    out.insert(out.end(), m.begin(), m.end());
  }
  return out;
}

}  // namespace infdoctor::checks
