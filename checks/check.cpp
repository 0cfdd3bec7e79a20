#include "checks/check.h"

#include <algorithm>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/log.h"
#include "dns/resolver.h"

namespace infdoctor::checks {

std::string_view status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::Ok: return "ok";
    case CheckStatus::Skipped: return "skipped";
    case CheckStatus::Error: return "error";
  }
  return "error";
}

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

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [k, v] : r.metrics) metrics[k] = v;
  return {{"status", status_name(r.status)},
          {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
          {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
          {"metrics", metrics},
          {"samples", r.samples},
          {"details", r.details},
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

double Options::get_double(const std::string& check, const std::string& name, double def, double lo, double hi) const {
  auto it = values_.find(key_of(check, name));
  if (it == values_.end()) return def;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !(v >= lo && v <= hi)) {
    std::ostringstream msg;
    msg << key_of(check, name) << ": '" << it->second << "' is not a number in [" << lo << ", " << hi << "]";
    errors_.push_back(msg.str());
    return def;
  }
  return v;
}

std::string Options::get_string(const std::string& check, const std::string& name, const std::string& def) const {
  auto it = values_.find(key_of(check, name));
  return it == values_.end() ? def : it->second;
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
  auto it = values_.find(key_of(check, name));
  if (it == values_.end()) return out;
  std::stringstream ss(it->second);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<std::string> Options::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, _] : values_) out.push_back(k);
  return out;
}

core::Result<Target> parse_target(const std::string& base_url) {
  Target t;
  t.base_url = base_url;
  const auto sep = base_url.find("://");
  if (sep == std::string::npos)
    return core::make_error(core::ErrorCode::ConfigError, "--base-url must start with http:// or https://");
  t.scheme = base_url.substr(0, sep);
  if (t.scheme != "http" && t.scheme != "https")
    return core::make_error(core::ErrorCode::ConfigError, "--base-url must start with http:// or https://");
  std::string authority = base_url.substr(sep + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return core::make_error(core::ErrorCode::ConfigError, "bad host in --base-url");
    t.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    t.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (t.host.empty()) return core::make_error(core::ErrorCode::ConfigError, "no host in --base-url");
  t.port = t.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
      return core::make_error(core::ErrorCode::ConfigError, "bad port in --base-url: " + port);
    t.port = static_cast<int>(p);
  }
  t.host_is_ip = dns::is_ip_literal(t.host);
  return t;
}

void CheckContext::progress(const std::string& step) const {
  // A live status line on a terminal; nothing in logs and pipes, where it would only be noise.
  static const bool tty = ::isatty(2) == 1;
  if (!tty) return;
  std::fprintf(stderr, "\r\033[K%s", step.c_str());
  if (step.empty()) std::fflush(stderr);
}

}  // namespace infdoctor::checks
