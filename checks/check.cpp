#include "checks/check.h"


#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/interrupt.h"
#include "stats/fit.h"

namespace infdoctor::checks {

CheckResult CheckResult::start(std::string id) {
  CheckResult r;
  r.id = std::move(id);
  return r;
}

CheckResult& CheckResult::fail(const core::Error& e) {
  status = CheckStatus::Error;
  error = std::string(e.token());
  reason = e.detail.empty() ? e.message : e.message + ": " + e.detail;
  return *this;
}

CheckResult& CheckResult::skip(std::string why) {
  status = CheckStatus::Skipped;
  reason = std::move(why);
  return *this;
}

void CheckResult::add_summary(const std::string& prefix, const std::string& unit, const std::vector<double>& values) {
  const std::string p = prefix.empty() ? "" : prefix + "_";
  const stats::Summary s = stats::summarize(values);
  metrics[p + "samples_count"] = static_cast<double>(s.count);
  if (s.count == 0) return;
  metrics[p + "p50_" + unit] = *s.p50;
  metrics[p + "p90_" + unit] = *s.p90;
  metrics[p + "max_" + unit] = *s.max;
}

void CheckResult::add_median_ci(const std::string& stem, const std::string& unit, const std::vector<double>& values) {
  if (auto ci = stats::bootstrap_median_ci(values)) {
    metrics[stem + "_ci_low_" + unit] = ci->low;
    metrics[stem + "_ci_high_" + unit] = ci->high;
  }
}

nlohmann::json to_json(const Table& t) {
  return {{"title", t.title}, {"columns", t.columns}, {"rows", t.rows}, {"note", t.note}};
}

Table table_from_json(const nlohmann::json& j) {
  Table t;
  try {
    t.title = j.at("title").get<std::string>();
    t.columns = j.at("columns").get<std::vector<std::string>>();
    t.rows = j.at("rows").get<std::vector<std::vector<std::string>>>();
    t.note = j.value("note", "");
  } catch (const std::exception& e) {
    return Table{"a table of this check is unreadable (" + std::string(e.what()) + ")", {}, {}, ""};
  }
  return t;
}

std::string cell(double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%s%s", v, *unit ? " " : "", unit);
  return buf;
}

std::string cell(const std::optional<double>& v, const char* unit) { return v ? cell(*v, unit) : "-"; }

std::string cell(const nlohmann::json& v, const char* unit) {
  return cell(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt, unit);
}

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = v;
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& t : r.tables) tables.push_back(to_json(t));
  return {{"status", status_name(r.status)},
          {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
          {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
          {"metrics", metrics},
          {"samples", samples_json(r)},
          {"details", r.details},
          {"tables", tables},
          {"duration_ms", r.duration_ms}};
}

namespace {
std::string key_of(const std::string& check, const std::string& name) { return check + "." + name; }
}  // namespace

int Options::get_int(const std::string& check, const std::string& name, int def, int lo, int hi) const {
  const double v = get_double(check, name, def, lo, hi);
  if (v != static_cast<int>(v)) {
    errors_.push_back(key_of(check, name) + ": must be a whole number");
    return def;
  }
  return static_cast<int>(v);
}

const std::string* Options::find(const std::string& check, const std::string& name) const {
  const std::string key = key_of(check, name);
  asked_.insert(key);
  auto it = values_.find(key);
  return it == values_.end() ? nullptr : &it->second;
}

double Options::get_double(const std::string& check, const std::string& name, double def, double lo, double hi) const {
  const std::string* text = find(check, name);
  if (!text) return def;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    std::ostringstream msg;
    msg << key_of(check, name) << ": '" << *text << "' is not a number in [" << lo << ", " << hi << "]";
    errors_.push_back(msg.str());
    return def;
  }
  return v;
}

std::string Options::get_string(const std::string& check, const std::string& name, const std::string& def) const {
  const std::string* text = find(check, name);
  return text ? *text : def;
}

std::string Options::get_choice(const std::string& check, const std::string& name, const std::string& def,
                                const std::vector<std::string>& choices) const {
  const std::string v = get_string(check, name, def);
  if (std::find(choices.begin(), choices.end(), v) != choices.end()) return v;
  std::string all;
  for (const auto& c : choices) all += (all.empty() ? "" : ", ") + c;
  errors_.push_back(key_of(check, name) + ": '" + v + "' is not one of " + all);
  return def;
}

std::vector<std::string> Options::get_list(const std::string& check, const std::string& name) const {
  std::vector<std::string> out;
  const std::string* text = find(check, name);
  if (!text) return out;
  std::stringstream ss(*text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<double> Options::get_number_list(const std::string& check, const std::string& name, const std::string& def,
                                             double lo, double hi) const {
  const std::string text = get_string(check, name, def);
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(v >= lo && v <= hi) || (!out.empty() && v <= out.back())) {
      std::ostringstream msg;
      msg << key_of(check, name) << ": '" << text << "' is not an ascending list of numbers in [" << lo << ", " << hi
          << "]";
      errors_.push_back(msg.str());
      out.clear();
      std::stringstream d(def);
      for (std::string i2; std::getline(d, i2, ',');) out.push_back(std::strtod(i2.c_str(), nullptr));
      return out;
    }
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> Options::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : values_) out.push_back(k);
  return out;
}


CheckContext::CheckContext(Target target, api::Endpoint endpoint, Ports ports)
    : target_(std::move(target)),
      endpoint_(std::move(endpoint)),
      model_(ports.model),
      clock_(ports.clock ? *ports.clock : core::real_clock()),
      own_http_(ports.http ? nullptr : real_http()),
      http_(ports.http ? ports.http : own_http_.get()),
      dns_(ports.dns ? ports.dns : &real_dns()),
      probes_(ports.probes ? ports.probes : &real_probes()),
      progress_(ports.progress ? std::move(ports.progress) : [](const std::string&) {}),
      waiting_(ports.waiting ? std::move(ports.waiting) : [](core::SteadyTime) {}) {}

void CheckContext::set_addresses(std::vector<std::string> a) {
  addresses_ = std::move(a);
  if (addresses_.empty() || target_.host_is_ip) return;
  const std::string prefix = target_.host + ":" + std::to_string(target_.port) + ":";
  for (const auto& pin : endpoint_.resolve)
    if (pin.rfind(prefix, 0) == 0) return;
  const std::string& ip = addresses_.front();
  endpoint_.resolve.push_back(prefix + (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip));
}

core::Result<std::vector<api::RequestSample>> CheckContext::chat(const std::vector<api::ChatRequest>& reqs) {
  if (!model_) return core::make_error(core::ErrorCode::Internal, "this run has no way to send model requests");
  return model_->chat(endpoint_, reqs, deadline());
}

bool CheckContext::idle_until(core::SteadyTime t) const {
  waiting_(std::min(t, deadline_));
  if (!clock_.sleep_until(std::min(t, deadline_))) return false;
  return t <= deadline_;
}

core::SteadyTime CheckContext::deadline() const {
  return core::interrupted() ? std::min(deadline_, clock_.now()) : deadline_;
}

void CheckContext::progress(const std::string& step) const { progress_(step); }

namespace {
// Time before the request left: DNS, connect and TLS on a fresh connection, and on any connection
// the time a transfer waited while libcurl wrote its siblings' requests.
double before_sent_ms(const api::RequestSample& s) {
  if (s.request_sent_ms) return *s.request_sent_ms;
  if (s.connection_reused) return 0;
  return s.dns_ms.value_or(0) + s.connect_ms.value_or(0) + s.tls_ms.value_or(0);
}
}  // namespace

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Cost cost_of(const std::vector<Step>& steps) {
  Cost c;
  for (const auto& s : steps) {
    c.requests += s.requests;
    c.prompt_tokens += s.requests * s.prompt_tokens;
    c.output_tokens += s.requests * s.max_tokens;
  }
  return c;
}

std::optional<double> server_ttft_ms(const api::RequestSample& s) {
  if (!s.ok || !s.ttft_ms) return std::nullopt;
  return *s.ttft_ms - before_sent_ms(s);
}

std::optional<double> server_total_ms(const api::RequestSample& s) {
  if (!s.ok || !s.total_ms) return std::nullopt;
  return *s.total_ms - before_sent_ms(s);
}

nlohmann::json to_json(const LabelledSample& s) {
  nlohmann::json j = api::to_json(s.sample);
  j["label"] = s.label;
  return j;
}

nlohmann::json samples_json(const CheckResult& r) {
  nlohmann::json out = r.samples.is_array() ? r.samples : nlohmann::json::array();
  for (const auto& s : r.requests) out.push_back(to_json(s));
  return out;
}

std::optional<api::RequestSample> RequestLoop::send(const api::ChatRequest& req, const nlohmann::json& label) {
  if (stopped_) return std::nullopt;
  auto r = ctx_.chat({req});
  if (!r.ok()) {
    out_.fail(r.error());
    stopped_ = true;
    return std::nullopt;
  }
  api::RequestSample s = std::move(r->front());
  streak_.record(s);
  out_.requests.push_back({s, label});
  if (api::is_failure(s)) ++failures_;
  if (streak_.stop()) {  // the check ends here instead of hammering a failing endpoint
    out_.fail(streak_.error());
    stopped_ = true;
  }
  return s;
}

void FailureStreak::record(const api::RequestSample& s) {
  if (!s.ok && !api::is_failure(s)) return;  // a stated limit or the check's deadline: no failure, and no success either
  if (s.ok) {
    run_ = 0;
    return;
  }
  ++run_;
  last_ = s.failed_phase + ": " + s.error_message;
  last_token_ = s.error;
}

core::Error FailureStreak::error() const {
  return core::make_error(core::code_from_token(last_token_),
                          "stopped after " + std::to_string(run_) + " failed requests in a row; the last: " + last_);
}


}  // namespace infdoctor::checks
