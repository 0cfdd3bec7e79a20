#include "checks/check.h"


#include <algorithm>
#include <cassert>
#include <cmath>
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

std::optional<double> CheckResult::metric(const MetricKey& m) const {
  if (id != m.check()) return std::nullopt;
  const auto it = metrics.find(std::string(m.key()));
  return it == metrics.end() ? std::nullopt : std::optional<double>(it->second);
}

std::optional<double> metric_of(const std::vector<CheckResult>& checks, const MetricKey& m) {
  for (const auto& c : checks)
    if (c.id == m.check()) return c.metric(m);
  return std::nullopt;
}

void CheckResult::set(const MetricKey& m, double value) {
  assert(m.check() == id);  // a check sets only what it declares
  metrics[std::string(m.key())] = value;
}

void CheckResult::add_summary(const SummaryKeys& keys, const std::vector<double>& values) {
  const stats::Summary s = stats::summarize(values);
  if (keys.count) set(*keys.count, static_cast<double>(s.count));
  if (s.count == 0) return;
  set(keys.p50, *s.p50);
  set(keys.p90, *s.p90);
  set(keys.max, *s.max);
}

void CheckResult::add_median_ci(const IntervalKeys& keys, const std::vector<double>& values) {
  if (auto ci = stats::bootstrap_median_ci(values)) {
    set(keys.low, ci->low);
    set(keys.high, ci->high);
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

namespace {

nlohmann::json axis_json(const ChartAxis& a) { return {{"label", a.label}, {"unit", a.unit}, {"counts", a.counts}}; }

ChartAxis axis_from_json(const nlohmann::json& j) {
  return {j.at("label").get<std::string>(), j.at("unit").get<std::string>(), j.at("counts").get<bool>()};
}

}  // namespace

nlohmann::json to_json(const Chart& c) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : c.series) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& p : s.points)
      points.push_back({{"x", p.x}, {"y", p.y}, {"request_id", p.request_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.request_id)}});
    series.push_back({{"name", s.name}, {"kind", core::name_of(kSeriesKindNames, s.kind)}, {"points", points}});
  }
  return {{"id", c.id}, {"caption", c.caption}, {"x", axis_json(c.x)}, {"y", axis_json(c.y)}, {"series", series}};
}

Chart chart_from_json(const nlohmann::json& j) {
  Chart c;
  try {
    c.id = j.at("id").get<std::string>();
    c.caption = j.at("caption").get<std::string>();
    c.x = axis_from_json(j.at("x"));
    c.y = axis_from_json(j.at("y"));
    for (const auto& s : j.at("series")) {
      const auto kind = core::value_of(kSeriesKindNames, s.at("kind").get<std::string>());
      if (!kind) throw std::invalid_argument("a series of an unknown kind");
      ChartSeries series{s.at("name").get<std::string>(), *kind, {}};
      for (const auto& p : s.at("points"))
        series.points.push_back({p.at("x").get<double>(), p.at("y").get<double>(),
                                 p.at("request_id").is_string() ? p.at("request_id").get<std::string>() : ""});
      c.series.push_back(std::move(series));
    }
  } catch (const std::exception& e) {
    return Chart{c.id, "a chart of this check is unreadable (" + std::string(e.what()) + ")", {}, {}, {}};
  }
  return c;
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
  nlohmann::json charts = nlohmann::json::array();
  for (const auto& c : r.charts) charts.push_back(to_json(c));
  return {{"status", status_name(r.status)},
          {"reason", r.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
          {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
          {"metrics", metrics},
          {"samples", samples_json(r)},
          {"details", r.details},
          {"tables", tables},
          {"charts", charts},
          {"duration_ms", r.duration_ms}};
}

namespace {

std::optional<double> parse_number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

std::string range(double lo, double hi) { return "[" + format_number(lo) + ", " + format_number(hi) + "]"; }

}  // namespace

std::string setting_accepts(const Setting& s) {
  switch (s.kind) {
    case SettingKind::Whole: return "a whole number in " + range(s.lo, s.hi);
    case SettingKind::Number: return "a number in " + range(s.lo, s.hi);
    case SettingKind::Numbers:
      return "an ascending list of numbers in " + range(s.lo, s.hi) +
             (s.capped_by ? std::string(", none above ") + s.capped_by->key : "");
    case SettingKind::Choice: {
      std::string all;
      for (const auto& c : split_commas(s.choices)) all += (all.empty() ? "" : ", ") + c;
      return "one of " + all;
    }
    case SettingKind::Text: return "text";
    case SettingKind::Texts: return "a comma list";
  }
  return "";
}

std::string setting_problem(const Setting& s, const std::string& text, std::optional<double> cap) {
  const auto bad = [&] { return std::string(s.key) + ": '" + text + "' is not " + setting_accepts(s); };
  switch (s.kind) {
    case SettingKind::Whole: {
      const auto v = parse_number(text);
      return v && *v == std::floor(*v) && *v >= s.lo && *v <= s.hi ? "" : bad();
    }
    case SettingKind::Number: {
      const auto v = parse_number(text);
      return v && *v >= s.lo && *v <= s.hi ? "" : bad();
    }
    case SettingKind::Numbers: {
      std::optional<double> last;
      for (const auto& item : split_commas(text)) {
        const auto v = parse_number(item);
        if (!v || *v < s.lo || *v > s.hi || (last && *v <= *last)) return bad();
        if (cap && *v > *cap)
          return std::string(s.key) + ": " + item + " is above " + s.capped_by->key + " (" + format_number(*cap) + ")";
        last = v;
      }
      // An empty list is a value only of a list whose default is empty (off unless given).
      return last || (text.empty() && *s.def == '\0') ? "" : bad();
    }
    case SettingKind::Choice: {
      const auto choices = split_commas(s.choices);
      return std::find(choices.begin(), choices.end(), text) != choices.end() ? "" : bad();
    }
    case SettingKind::Text:
    case SettingKind::Texts: return "";
  }
  return "";
}

const std::string* Options::given(const Setting& s) const {
  asked_.insert(s.key);
  const auto it = values_.find(s.key);
  return it == values_.end() ? nullptr : &it->second;
}

std::string Options::text(const Setting& s) const { return checked(s); }

std::string Options::checked(const Setting& s) const {
  std::optional<double> cap;
  if (s.capped_by) cap = number(*s.capped_by);
  const std::string* v = given(s);
  if (!v) return s.def;
  const std::string problem = setting_problem(s, *v, cap);
  if (problem.empty()) return *v;
  errors_.push_back(problem);
  return s.def;
}

double Options::number(const Setting& s) const { return parse_number(checked(s)).value_or(0); }

int Options::whole(const Setting& s) const { return static_cast<int>(number(s)); }

std::vector<double> Options::numbers(const Setting& s) const {
  std::vector<double> out;
  for (const auto& item : split_commas(checked(s))) out.push_back(parse_number(item).value_or(0));
  return out;
}

bool Options::on(const Setting& s) const {
  switch (s.kind) {
    case SettingKind::Whole:
    case SettingKind::Number: return number(s) != 0;
    default: return !text(s).empty();
  }
}

std::vector<std::string> Options::texts(const Setting& s) const {
  std::vector<std::string> out;
  for (auto& item : split_commas(text(s)))
    if (!item.empty()) out.push_back(std::move(item));
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
  pin_ = endpoint_.resolve.size();
  endpoint_.resolve.push_back(prefix + (ip.find(':') != std::string::npos ? "[" + ip + "]" : ip));
}

void CheckContext::mark_silent(const std::string& ip) {
  if (!silent(ip)) silent_.push_back(ip);
  if (!pin_) return;
  const std::string prefix = target_.host + ":" + std::to_string(target_.port) + ":";
  for (const auto& a : addresses_)
    if (!silent(a)) {
      endpoint_.resolve[*pin_] = prefix + (a.find(':') != std::string::npos ? "[" + a + "]" : a);
      return;
    }
}

bool CheckContext::silent(const std::string& ip) const {
  return std::find(silent_.begin(), silent_.end(), ip) != silent_.end();
}

core::Result<std::vector<api::RequestSample>> CheckContext::chat(const std::vector<api::ChatRequest>& reqs) {
  if (!model_) return core::make_error(core::ErrorCode::Internal, "this run has no way to send model requests");
  return model_->chat(endpoint_, reqs, deadline());
}

bool CheckContext::idle_until(core::SteadyTime t) const {
  if (idle_host_) idle_host_(std::min(t, deadline_));
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

RunTtft run_ttft(const CheckResult& r, const std::function<bool(const LabelledSample&)>& pick) {
  RunTtft out;
  std::vector<double> ttft;
  for (const auto& req : r.requests)
    if (req.sample.ok && pick(req))
      if (const auto v = server_ttft_ms(req.sample)) {
        ttft.push_back(*v + req.sample.loading_wait_ms.value_or(0));
        out.last = &req;
      }
  out.median_ms = stats::median(ttft).value_or(0);
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
