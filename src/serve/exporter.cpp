#include "serve/exporter.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "api/sample.h"
#include "bundle/bundle.h"
#include "core/clock.h"
#include "core/exit_code.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "report/prometheus.h"
#include "run/engine_metrics.h"
#include "run/pacer.h"
#include "run/session.h"
#include "serve/bundle_store.h"

namespace infdoctor::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kHour = std::chrono::hours(1);

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The plan a module runs: `run`'s profiles (a probe has none).
run::PlanOptions plan_options(const std::string& module) {
  run::PlanOptions po;
  po.quick = module == "quick";
  po.full = module == "full";
  return po;
}

HttpResponse text(int status, const std::string& body) { return {status, "text/plain; charset=utf-8", body}; }

// Seconds to the millisecond, for a log line.
double seconds_rounded(double s) { return std::round(s * 1000) / 1000; }

// One target's schedule, spending and latest results.
struct State {
  ServeTarget target;
  std::timed_mutex busy;  // held by a run or a probe against this target: never two at once
  // Under the exporter's `mu`:
  std::shared_ptr<const results::RunResult> last;
  int exit_code = 0;
  double run_seconds = 0, finished_at = 0;
  report::Tally totals;
  std::deque<std::pair<Clock::time_point, int>> spent;  // model requests sent, the last hour's
  Clock::time_point next_due{};
  bool running = false;
  std::map<std::string, double> runs;  // outcome -> count

  int spent_last_hour(Clock::time_point now) {
    while (!spent.empty() && now - spent.front().first > kHour) spent.pop_front();
    int n = 0;
    for (const auto& [_, k] : spent) n += k;
    return n;
  }
};

report::PromLabels labels_of(const ServeTarget& t, const std::string& vantage, const std::string& module) {
  return {t.spec.name, t.spec.models.target, module, vantage};
}

int requests_of(const report::Tally& t) {
  double n = 0;
  for (const auto& [_, k] : t.requests) n += k;
  return static_cast<int>(n);
}

}  // namespace

core::Result<std::vector<ServeTarget>> all_targets(const ExporterOptions& options) {
  std::vector<ServeTarget> out = options.targets;
  if (!options.config_path.empty()) {
    auto more = read_config(options.config_path, options.shared);
    if (!more.ok()) return more.error();
    for (auto& t : more.value()) {
      for (const auto& o : out)
        if (o.spec.name == t.spec.name)
          return core::make_error(core::ErrorCode::InvalidArgument,
                                  "target " + t.spec.name + " is in both --target and " + options.config_path);
      out.push_back(std::move(t));
    }
  }
  if (out.empty())
    return core::make_error(core::ErrorCode::InvalidArgument, "no target: give --target NAME=URL,model=M or --config FILE");
  for (const auto& t : out)  // every endpoint must build now, not at its first run
    if (auto ep = api::make_endpoint(t.spec.endpoint); !ep.ok())
      return core::make_error(ep.error().code, t.spec.name + ": " + ep.error().message, ep.error().detail);
  return out;
}

struct Exporter::Impl {
  ExporterOptions options;
  BundleStore store{"", 0};
  std::optional<std::regex> allowed;  // --allow-target
  rules::RuleSet rules;
  std::mutex log_mu;

  std::mutex mu;
  std::condition_variable wake;
  std::map<std::string, std::shared_ptr<State>> states;
  bool stopping = false;
  bool reload_ok = true;
  double reload_ok_at = 0;
  std::thread scheduler;

  void log(const std::string& level, const std::string& msg, const LogFields& fields = {}) {
    nlohmann::ordered_json j;
    j["time"] = core::rfc3339_utc(std::chrono::system_clock::now());
    j["level"] = level;
    j["msg"] = core::scrub(msg);
    for (const auto& [k, v] : fields) j[k] = v.is_string() ? nlohmann::json(core::scrub(v.get<std::string>())) : v;
    const std::string line = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::lock_guard lock(log_mu);
    if (options.log_sink)
      options.log_sink(line);
    else
      std::cerr << line << '\n' << std::flush;
  }

  core::Result<std::vector<ServeTarget>> all_targets() { return serve::all_targets(options); }

  // Replaces the targets: one kept by name keeps its results and spending; a changed one runs anew.
  void set_targets(std::vector<ServeTarget> targets) {
    std::lock_guard lock(mu);
    std::map<std::string, std::shared_ptr<State>> next;
    const auto now = Clock::now();
    for (auto& t : targets) {
      auto it = states.find(t.spec.name);
      std::shared_ptr<State> st;
      if (it != states.end() && it->second->target.text == t.text) {
        st = it->second;
      } else {
        st = std::make_shared<State>();
        if (it != states.end()) st->spent = it->second->spent;  // the budget is the target's, whatever it measures
        st->next_due = now;
      }
      st->target = std::move(t);
      next[st->target.spec.name] = st;
    }
    states = std::move(next);
    wake.notify_all();
  }

  // The earliest due target that is not running, and when it is due.
  std::shared_ptr<State> next_due() {
    std::shared_ptr<State> best;
    for (auto& [_, st] : states)
      if (!st->running && (!best || st->next_due < best->next_due)) best = st;
    return best;
  }

  void schedule_loop() {
    std::unique_lock lock(mu);
    while (!stopping) {
      auto st = next_due();
      if (!st) {
        wake.wait(lock);
        continue;
      }
      if (Clock::now() < st->next_due) {
        wake.wait_until(lock, st->next_due);
        continue;  // a reload or stop may have changed what is due
      }
      const auto started = Clock::now();
      st->running = true;
      lock.unlock();
      run_scheduled(*st);
      lock.lock();
      st->running = false;
      // The next run one interval after this one began; after an overrun, one interval from now.
      st->next_due = started + st->target.interval;
      if (st->next_due < Clock::now()) st->next_due = Clock::now() + st->target.interval;
    }
  }

  // A module's run against one target, its results kept; `timeout` bounds a probe's request.
  struct Outcome {
    std::shared_ptr<results::RunResult> result;
    int exit_code = core::kExitCouldNotRun;
    double seconds = 0;
  };

  Outcome probe(const ServeTarget& t, std::chrono::milliseconds timeout, const std::string& bundle = "") {
    return probe_at(api::make_endpoint(t.spec.endpoint), t.spec.name, t.spec.models, timeout, bundle);
  }

  // One streamed request to `ep`; its bundle written to `bundle` unless that is empty.
  Outcome probe_at(core::Result<api::Endpoint> ep, const std::string& name, const checks::Models& models,
                   std::chrono::milliseconds timeout, const std::string& bundle) {
    Outcome out;
    const auto t0 = Clock::now();
    auto r = std::make_shared<results::RunResult>();
    r->started_at = core::rfc3339_utc(std::chrono::system_clock::now());
    r->models = models;
    checks::CheckResult c = checks::CheckResult::start("probe");
    if (ep.ok()) {
      if (auto target = checks::parse_target(ep->base_url); target.ok()) r->target = target.value();
      ep->timeout = std::min(ep->timeout, timeout);
      ep->connect_timeout = std::min(ep->connect_timeout, timeout);
      api::ChatRequest chat;
      chat.model = models.target;
      chat.prompt = "Say hello.";
      chat.max_tokens = 16;
      http::Client client;
      const api::RequestSample s = api::run_chat(client, *ep, chat, /*fresh_connection=*/true);
      c.requests.push_back({s, nlohmann::json::object()});
      if (s.ok) {
        out.exit_code = core::kExitOk;
      } else {
        r->unreachable = run::failure_line(*ep, s);
        c.fail(core::make_error(core::ErrorCode::HttpStatus, r->unreachable));
      }
    } else {
      r->unreachable = ep.error().message;
      c.fail(ep.error());
    }
    c.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    r->checks.push_back(std::move(c));
    r->finished_at = core::rfc3339_utc(std::chrono::system_clock::now());
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!bundle.empty() && ep.ok()) write_probe_bundle(bundle, name, ep.value(), *r);
    out.result = std::move(r);
    return out;
  }

  // A probe's evidence bundle, as a run's: its one request, results.json, summary.md, repro.sh.
  void write_probe_bundle(const std::string& path, const std::string& name, const api::Endpoint& ep, const results::RunResult& r) {
    auto w = bundle::Writer::start(path);
    if (!w.ok()) {
      log("error", "cannot write the bundle: " + w.error().message, {{"target", name}});
      return;
    }
    if (auto samples = bundle::SampleLog::open((*w)->samples_path()); samples.ok()) {
      for (const auto& c : r.checks)
        for (const auto& [sample, _] : c.requests) {
          nlohmann::json line = api::to_json(sample);
          line["check"] = c.id;
          (*samples)->append(line);
        }
    }
    bundle::Context bc;
    bc.command_line = "infdoctor serve (target " + name + ", module probe)";
    bundle::describe_endpoint(bc, ep);
    bc.models.push_back(r.models.target);
    if (auto st = (*w)->finish(r, bc); !st.ok()) log("error", "cannot write the bundle: " + st.error().message, {{"target", name}});
  }

  Outcome checklist(const ServeTarget& t, int max_requests, const std::string& bundle) {
    Outcome out;
    const auto t0 = Clock::now();
    auto ep = api::make_endpoint(t.spec.endpoint);
    auto plan = run::make_plan(plan_options(t.module));
    if (plan.ok()) plan->run_timeout = t.interval;  // the next run is due then
    if (!ep.ok() || !plan.ok()) {
      log("error", "cannot run " + t.spec.name + ": " + (!ep.ok() ? ep.error().message : plan.error().message),
          {{"target", t.spec.name}});
      return out;
    }
    std::string metrics_url;
    if (run::engine_preset(t.spec.endpoint.preset)) metrics_url = run::metrics_url_for(ep->base_url);
    run::Outputs outputs;
    outputs.report = false;
    outputs.bundle = bundle;
    run::SessionOptions so{plan.value(), options.rules_dir, "", outputs, "infdoctor serve (target " + t.spec.name + ")",
                           /*quiet=*/true, /*verbose=*/false, t.spec.name, t.module, options.vantage};
    so.log = [this, name = t.spec.name](const std::string& level, const std::string& text) {
      log(level.empty() ? "info" : level, text, {{"target", name}});
    };
    auto session = run::Session::open(std::move(so), {ep.value(), t.spec.endpoint.preset, t.spec.models, max_requests, metrics_url});
    if (!session.ok()) {
      log("error", "cannot run " + t.spec.name + ": " + session.error().message, {{"target", t.spec.name}});
      return out;
    }
    auto r = std::make_shared<results::RunResult>((*session)->measure());
    (*session)->diagnose(*r);
    out.exit_code = (*session)->finish(*r);
    out.result = std::move(r);
    out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return out;
  }

  // Records what a run or probe spent and, for a scheduled one, keeps it as the latest.
  void keep(State& st, const Outcome& o, bool latest) {
    std::lock_guard lock(mu);
    if (!o.result) return;
    const report::Tally t = report::tally(*o.result);
    st.spent.emplace_back(Clock::now(), requests_of(t));
    if (!latest) return;
    st.totals.add(t);
    st.last = o.result;
    st.exit_code = o.exit_code;
    st.run_seconds = o.seconds;
    st.finished_at = unix_now();
  }

  void run_scheduled(State& st) {
    const ServeTarget t = [&] {
      std::lock_guard lock(mu);
      return st.target;
    }();
    std::unique_lock busy(st.busy);  // a probe in flight finishes first
    int remaining = 0;
    int cost = 1;
    {
      std::lock_guard lock(mu);
      remaining = t.budget_per_hour - st.spent_last_hour(Clock::now());
    }
    if (t.module != "probe") {
      if (auto plan = run::make_plan(plan_options(t.module)); plan.ok())
        cost = run::planned_cost(run::planned_steps(plan.value(), t.spec.models)).requests;
    }
    if (cost > remaining) {
      log("warning", "run skipped: it needs about " + std::to_string(cost) + " model requests and the hour's budget has " +
                         std::to_string(std::max(remaining, 0)) + " left",
          {{"target", t.spec.name}, {"module", t.module}, {"budget_per_hour", t.budget_per_hour}});
      std::lock_guard lock(mu);
      st.runs["skipped_budget"] += 1;
      return;
    }
    log("info", "run started", {{"target", t.spec.name}, {"module", t.module}});
    const auto slot = store.begin(t.spec.name);
    const std::string staging = slot ? slot->staging : "";
    // A probe's request ends by the time the next one is due.
    const auto probe_timeout =
        std::min(std::chrono::milliseconds(static_cast<long>(t.spec.endpoint.timeout_s * 1000)),
                 std::chrono::duration_cast<std::chrono::milliseconds>(t.interval));
    const Outcome o = t.module == "probe" ? probe(t, probe_timeout, staging)
                                          : checklist(t, std::min(remaining, run::kDefaultMaxRequests), staging);
    std::string bundle, error;
    if (slot) bundle = store.finish(t.spec.name, *slot, error);
    if (!error.empty()) log("error", "cannot keep the bundle: " + error, {{"target", t.spec.name}});
    keep(st, o, true);
    {
      std::lock_guard lock(mu);
      st.runs[o.result ? "completed" : "failed"] += 1;
    }
    LogFields f = {{"target", t.spec.name}, {"module", t.module}, {"exit_code", o.exit_code}, {"seconds", seconds_rounded(o.seconds)}};
    if (o.result && !o.result->diagnosis.empty()) f.emplace_back("top_finding", o.result->diagnosis.front().rule);
    if (!bundle.empty()) f.emplace_back("bundle", bundle);
    log(o.exit_code == core::kExitCouldNotRun ? "error" : "info", "run finished", f);
  }

  // --- HTTP ---------------------------------------------------------------------------------

  std::string exporter_families() {
    report::PromWriter w;
    w.family("infdoctor_runs_total", "counter",
             "Scheduled runs by outcome: completed, failed (could not start), skipped_budget (the hour's request budget "
             "could not pay for the run).");
    w.family("infdoctor_run_in_progress", "gauge", "1 while a scheduled run against the target is in progress.");
    w.family("infdoctor_request_budget_remaining", "gauge", "Model requests the target's hourly budget has left.");
    w.family("infdoctor_config_last_reload_successful", "gauge", "1 when the last reading of the targets succeeded.");
    w.family("infdoctor_config_last_reload_success_timestamp_seconds", "gauge",
             "When the targets were last read successfully, in Unix seconds.");
    const auto now = Clock::now();
    for (auto& [name, st] : states) {
      const auto base = report::base_labels(labels_of(st->target, options.vantage, st->target.module));
      for (const char* outcome : {"completed", "failed", "skipped_budget"}) {
        auto lab = base;
        lab.emplace_back("outcome", outcome);
        auto it = st->runs.find(outcome);
        w.sample("infdoctor_runs_total", lab, it == st->runs.end() ? 0 : it->second);
      }
      w.sample("infdoctor_run_in_progress", base, st->running ? 1 : 0);
      w.sample("infdoctor_request_budget_remaining", base, std::max(0, st->target.budget_per_hour - st->spent_last_hour(now)));
    }
    w.sample("infdoctor_config_last_reload_successful", {}, reload_ok ? 1 : 0);
    w.sample("infdoctor_config_last_reload_success_timestamp_seconds", {}, std::round(reload_ok_at));
    return w.text();
  }

  HttpResponse metrics() {
    std::lock_guard lock(mu);
    std::vector<report::PromTarget> targets;
    for (auto& [name, st] : states) {
      report::PromTarget t;
      t.labels = labels_of(st->target, options.vantage, st->target.module);
      t.run = st->last.get();
      t.exit_code = st->exit_code;
      t.run_seconds = st->run_seconds;
      t.finished_at_s = st->finished_at;
      t.totals = st->totals;
      if (st->target.module != "probe") t.rules = &rules;
      targets.push_back(std::move(t));
    }
    return {200, "text/plain; version=0.0.4; charset=utf-8", core::scrub(report::render_prometheus(targets, exporter_families()))};
  }

  HttpResponse on_demand_probe(const HttpRequest& req) {
    const auto param = [&](const char* key, const std::string& otherwise) {
      auto it = req.query.find(key);
      return it == req.query.end() ? otherwise : it->second;
    };
    const std::string name = param("target", ""), module = param("module", "probe");
    if (module != "probe")
      return text(400, "module '" + module + "' takes minutes, longer than a scrape: it runs on the target's schedule and /metrics "
              "shows it; /probe runs module=probe\n");
    // Within the scrape's own timeout, less half a second for the answer (as blackbox_exporter).
    double timeout_s = 10;
    if (auto it = req.headers.find("x-prometheus-scrape-timeout-seconds"); it != req.headers.end()) {
      char* end = nullptr;
      const double v = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && v > 0) timeout_s = v;
    }
    timeout_s = std::clamp(timeout_s - 0.5, 0.5, 120.0);
    const auto deadline = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
    std::shared_ptr<State> st;
    std::string names;
    {
      std::lock_guard lock(mu);
      for (const auto& [n, s] : states) names += (names.empty() ? "" : ", ") + n;
      if (auto it = states.find(name); it != states.end()) st = it->second;
    }
    if (!st && (name.rfind("http://", 0) == 0 || name.rfind("https://", 0) == 0))
      return url_probe(name, param("model", ""), deadline);
    if (!st) return text(400, "unknown target '" + core::redact_url(name) + "'; known: " + names + "\n");
    std::unique_lock busy(st->busy, std::defer_lock);
    if (!busy.try_lock_for(deadline / 2))
      return text(503, "a run against " + name + " is in progress; probe again after it\n");
    ServeTarget t;
    {
      std::lock_guard lock(mu);
      if (st->target.budget_per_hour - st->spent_last_hour(Clock::now()) < 1)
        return text(429, "the hour's request budget of " + name + " is spent\n");
      t = st->target;
    }
    const Outcome o = probe(t, deadline / 2);
    keep(*st, o, false);
    return probe_answer(labels_of(t, options.vantage, "probe"), o);
  }

  // /probe?target=URL&model=M, blackbox_exporter's habit, for a URL --allow-target admits: one
  // streamed request, with the key of --allow-target-key-env or none, outside any budget (the
  // scrape interval is the rate).
  HttpResponse url_probe(const std::string& url, const std::string& model, std::chrono::milliseconds deadline) {
    const std::string shown = core::redact_url(url);
    if (!allowed)
      return text(403, "target '" + shown + "' is not a configured target; probing a URL needs --allow-target REGEX that admits it\n");
    if (!std::regex_match(url, *allowed))
      return text(403, "target '" + shown + "' is not admitted by --allow-target '" + options.allow_target + "'\n");
    if (model.empty()) return text(400, "a URL target needs its model: /probe?target=URL&model=M\n");
    api::EndpointSpec spec = options.shared;
    spec.base_url = url;
    spec.api_key_env = options.allow_key_env;
    auto ep = api::make_endpoint(spec);
    if (ep.ok() && options.allow_key_env.empty()) ep->api_key.clear();  // no key of this host's goes to a URL by default
    checks::Models models;
    models.target = model;
    const std::string label = report::target_label(url);
    const Outcome o = probe_at(std::move(ep), label, models, deadline / 2, "");
    return probe_answer({label, model, "probe", options.vantage}, o);
  }

  // An on-demand probe's metrics, logged.
  HttpResponse probe_answer(const report::PromLabels& labels, const Outcome& o) {
    report::PromTarget pt;
    pt.labels = labels;
    pt.run = o.result.get();
    pt.exit_code = o.exit_code;
    pt.run_seconds = o.seconds;
    pt.finished_at_s = unix_now();
    pt.totals = report::tally(*o.result);
    log(o.exit_code == core::kExitOk ? "info" : "warning", "probe answered",
        {{"target", labels.target}, {"exit_code", o.exit_code}, {"seconds", seconds_rounded(o.seconds)}});
    return {200, "text/plain; version=0.0.4; charset=utf-8", core::scrub(report::render_prometheus({pt}))};
  }

  HttpResponse handle(const HttpRequest& req) {
    const std::string& p = req.path;
    if (p == "/metrics") return metrics();
    if (p == "/probe") return on_demand_probe(req);
    if (p == "/-/healthy") return text(200, "Healthy\n");
    if (p == "/-/ready") {
      std::lock_guard lock(mu);
      if (stopping) return text(503, "stopping\n");
      return text(200, "Ready\n");
    }
    if (p == "/bundles" || p.rfind("/bundles/", 0) == 0) {
      std::vector<std::string> names;
      {
        std::lock_guard lock(mu);
        for (const auto& [n, _] : states) names.push_back(n);
      }
      return store.serve(p, names);
    }
    if (p == "/")
      return {200, "text/html; charset=utf-8",
              "<!doctype html><meta charset=utf-8><title>infdoctor</title><h1>infdoctor exporter</h1><ul>"
              "<li><a href=\"metrics\">metrics</a></li><li><a href=\"bundles\">bundles</a></li>"
              "<li>probe?target=NAME&amp;module=probe</li><li><a href=\"-/healthy\">-/healthy</a></li>"
              "<li><a href=\"-/ready\">-/ready</a></li></ul>\n"};
    return text(404, "not found; try /metrics, /probe?target=NAME, /bundles, /-/healthy\n");
  }
};

Exporter::Exporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Exporter::~Exporter() { stop(); }

core::Result<std::unique_ptr<Exporter>> Exporter::start(ExporterOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->store = BundleStore(impl->options.bundles_dir, impl->options.keep_bundles);
  if (!impl->options.allow_target.empty()) {
    try {
      impl->allowed.emplace(impl->options.allow_target, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return core::make_error(core::ErrorCode::InvalidArgument,
                              "--allow-target '" + impl->options.allow_target + "' is not a regular expression: " + e.what());
    }
  }
  auto targets = impl->all_targets();
  if (!targets.ok()) return targets.error();
  std::vector<std::string> warnings;
  auto rules = run::load_rules(impl->options.rules_dir, warnings);
  for (const auto& w : warnings) impl->log("warning", w);
  if (!rules.ok()) return rules.error();
  impl->rules = std::move(rules.value());
  impl->reload_ok_at = unix_now();
  impl->set_targets(std::move(targets.value()));
  Impl* raw = impl.get();
  raw->scheduler = std::thread([raw] { raw->schedule_loop(); });
  return std::unique_ptr<Exporter>(new Exporter(std::move(impl)));
}

HttpResponse Exporter::handle(const HttpRequest& request) { return impl_->handle(request); }

core::Status Exporter::reload() {
  auto targets = impl_->all_targets();
  if (!targets.ok()) {
    {
      std::lock_guard lock(impl_->mu);
      impl_->reload_ok = false;
    }
    impl_->log("error", "reload failed, the targets stay as they were: " + targets.error().message);
    return targets.error();
  }
  const std::size_t n = targets->size();
  impl_->set_targets(std::move(targets.value()));
  {
    std::lock_guard lock(impl_->mu);
    impl_->reload_ok = true;
    impl_->reload_ok_at = unix_now();
  }
  impl_->log("info", "targets read again", {{"targets", n}});
  return {};
}

void Exporter::log(const std::string& level, const std::string& msg, const LogFields& fields) {
  impl_->log(level, msg, fields);
}

void Exporter::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->wake.notify_all();
  }
  if (impl_->scheduler.joinable()) impl_->scheduler.join();
}

}  // namespace infdoctor::serve
