#pragma once
// The checks, in run order. Order is behaviour: dns finds the addresses path and transport probe;
// coldstart sends the run's first model request, so it sees any start-up penalty.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checks/check.h"

namespace infdoctor::checks {

using CheckFactory = std::function<std::unique_ptr<Check>(const Options&)>;
// A check as the registry holds it: its declaration (metrics, settings), read without making one,
// and how to make one from a run's settings.
struct CheckEntry {
  std::string id;
  const CheckInfo* info;
  CheckFactory make;
};

const std::vector<CheckEntry>& registry();

// A check defined outside this folder (a test's, a plugin's) joins the registry, after every
// check there in run order, for as long as its Registration lives: the plan, --checks, the rules'
// known metrics, the reports and the bundle then take it as any other.
class Registration {
 public:
  explicit Registration(CheckEntry entry);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  std::string id_;
};

// The entry of the check class C declared by `info` (each check file's <id>_entry()).
template <class C>
CheckEntry entry_of(const CheckInfo& info) {
  return {info.id, &info, [](const Options& o) -> std::unique_ptr<Check> { return std::make_unique<C>(o); }};
}

// Every metric any check declares, as rules name them (dns.p50_ms), in run order. The run's own
// are results/run_metrics.h's.
std::vector<MetricInfo> check_metrics();
// The declaration of the check `id`, or nullptr for an id no check has (results from elsewhere).
const CheckInfo* find_info(const std::string& id);
// The declared setting "<check id>.<name>", or nullptr.
const Setting* find_setting(const std::string& key);
// Every problem with the settings given, each a line: a key that names no check or no setting of
// its check, a value its declaration refuses. Nothing is made to find them.
std::vector<std::string> setting_problems(const Options& o);
// The name of the declared metric with this role for the typical request; empty when none.
std::string typical_metric(Typical t);
// Whether the check `id` declares its requests the reference (CheckInfo::reference), or that it
// sends parallel streams level by level (CheckInfo::stream_levels); false for an id no check has.
bool is_reference(const std::string& id);
bool sends_stream_levels(const std::string& id);
// What the check that sends stream levels measured each level to wait for a slot, by its
// streams; empty when it did not run or kept no levels.
std::map<int, double> level_queue_waits(const std::vector<CheckResult>& checks);
// The round trip to the endpoint as the run's requests take it, from the checks that measured it:
// through a proxy (the path or transport check says so) the transport check's first byte over an
// open tunnel, since the path check reaches the proxy only; else the path check's median TCP
// connect. Nothing when no check measured that route.
std::optional<double> endpoint_round_trip_ms(const std::vector<CheckResult>& checks);

CheckEntry dns_entry();
CheckEntry path_entry();
CheckEntry transport_entry();
CheckEntry coldstart_entry();
CheckEntry baseline_entry();
CheckEntry sweep_entry();
CheckEntry cache_entry();
CheckEntry replay_entry();
CheckEntry serialization_entry();
CheckEntry concurrency_entry();
CheckEntry load_entry();
CheckEntry soak_entry();

}  // namespace infdoctor::checks
