#pragma once
// The one interface every check implements. A check measures and never decides: it returns a
// CheckResult (status, flat metrics with units in their names, raw samples, detail tables) and
// reports failures inside it; nothing it meets is thrown past run().
#include <array>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "api/target.h"
#include "checks/ports.h"
#include "core/clock.h"
#include "core/names.h"
#include "core/result.h"
#include "stats/summary.h"

namespace infdoctor::checks {

// How `infdoctor compare` counts a layer's difference into a typical request's end-to-end gap.
enum class Explains {
  Nothing,         // shown, not counted (it may be inside another layer, or apply only sometimes)
  Whole,           // the difference itself
  PerOutputToken,  // the difference times the typical request's output tokens after the first
  PerPromptToken,  // the difference times the reference request's prompt tokens
};

// What a metric is of the typical request (the baseline's target model): compare prices a
// layer's difference on that request.
enum class Typical {
  None,
  EndToEnd,      // its end-to-end time
  OutputTokens,  // its output tokens
};

// What readers other than rules do with a metric, declared with it so that none spells its name.
struct MetricTags {
  const char* layer = nullptr;  // compare shows it as this layer of a request
  const char* per = nullptr;    // what that layer costs on ("new connections", "every request")
  Explains explains = Explains::Nothing;
  bool history = false;         // --history keeps it, for trends and the past week's comparison
  const char* slo = nullptr;    // the short name --slo accepts for it
  Typical typical = Typical::None;
  const char* column = nullptr;  // `infdoctor history` shows it in its runs table under this heading
  // For a fitted slope: the fit's R² metric. Compare tells two slopes apart by it when each line
  // explains its points (R² 0.9 or more): every point of the fit then says the same.
  const char* fit_r2 = nullptr;
};

// A declared metric as code refers to it: its name as rules see it, "<check id>.<quantity>_<unit>".
// A check declares each of its metrics as a constant in its header (checks/baseline.h, ...): its
// CheckInfo names it through that, the check sets it through it (CheckResult::set), and readers
// look it up through it, so the name is spelled once (a registry test holds checks/*.cpp to it).
struct MetricKey {
  const char* name;
  constexpr std::string_view check() const { return std::string_view(name).substr(0, std::string_view(name).find('.')); }
  // The name without the check id: how CheckResult::metrics holds it.
  constexpr std::string_view key() const { return std::string_view(name).substr(std::string_view(name).find('.') + 1); }
};

// The metrics a summary of kept raw values sets (CheckResult::add_summary), each a declared
// constant of the check: median, 90th percentile and largest, and how many values there were
// (not set when the check counts its samples otherwise).
struct SummaryKeys {
  MetricKey p50, p90, max;
  std::optional<MetricKey> count = std::nullopt;
};

// The two ends of the seeded bootstrap 95 % interval of a median (CheckResult::add_median_ci).
struct IntervalKeys {
  MetricKey low, high;
};

struct MetricInfo {
  std::string name;  // "<check id>.<quantity>_<unit>", as rules see it
  std::string unit;
  std::string help;
  MetricTags tags = {};
};

// The check's one line in the report. The first headline whose `when` metric was measured (or
// that has none: nullptr) is shown; each {quantity_unit} is the check's metric, formatted by its
// unit ("-" when unmeasured), and {quantity_ratio%} is a ratio shown as a percentage.
struct Headline {
  const MetricKey* when;
  const char* text;
};

// One setting of a check, as `--set CHECK.NAME=VALUE` writes it. A check declares each in its
// header once (checks/<id>.h, namespace `<id>_setting`) and lists them in its CheckInfo; the plan
// (profiles and flags), --set's validation, `run --settings` and the check's constructor read that
// declaration, so a name, default or range is written in one place.
enum class SettingKind {
  Whole,    // a whole number in [lo, hi]
  Number,   // a number in [lo, hi]
  Numbers,  // an ascending comma list of numbers, each in [lo, hi]
  Choice,   // one of `choices`
  Text,     // any text
  Texts,    // a comma list of texts
};
struct Setting {
  const char* key;  // "<check id>.<name>"
  SettingKind kind;
  const char* def;  // the default as --set writes it; "" for an empty list
  double lo = 0, hi = 0;
  const char* help = "";
  const char* choices = "";  // Choice: "udp,tcp,off"
  // Numbers: the setting whose value bounds each number from above (the concurrency levels by
  // the cap on parallel streams); nullptr when none.
  const Setting* capped_by = nullptr;
  // What --quick and --full set it to, as --set writes it; nullptr: that profile leaves the default.
  const char* quick = nullptr;
  const char* full = nullptr;
  constexpr std::string_view check() const { return std::string_view(key).substr(0, std::string_view(key).find('.')); }
  constexpr std::string_view name() const { return std::string_view(key).substr(std::string_view(key).find('.') + 1); }
};
// What is wrong with `text` as a value of `s` (and, for a capped list, with `cap` as its bound);
// empty when nothing is. The message names the setting.
std::string setting_problem(const Setting& s, const std::string& text, std::optional<double> cap = std::nullopt);
// "a whole number in [1, 1000]", "one of udp, tcp, off": what a setting accepts, for messages and
// `run --settings`.
std::string setting_accepts(const Setting& s);

struct CheckInfo {
  std::string id;
  std::string title;
  std::string summary;  // one sentence for `infdoctor explain` and --help
  std::vector<MetricInfo> metrics;
  std::vector<Headline> headlines;
  std::vector<Setting> settings;
  // A check a run takes only when this setting holds something (Options::on), or when named
  // (--checks); nullptr: every run takes it.
  const Setting* off_unless = nullptr;
  // A check a run takes only when --checks names it (`--checks +cache` adds it to the others): one
  // that costs more than a diagnosis of a slow endpoint needs.
  bool opt_in = false;
  // Its requests to the target model are the request as the user sends it (one at a time, a short
  // prompt): where one request must stand for the run, theirs do (the stream report.html draws,
  // the phases the Prometheus text reports).
  bool reference = false;
  // It sends parallel streams level by level: its requests are no one-at-a-time series (the plan
  // counts none of them towards one), the engine's queue counters across it are the queue of its
  // levels, and its details' `levels` hold each level's `streams` and `queue_wait_mean_ms`.
  bool stream_levels = false;
};

enum class CheckStatus { Ok, Skipped, Error };
inline constexpr std::array kCheckStatusNames{core::NameRow<CheckStatus>{CheckStatus::Ok, "ok"},
                                              core::NameRow<CheckStatus>{CheckStatus::Skipped, "skipped"},
                                              core::NameRow<CheckStatus>{CheckStatus::Error, "error"}};
static_assert(core::in_enum_order(kCheckStatusNames) && kCheckStatusNames.size() == 3);
constexpr std::string_view status_name(CheckStatus s) { return core::name_of(kCheckStatusNames, s); }

// A table of the check's own measurements, cells already formatted by the check: the terminal
// report, report.html and summary.md render it as it is, without knowing the check.
struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::string note;  // a line under the table, or empty
};
nlohmann::json to_json(const Table& t);
// A table read back from results.json; a table that does not have the shape says so in its title.
Table table_from_json(const nlohmann::json& j);
// "12.3" (or "12.3 ms" with a unit), "-" when unmeasured.
std::string cell(double v, const char* unit = "");
std::string cell(const std::optional<double>& v, const char* unit = "");
std::string cell(const nlohmann::json& v, const char* unit = "");

// A chart of the check's own measurements, declared by the check as its tables are (Check::charts):
// report.html draws every check's charts, in run order, without knowing the check. Each point
// says which request it came from (its request id), or nothing when the check derived it (a
// level's median, the ends of a fit).
struct ChartAxis {
  std::string label;    // "prompt", "TTFT"
  std::string unit;     // "tokens", "ms"; empty for none
  bool counts = false;  // a count: whole-number ticks
};
struct ChartPoint {
  double x = 0, y = 0;
  std::string request_id;
};
// How a series is drawn: measured points alone, points joined in order, a fitted line, or a
// reference the others are read against (a baseline drawn across).
enum class SeriesKind { Points, Line, Fit, Reference };
inline constexpr std::array kSeriesKindNames{core::NameRow<SeriesKind>{SeriesKind::Points, "points"},
                                             core::NameRow<SeriesKind>{SeriesKind::Line, "line"},
                                             core::NameRow<SeriesKind>{SeriesKind::Fit, "fit"},
                                             core::NameRow<SeriesKind>{SeriesKind::Reference, "reference"}};
static_assert(core::in_enum_order(kSeriesKindNames) && kSeriesKindNames.size() == 4);
struct ChartSeries {
  std::string name;
  SeriesKind kind = SeriesKind::Line;
  std::vector<ChartPoint> points;
};
struct Chart {
  std::string id;  // the figure's in report.html: "ttft-vs-prompt"
  std::string caption;
  ChartAxis x, y;
  std::vector<ChartSeries> series;
};
nlohmann::json to_json(const Chart& c);
// A chart read back from results.json; one that does not have the shape says so in its caption
// and draws nothing.
Chart chart_from_json(const nlohmann::json& j);

struct LabelledSample {
  api::RequestSample sample;
  nlohmann::json label;
};

struct CheckResult {
  std::string id;
  CheckStatus status = CheckStatus::Ok;
  std::string reason;  // why skipped or failed; empty when ok
  std::string error;   // stable token of the failure kind
  std::map<std::string, double> metrics;  // "<quantity>_<unit>" without the check id
  // Model requests, typed until results.json is written, each with what the check varied
  // (`label`: gap, prompt size, streams, ...).
  std::vector<LabelledSample> requests;
  // The network probes' own samples (lookups, connects, hops, GETs), as the check wrote them.
  nlohmann::json samples = nlohmann::json::array();
  nlohmann::json details = nlohmann::json::object();  // what the plots and other tools read
  std::vector<Table> tables;
  std::vector<Chart> charts;  // the check's own (Check::charts), from what it returned
  double duration_ms = 0;

  static CheckResult start(std::string id);
  CheckResult& fail(const core::Error& e);
  CheckResult& skip(std::string reason);
  void set(const std::string& name, double value) { metrics[name] = value; }
  // How a check sets its own metrics: through the constant that declares each (checks/<id>.h), so
  // that its name is spelled once.
  void set(const MetricKey& m, double value);
  // The metric `m` when this is its check and it was measured.
  std::optional<double> metric(const MetricKey& m) const;
  // The count (when `keys` has one), median, 90th percentile and largest of kept raw values; only
  // the count when there are none.
  void add_summary(const SummaryKeys& keys, const std::vector<double>& values);
  // The seeded bootstrap 95 % interval of the median, when there are enough values for one.
  // `infdoctor compare` tells real differences by it.
  void add_median_ci(const IntervalKeys& keys, const std::vector<double>& values);
};

nlohmann::json to_json(const CheckResult& r);

// The settings a run was given, `<check id>.<name>` = text, read through their declarations. A
// value is checked against its declaration before any check reads it (run/plan.cpp): a getter meeting
// a bad one anyway falls back to the default and keeps the problem in errors().
class Options {
 public:
  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  void set(const Setting& s, const std::string& value) { values_[s.key] = value; }
  // The text given for `s`, or nullptr when it was not given.
  const std::string* given(const Setting& s) const;
  // The value of `s` when given, else its default.
  std::string text(const Setting& s) const;
  int whole(const Setting& s) const;
  double number(const Setting& s) const;
  std::vector<double> numbers(const Setting& s) const;
  std::vector<std::string> texts(const Setting& s) const;
  // True when `s` holds something: a number other than 0, a text or list not empty.
  bool on(const Setting& s) const;
  // A problem a check finds in its settings beyond what their declarations can say (a body that
  // is not JSON): kept with the others, and the run does not start.
  void problem(std::string what) const { errors_.push_back(std::move(what)); }
  const std::vector<std::string>& errors() const { return errors_; }
  std::vector<std::string> keys() const;
  // Every key a getter has read, given or not: a test holds it to the check's declared settings.
  const std::set<std::string>& asked() const { return asked_; }

 private:
  // The value of `s` when it passes its declaration, else the default (the problem kept).
  std::string checked(const Setting& s) const;

  std::map<std::string, std::string> values_;
  mutable std::vector<std::string> errors_;
  mutable std::set<std::string> asked_;
};

// Which models the model checks ask: the target, and a small one on the same endpoint to tell a
// slow model from a slow provider.
struct Models {
  std::string target;
  std::string small;
};

// One step of what a check will do, stated before it runs (`--dry-run` prints them): `requests`
// model requests alike, or, for a network step, what it sends in `what`.
struct Step {
  std::string what;           // "idle 30 s, then one request", "5 TCP connects to each address"
  int requests = 0;           // model requests
  std::string model = "target";  // target or small
  long long prompt_tokens = 0;   // per request (about: synthetic prompts)
  long long max_tokens = 0;      // per request
  bool stream = true;
};

// What a check will spend on a paid API at most.
struct Cost {
  int requests = 0;
  long long prompt_tokens = 0;
  long long output_tokens = 0;
};
Cost cost_of(const std::vector<Step>& steps);
// A number as plans and messages print it: 30, 0.5, 1e+06.
std::string format_number(double v);

using api::Target;
using api::parse_target;

// Stops a check that keeps failing instead of hammering the provider: after `limit` failed
// requests in a row, stop() is true and error() says what kept failing.
class FailureStreak {
 public:
  explicit FailureStreak(int limit = 3) : limit_(limit) {}
  void record(const api::RequestSample& s);
  bool stop() const { return run_ >= limit_; }
  // The streak as the check's error: the last failure's own token, and what kept failing.
  core::Error error() const;
  // The last failure, "phase: message" (empty before any).
  const std::string& last() const { return last_; }

 private:
  int limit_;
  int run_ = 0;
  std::string last_;
  std::string last_token_;
};

// The ports a context hands to its checks. A null port is the real one (the clock, plain HTTP,
// DNS, probes); the model port has no default: run/pacer is the one a run plugs in.
struct Ports {
  ModelPort* model = nullptr;
  core::Clock* clock = nullptr;
  HttpPort* http = nullptr;
  DnsPort* dns = nullptr;
  ProbePort* probes = nullptr;
  std::function<void(const std::string&)> progress;  // where the check is (core/progress); default: nowhere
  std::function<void(core::SteadyTime)> waiting;      // the check idles until then (a countdown)
};

// What a check may touch: the target and endpoint, its deadline, the addresses earlier checks
// found (the dns check's answers), the models asked, and the ports.
class CheckContext {
 public:
  CheckContext(Target target, api::Endpoint endpoint, Ports ports);
  const Target& target() const { return target_; }
  const api::Endpoint& endpoint() const { return endpoint_; }
  // The check's deadline; "now" once the run is interrupted, so every loop bounded by it ends.
  core::SteadyTime deadline() const;
  void set_deadline(core::SteadyTime t) { deadline_ = t; }
  // True while the deadline is ahead.
  bool before_deadline() const { return clock_.now() < deadline(); }
  // Addresses of the API host: the dns check's answers, or the literal IP of the URL.
  const std::vector<std::string>& addresses() const { return addresses_; }
  // Also pins the API host to the first address for every later request (unless --resolve did),
  // so every check measures the server the dns check found.
  void set_addresses(std::vector<std::string> a);
  // An address that never answered a probe (the path check gave it up): later checks do not wait
  // on it again, and when it is the one the requests were pinned to, the pin moves to the first
  // address not known silent, as a client falls back to the next address it resolved.
  void mark_silent(const std::string& ip);
  bool silent(const std::string& ip) const;
  // Through a proxy (api::proxy_route): the proxy's addresses, which the requests connect to.
  const std::vector<std::string>& proxy_addresses() const { return proxy_addresses_; }
  void set_proxy_addresses(std::vector<std::string> a) { proxy_addresses_ = std::move(a); }
  const Models& models() const { return models_; }
  void set_models(Models m) { models_ = std::move(m); }
  // The results of the checks that ran before this one in the run, their requests as they labelled
  // them: a check may read a request whose shape fits its own as a reading of its own (the sweep's
  // decode, the baseline's answers to the same prompt). The runner points this at the run's result
  // list while the run goes on; nothing outside a run.
  const std::vector<CheckResult>& earlier_checks() const { return earlier_ ? *earlier_ : kNoChecks; }
  void set_earlier_checks(const std::vector<CheckResult>* checks) { earlier_ = checks; }

  core::Clock& clock() const { return clock_; }
  HttpPort& http() { return *http_; }
  DnsPort& dns() { return *dns_; }
  ProbePort& probes() { return *probes_; }
  void progress(const std::string& step) const;

  // Model requests to this endpoint through the model port, none outliving the deadline.
  core::Result<std::vector<api::RequestSample>> chat(const std::vector<api::ChatRequest>& reqs);
  // Waits, sending nothing, until `t`; false (early) when the deadline comes first or the run is
  // interrupted. The run may fill the wait with checks that send nothing to a model (the idle
  // host, below), each ending by `t`.
  bool idle_until(core::SteadyTime t) const;
  // What the run does with this context's idle waits: called with the end of each wait before it
  // is waited out (the runner's held checks); none by default.
  void set_idle_host(std::function<void(core::SteadyTime)> host) { idle_host_ = std::move(host); }

 private:
  Target target_;
  api::Endpoint endpoint_;
  ModelPort* model_;
  core::Clock& clock_;
  std::unique_ptr<HttpPort> own_http_;
  HttpPort* http_;
  DnsPort* dns_;
  ProbePort* probes_;
  std::function<void(const std::string&)> progress_;
  std::function<void(core::SteadyTime)> waiting_;
  std::function<void(core::SteadyTime)> idle_host_;
  core::SteadyTime deadline_ = core::SteadyTime::max();
  std::vector<std::string> addresses_, proxy_addresses_, silent_;
  std::optional<std::size_t> pin_;  // the endpoint's pin this context added (set_addresses), by index
  Models models_;
  const std::vector<CheckResult>* earlier_ = nullptr;
  static inline const std::vector<CheckResult> kNoChecks;
};

// Time to first token from the moment the request was written to the socket: without connection
// setup (DNS, connect, TLS) and without the client's own wait behind concurrent requests; what the
// server took (and the wire), comparable between fresh and reused connections.
// The metric `m` of the run's checks: of the check it belongs to, when that ran and measured it.
std::optional<double> metric_of(const std::vector<CheckResult>& checks, const MetricKey& m);

std::optional<double> server_ttft_ms(const api::RequestSample& s);
// The same for the end of the stream (last content event), or the whole non-streamed response.
std::optional<double> server_total_ms(const api::RequestSample& s);
// A model request as results.json holds it: the sample's fields and its `label`.
nlohmann::json to_json(const LabelledSample& s);
// The samples of results.json: a check's probe samples, then its model requests.
nlohmann::json samples_json(const CheckResult& r);


// A request repro.sh sends again with curl, beside the run's own time to its first content
// (without connection setup, with any wait for a loading model): a synthetic prompt of as many
// words as the run sent, after the same idle gap.
struct ReproRequest {
  std::string what;           // "after 3 s idle", "2048 prompt tokens"
  bool small_model = false;   // the small model, else the target
  int prompt_words = 1;       // the synthetic prompt's words (api::synthetic_prompt)
  long long max_tokens = 1;
  double idle_before_s = 0;   // waited before sending it
  double run_ttft_ms = 0;     // 0: a warm-up, nothing to compare with
};

// The run's median time to first content over the answered requests of `r` that `pick` takes, as
// repro.sh prints it beside its own, and the last of them (how the run sent it); none taken:
// median 0 and no last.
struct RunTtft {
  double median_ms = 0;
  const LabelledSample* last = nullptr;
};
RunTtft run_ttft(const CheckResult& r, const std::function<bool(const LabelledSample&)>& pick);

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  // A check holds only its settings: run() changes nothing in it, so one check serves every side of a run.
  virtual CheckResult run(CheckContext& ctx) const = 0;
  // Every step the check will take at most, in order: model requests with their tokens, and the
  // network probes. Nothing is sent to make this list.
  virtual std::vector<Step> plan() const = 0;
  Cost cost() const { return cost_of(plan()); }
  // The time the plan spends waiting by design (idle gaps, a soak's minutes): the check's deadline
  // is --check-timeout on top of it, so a long gap or soak is never cut by the deadline.
  virtual std::chrono::milliseconds planned_wait() const { return std::chrono::milliseconds(0); }
  // True when the check sends nothing to a model and nothing a model's state answers for, and no
  // later check needs it first: the run may hold it for the idle gaps of a later check that waits
  // by design (RunPlan::idle_endpoint keeps them idle instead).
  virtual bool runs_in_idle() const { return false; }
  // Of such a check, whether this run's requests need nothing from it first after all, asked at
  // its turn (the addresses known): false runs it in its turn. `idle_unless` says when that is,
  // for the plan; empty when never.
  virtual bool idle_now(const CheckContext& ctx) const { return true; }
  virtual std::string idle_unless() const { return ""; }
  // The charts of a result of this check: series of its own points, with axes and units, each
  // point with the request it came from. Read after run() from whatever it returned (a failed or
  // cut-short result too), so a chart with nothing to draw says "not measured" where it stands.
  virtual std::vector<Chart> charts(const CheckResult& r) const { return {}; }
  // How to reproduce what this check measured: the requests repro.sh sends again to show a
  // finding that cites `metric`, one of this check's own as rules name it ("<check id>.<quantity>_<unit>");
  // or, with `metric` empty, the requests that stand for the run as a whole (a finding whose
  // evidence no check's requests show, or no finding). Empty when this check's requests do not
  // show it. `r` is this check's result; `models` the models the run asked.
  virtual std::vector<ReproRequest> repro(const CheckResult& r, const std::string& metric, const Models& models) const {
    return {};
  }
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
  // The last failed request, "phase: message"; empty when none failed.
  const std::string& last_failure() const { return streak_.last(); }

 private:
  CheckContext& ctx_;
  CheckResult& out_;
  FailureStreak streak_;
  bool stopped_ = false;
  int failures_ = 0;
};

}  // namespace infdoctor::checks
