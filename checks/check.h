#pragma once
// The one interface every check implements. A check measures and never decides: it returns a
// CheckResult (status, flat metrics with units in their names, raw samples, detail tables) and
// reports failures inside it; nothing it meets is thrown past run().
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "core/clock.h"
#include "core/result.h"
#include "stats/summary.h"

namespace infdoctor::checks {

struct MetricInfo {
  std::string name;  // "<check id>.<quantity>_<unit>", as rules see it
  std::string unit;
  std::string help;
};

struct CheckInfo {
  std::string id;
  std::string title;
  std::string summary;  // one sentence for `infdoctor explain` and --help
  std::vector<MetricInfo> metrics;
};

enum class CheckStatus { Ok, Skipped, Error };
std::string_view status_name(CheckStatus s);

struct CheckResult {
  std::string id;
  CheckStatus status = CheckStatus::Ok;
  std::string reason;  // why skipped or failed; empty when ok
  std::string error;   // stable token of the failure kind
  std::map<std::string, double> metrics;  // "<quantity>_<unit>" without the check id
  nlohmann::json samples = nlohmann::json::array();
  nlohmann::json details = nlohmann::json::object();
  double duration_ms = 0;

  static CheckResult start(std::string id);
  CheckResult& fail(const core::Error& e);
  CheckResult& skip(std::string reason);
  void set(const std::string& name, double value) { metrics[name] = value; }
  // `<prefix>_{p50,p90,max}_<unit>` and `<prefix>_samples_count` from kept raw values; with an
  // empty prefix, `p50_<unit>` and `samples_count`.
  void add_summary(const std::string& prefix, const std::string& unit, const std::vector<double>& values);
};

nlohmann::json to_json(const CheckResult& r);

// Per-check options, `<check id>.<name>` = text. Getters fall back to defaults and collect every
// bad value, so a run reports all config errors before it probes anything.
class Options {
 public:
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  int get_int(const std::string& check, const std::string& name, int def, int lo, int hi) const;
  double get_double(const std::string& check, const std::string& name, double def, double lo, double hi) const;
  std::string get_string(const std::string& check, const std::string& name, const std::string& def) const;
  std::string get_choice(const std::string& check, const std::string& name, const std::string& def,
                         const std::vector<std::string>& choices) const;
  std::vector<std::string> get_list(const std::string& check, const std::string& name) const;
  const std::vector<std::string>& errors() const { return errors_; }
  std::vector<std::string> keys() const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::vector<std::string> errors_;
};

struct Target {
  std::string base_url;
  std::string scheme;  // http or https
  std::string host;    // without brackets
  int port = 0;
  bool host_is_ip = false;
};
core::Result<Target> parse_target(const std::string& base_url);

// What a check may touch. Later checks read what earlier ones found (the dns check's addresses).
class CheckContext {
 public:
  CheckContext(Target target, api::Endpoint endpoint) : target_(std::move(target)), endpoint_(std::move(endpoint)) {}
  const Target& target() const { return target_; }
  const api::Endpoint& endpoint() const { return endpoint_; }
  http::Client& http() { return http_; }
  core::SteadyTime deadline() const { return deadline_; }
  void set_deadline(core::SteadyTime t) { deadline_ = t; }
  // Addresses of the API host: the dns check's answers, or the literal IP of the URL.
  const std::vector<std::string>& addresses() const { return addresses_; }
  void set_addresses(std::vector<std::string> a) { addresses_ = std::move(a); }
  void progress(const std::string& step) const;

 private:
  Target target_;
  api::Endpoint endpoint_;
  http::Client http_;
  core::SteadyTime deadline_ = core::SteadyTime::max();
  std::vector<std::string> addresses_;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  virtual CheckResult run(CheckContext& ctx) = 0;
};

}  // namespace infdoctor::checks
