#include "checks/registry.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>

#include "checks/path.h"
#include "checks/transport.h"

namespace infdoctor::checks {

namespace {

std::vector<CheckEntry>& entries() {
  // dns first: it resolves the addresses that path and transport probe one by one. coldstart
  // before the other model checks: the run's first model request must be its own.
  static std::vector<CheckEntry> all = {
      dns_entry(),
      path_entry(),
      transport_entry(),
      coldstart_entry(),
      baseline_entry(),
      sweep_entry(),
      cache_entry(),
      replay_entry(),
      serialization_entry(),
      concurrency_entry(),
      load_entry(),
      soak_entry(),
  };
  return all;
}

}  // namespace

const std::vector<CheckEntry>& registry() { return entries(); }

Registration::Registration(CheckEntry entry) : id_(entry.id) {
  assert(!find_info(id_) && "a check id is registered once");
  entries().push_back(std::move(entry));
}

Registration::~Registration() {
  auto& all = entries();
  all.erase(std::remove_if(all.begin(), all.end(), [&](const CheckEntry& e) { return e.id == id_; }), all.end());
}

std::vector<MetricInfo> check_metrics() {
  std::vector<MetricInfo> out;
  for (const auto& e : registry()) out.insert(out.end(), e.info->metrics.begin(), e.info->metrics.end());
  return out;
}

std::string typical_metric(Typical t) {
  for (const auto& m : check_metrics())
    if (m.tags.typical == t) return m.name;
  return {};
}

bool is_reference(const std::string& id) {
  const CheckInfo* info = find_info(id);
  return info && info->reference;
}

bool sends_stream_levels(const std::string& id) {
  const CheckInfo* info = find_info(id);
  return info && info->stream_levels;
}

std::map<int, double> level_queue_waits(const std::vector<CheckResult>& checks) {
  std::map<int, double> out;
  for (const auto& c : checks) {
    if (!sends_stream_levels(c.id) || !c.details.contains("levels") || !c.details["levels"].is_array()) continue;
    for (const auto& l : c.details["levels"])
      if (l.is_object() && l.contains("streams") && l["streams"].is_number_integer() && l.contains("queue_wait_mean_ms") &&
          l["queue_wait_mean_ms"].is_number())
        out[l["streams"].get<int>()] = l["queue_wait_mean_ms"].get<double>();
  }
  return out;
}

std::optional<double> endpoint_round_trip_ms(const std::vector<CheckResult>& checks) {
  const bool proxied = metric_of(checks, transport_metric::via_proxy_count).value_or(0) > 0 ||
                       metric_of(checks, path_metric::via_proxy_count).value_or(0) > 0;
  const auto rtt = proxied ? metric_of(checks, transport_metric::reused_ttfb_p50_ms) : metric_of(checks, path_metric::tcp_rtt_p50_ms);
  return rtt && std::isfinite(*rtt) ? rtt : std::nullopt;
}

const CheckInfo* find_info(const std::string& id) {
  for (const auto& e : registry())
    if (e.id == id) return e.info;
  return nullptr;
}

const Setting* find_setting(const std::string& key) {
  const CheckInfo* info = find_info(key.substr(0, key.find('.')));
  if (!info) return nullptr;
  for (const auto& s : info->settings)
    if (s.key == key) return &s;
  return nullptr;
}

std::vector<std::string> setting_problems(const Options& o) {
  std::vector<std::string> out;
  std::string known;
  for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + e.id;
  for (const auto& key : o.keys()) {
    const auto dot = key.find('.');
    const CheckInfo* info = dot == std::string::npos ? nullptr : find_info(key.substr(0, dot));
    if (!info) {
      out.push_back("option '" + key + "' names no check (write CHECK.NAME=VALUE; checks: " + known + ")");
      continue;
    }
    const Setting* s = find_setting(key);
    if (!s) {
      std::string names;
      for (const auto& d : info->settings) names += (names.empty() ? "" : ", ") + std::string(d.name());
      out.push_back("'" + key + "' is no setting of that check (its settings: " + names + ")");
      continue;
    }
    std::optional<double> cap;
    if (s->capped_by) {
      const std::string* given = o.given(*s->capped_by);
      // A bad cap is its own problem, found on its own key; the list is held to the default then.
      const std::string cap_text = given && setting_problem(*s->capped_by, *given).empty() ? *given : s->capped_by->def;
      cap = std::strtod(cap_text.c_str(), nullptr);
    }
    if (auto problem = setting_problem(*s, *o.given(*s), cap); !problem.empty()) out.push_back(problem);
  }
  return out;
}

}  // namespace infdoctor::checks
