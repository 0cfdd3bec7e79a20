#pragma once
// The checks, in run order. Order is behaviour: dns finds the addresses path and transport probe;
// coldstart sends the run's first model request, so it sees any start-up penalty.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checks/check.h"

namespace infdoctor::checks {

using CheckFactory = std::function<std::unique_ptr<Check>(const Options&)>;
struct CheckEntry {
  std::string id;
  CheckFactory make;
};

const std::vector<CheckEntry>& registry();

// Every metric any check declares, as rules name them ("dns.p50_ms"), in run order, and after
// them the run's own (run_metrics()).
std::vector<MetricInfo> all_metrics();
// The declaration of the check `id`, or nullptr for an id no check has (results from elsewhere).
const CheckInfo* find_info(const std::string& id);
// The name of the declared metric with this role for the typical request; empty when none.
std::string typical_metric(Typical t);
// What the run counts over all checks' model requests ("run.failed_count").
const std::vector<MetricInfo>& run_metrics();

std::unique_ptr<Check> make_dns_check(const Options& o);
std::unique_ptr<Check> make_path_check(const Options& o);
std::unique_ptr<Check> make_transport_check(const Options& o);
std::unique_ptr<Check> make_coldstart_check(const Options& o);
std::unique_ptr<Check> make_baseline_check(const Options& o);
std::unique_ptr<Check> make_sweep_check(const Options& o);
std::unique_ptr<Check> make_serialization_check(const Options& o);
std::unique_ptr<Check> make_concurrency_check(const Options& o);
std::unique_ptr<Check> make_soak_check(const Options& o);

}  // namespace infdoctor::checks
