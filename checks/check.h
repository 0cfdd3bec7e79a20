#pragma once
// The one interface every check implements. A check measures and never decides: it returns a
// CheckResult (status, flat metrics with units in their names, raw samples, detail tables) and
// reports failures inside it; nothing it meets is thrown past run().
#include <chrono>
#include <functional>
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
  int get_int(const std::string& check, const std::string& name, int def, int lo, int hi) const;
  double get_double(const std::string& check, const std::string& name, double def, double lo, double hi) const;
  std::string get_string(const std::string& check, const std::string& name, const std::string& def) const;
  std::string get_choice(const std::string& check, const std::string& name, const std::string& def,
                         const std::vector<std::string>& choices) const;
  std::vector<std::string> get_list(const std::string& check, const std::string& name) const;
  // A comma-separated list of numbers in [lo, hi], ascending; `def` when unset.
  std::vector<double> get_number_list(const std::string& check, const std::string& name, const std::string& def,
                                      double lo, double hi) const;
  const std::vector<std::string>& errors() const { return errors_; }
  std::vector<std::string> keys() const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::vector<std::string> errors_;
};

// Which models the model checks ask: the target, and a small one on the same endpoint to tell a
// slow model from a slow provider.
struct Models {
  std::string target;
  std::string small;
};

// What a check will spend on a paid API, stated before it runs.
struct Cost {
  int requests = 0;
  long long prompt_tokens = 0;
  long long output_tokens = 0;
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
  // Also pins the API host to the first address for every later request (unless --resolve did),
  // so every check measures the server the dns check found.
  void set_addresses(std::vector<std::string> a);
  void progress(const std::string& step) const;

  const Models& models() const { return models_; }
  void set_models(Models m) { models_ = std::move(m); }
  void set_max_requests(int n) { max_requests_ = n; }
  int requests_spent() const { return spent_; }
  int requests_left() const { return max_requests_ - spent_; }
  int rate_limited_count() const { return rate_limited_; }
  // Every model request's sample also goes here as it completes (the bundle's samples.jsonl).
  void set_sample_sink(std::function<void(const nlohmann::json&)> sink) { sample_sink_ = std::move(sink); }
  void set_current_check(std::string id) { current_check_ = std::move(id); }
  double retry_wait_ms() const { return retry_wait_ms_; }

  // Sends the chat requests in parallel (one at a time when given one), never past the request
  // budget or the deadline, after waiting out any Retry-After the provider asked for. A budget
  // or deadline that cannot take the whole batch sends nothing and says which.
  core::Result<std::vector<api::RequestSample>> chat(const std::vector<api::ChatRequest>& reqs);
  // Waits, sending nothing, until `t`; false (early) when the deadline comes first.
  bool idle_until(core::SteadyTime t) const;

 private:
  Target target_;
  api::Endpoint endpoint_;
  http::Client http_;
  core::SteadyTime deadline_ = core::SteadyTime::max();
  std::vector<std::string> addresses_;
  Models models_;
  int max_requests_ = 1000000;
  int spent_ = 0;
  int rate_limited_ = 0;
  double retry_wait_ms_ = 0;
  std::function<void(const nlohmann::json&)> sample_sink_;
  std::string current_check_;
  core::SteadyTime not_before_{};
};

// Time to first token without the request's own connection setup (DNS, connect and TLS of a
// fresh connection): what the server took, comparable between fresh and reused connections.
std::optional<double> server_ttft_ms(const api::RequestSample& s);
// The same for the end of the stream (last content event), or the whole non-streamed response.
std::optional<double> server_total_ms(const api::RequestSample& s);
// A request sample for results.json, with what the check varied (`label`: gap, prompt size, ...).
nlohmann::json sample_json(const api::RequestSample& s, const nlohmann::json& label);

// Stops a check that keeps failing instead of hammering the provider: after `limit` failed
// requests in a row, stop() is true and reason() says what kept failing.
class FailureStreak {
 public:
  explicit FailureStreak(int limit = 3) : limit_(limit) {}
  void record(const api::RequestSample& s);
  bool stop() const { return run_ >= limit_; }
  std::string reason() const;

 private:
  int limit_;
  int run_ = 0;
  std::string last_;
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  virtual CheckResult run(CheckContext& ctx) = 0;
  // Requests and tokens the check will spend on the model API at most.
  virtual Cost cost() const { return {}; }
};

// One model request at a time for a check: every sample lands in the result, failures are
// counted, a failure streak or a refused budget or deadline becomes the check's status, and
// after that send() sends nothing more.
class RequestLoop {
 public:
  RequestLoop(CheckContext& ctx, CheckResult& out) : ctx_(ctx), out_(out) {}
  std::optional<api::RequestSample> send(const api::ChatRequest& req, const nlohmann::json& label);
  bool stopped() const { return stopped_; }
  int failures() const { return failures_; }

 private:
  CheckContext& ctx_;
  CheckResult& out_;
  FailureStreak streak_;
  bool stopped_ = false;
  int failures_ = 0;
};

}  // namespace infdoctor::checks
