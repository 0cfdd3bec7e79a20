#include "run/session.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "api/endpoint_spec.h"
#include "checks/replay.h"
#include "core/message.h"
#include "core/exit_code.h"
#include "core/files.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "report/history.h"
#include "report/prometheus.h"

namespace infdoctor::run {
namespace {

// An output file can be made next to where it goes: its directory exists and takes a new file.
core::Status try_output(const std::string& flag, const std::string& path) {
  if (path.empty() || path == "-") return {};
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return core::make_error(core::ErrorCode::Io, flag + " " + path + " is a directory; give a file name");
  const std::string probe = path + ".infdoctor-" + std::to_string(::getpid()) + ".tmp";
  if (auto st = core::write_private_file(probe, ""); !st.ok())
    return core::make_error(core::ErrorCode::Io, "cannot write " + flag + " " + path, st.error().detail);
  std::filesystem::remove(probe, ec);
  return {};
}

// The requests that showed the run's top finding, for repro.sh to send again: asked of the check
// that measured each metric the finding cites, in turn (Check::repro); when none of them shows
// one, of each check in run order for the requests that stand for the run as a whole.
void choose_repro(const results::RunResult& r, const RunPlan& plan, bundle::Context& bc) {
  const auto top = std::find_if(r.diagnosis.begin(), r.diagnosis.end(),
                                [](const rules::Finding& f) { return f.severity != rules::Severity::Info; });
  const auto ask = [&](const checks::CheckResult& c, const std::string& metric) -> std::vector<checks::ReproRequest> {
    if (c.status != checks::CheckStatus::Ok) return {};
    for (const auto& check : plan.checks)
      if (check->info().id == c.id) return check->repro(c, metric, r.models);
    return {};
  };
  bc.repro.clear();
  bc.repro_shows.clear();
  if (top != r.diagnosis.end())
    for (const auto& [metric, _] : top->evidence) {
      for (const auto& c : r.checks)
        if (bc.repro.empty() && c.id == metric.substr(0, metric.find('.'))) bc.repro = ask(c, metric);
      if (!bc.repro.empty()) break;
    }
  // Only requests the finding's own evidence measured are said to show it.
  if (!bc.repro.empty()) bc.repro_shows = rules::cause_and_scope(*top);
  for (const auto& c : r.checks)
    if (bc.repro.empty()) bc.repro = ask(c, "");
}

}  // namespace

core::Result<std::unique_ptr<Session>> Session::open(SessionOptions options, Subject subject) {
  auto target = checks::parse_target(subject.endpoint.base_url);
  if (!target.ok()) return target.error();
  std::unique_ptr<Session> s(new Session(std::move(options), std::move(subject)));
  const SessionOptions& o = s->options_;
  std::vector<std::string> warnings;
  auto rule_set = load_rules(o.rules_dir, warnings);
  for (const auto& w : warnings) s->say("warning", w);
  if (!rule_set.ok()) return rule_set.error();
  s->rules_ = std::move(rule_set.value());
  auto slos = parse_slos(o.slo);
  if (!slos.ok()) return slos.error();
  s->slos_ = std::move(slos.value());
  for (const auto& [flag, path] : {std::pair{"--json", o.outputs.json}, {"--prom", o.outputs.prom}})
    if (auto st = try_output(flag, path); !st.ok()) return st.error();
  if (!o.outputs.history.empty()) {
    auto h = history::History::open(o.outputs.history);
    if (!h.ok()) return h.error();
    s->history_ = std::move(h.value());
  }
  if (!o.outputs.bundle.empty()) {
    auto w = bundle::Writer::start(o.outputs.bundle);
    if (!w.ok()) return w.error();
    s->bundle_ = std::move(w.value());
    auto log = bundle::SampleLog::open(s->bundle_->samples_path());
    if (!log.ok()) return log.error();
    s->samples_ = std::move(log.value());
  }
  s->progress_ = std::make_unique<core::Progress>(core::Progress::mode_for(stderr, o.quiet));
  core::Progress* progress = s->progress_.get();
  s->pacer_ = std::make_unique<Pacer>(core::real_clock(), s->subject_.max_requests);
  const auto step = [progress](const std::string& text) { progress->step(text); };
  const auto waiting = [progress](core::SteadyTime until) { progress->wait_until(until); };
  s->pacer_->set_progress(step, waiting);
  checks::Ports ports;
  ports.model = s->pacer_.get();
  ports.progress = step;
  ports.waiting = waiting;
  s->ctx_ = std::make_unique<checks::CheckContext>(target.value(), s->subject_.endpoint, std::move(ports));
  s->ctx_->set_models(s->subject_.models);
  if (!s->subject_.metrics_url.empty())
    s->engine_ = std::make_unique<EngineScraper>(s->subject_.metrics_url, s->subject_.endpoint);
  bundle::SampleLog* log = s->samples_.get();
  const bool verbose = o.verbose;
  if (log || verbose)
    s->pacer_->set_sample_sink([log, verbose, progress](const api::RequestSample& sample, const std::string& check) {
      if (log) {
        nlohmann::json line = api::to_json(sample);
        line["check"] = check;
        log->append(line);
      }
      if (verbose) progress->note(check + ": " + api::one_line(sample));
    });
  return s;
}

Session::~Session() = default;

report::PromLabels Session::prom_labels() const {
  return {options_.target_name.empty() ? report::target_label(subject_.endpoint.base_url) : options_.target_name,
          subject_.models.target, options_.module.empty() ? "default" : options_.module,
          options_.vantage.empty() ? report::default_vantage() : options_.vantage};
}

void Session::say(const std::string& level, const std::string& text) const {
  if (options_.log) return options_.log(level, text);
  core::say(level, text);
}

void Session::announce() const {
  const api::Endpoint& ep = subject_.endpoint;
  // A proxy from the environment is easy to forget, and every timing then includes it: a warning,
  // even with --quiet. One given with --proxy is a note.
  const std::string proxy = api::proxy_in_use(ep);
  if (!proxy.empty() && !ep.proxy)
    say("warning", "every HTTP request goes through the proxy " + proxy + ", and every timing includes it (--proxy '' to go direct)");
  if (options_.quiet) return;
  if (!proxy.empty() && ep.proxy) say("note", "every HTTP request goes through the proxy " + proxy);
  const auto planned = steps();
  if (ep.api_key.empty() && planned_cost(planned).requests > 0)
    say("note", "no API key" + (ep.key_env.empty() ? std::string() : " ($" + ep.key_env + " is unset or empty)") +
                    ": model requests go without one, as a local server may allow");
  const std::string line = plan_line(planned, subject_.max_requests);
  if (line.empty()) return;
  say("", line);
  if (const std::string idle = idle_line(options_.plan); !idle.empty()) say("", "plan: " + idle);
  if (planned_cost(planned).requests > subject_.max_requests)
    say("warning", "the plan needs more requests than the budget; checks stop when it is spent");
}

results::RunResult Session::measure() { return std::move(measure_together({this}).front()); }

std::vector<results::RunResult> Session::measure_together(const std::vector<Session*>& sessions) {
  std::vector<Side> sides;
  for (auto* s : sessions) {
    if (sessions.size() == 1) s->announce();
    s->measure_started_ = core::real_clock().now();
    sides.push_back({s->ctx_.get(), s->pacer_.get(), s->progress_.get(), s->engine_.get()});
  }
  core::install_interrupt_handlers();
  const RunPlan& plan = sessions.front()->options_.plan;
  std::vector<results::RunResult> results = run_interleaved(plan, sides);
  for (std::size_t i = 0; i < sessions.size(); ++i) results[i].models = sessions[i]->subject_.models;
  // What each check shows of its result, drawn by the check that measured it.
  for (auto& r : results)
    for (auto& c : r.checks)
      for (const auto& check : plan.checks)
        if (check->info().id == c.id) c.charts = check->charts(c);
  for (std::size_t i = 0; i < sessions.size(); ++i)
    if (const api::Preset* p = api::find_preset(sessions[i]->subject_.preset))
      results[i].preset = preset_signals(*p, results[i]);
  return results;
}

void Session::diagnose(results::RunResult& r) {
  metrics_ = flatten_metrics(r);
  if (history_) {
    auto past = history_->compare(metrics_, r.target.base_url, subject_.models.target, r.started_at);
    if (past.ok()) {
      r.history_metrics = std::move(past.value());
      metrics_.insert(r.history_metrics.begin(), r.history_metrics.end());
    } else {
      say("warning", past.error().message);
    }
  }
  r.diagnosis = rules::diagnose(rules_, metrics_);
  std::vector<std::string> unmeasured;
  for (auto& f : check_slos(slos_, metrics_, unmeasured)) r.diagnosis.push_back(std::move(f));
  name_places(r);
  rank(r.diagnosis);
  for (const auto& m : unmeasured) say("warning", "--slo names " + m + ", which was not measured");
}

std::vector<std::unique_ptr<report::Exporter>> Session::exporters(const results::RunResult& r, int code) {
  const Outputs& out = options_.outputs;
  std::vector<std::unique_ptr<report::Exporter>> e;
  if (out.report && out.json != "-") e.push_back(std::make_unique<report::TextExporter>(std::cout));
  if (!out.json.empty()) e.push_back(std::make_unique<report::JsonExporter>(out.json, std::cout));
  if (history_) e.push_back(std::make_unique<report::HistoryExporter>(*history_, subject_.models.target, code, metrics_));
  if (bundle_) {
    bundle::Context bc;
    bc.command_line = options_.command_line;
    bundle::describe_endpoint(bc, subject_.endpoint);
    for (const auto& m : {subject_.models.target, subject_.models.small})
      if (!m.empty()) bc.models.push_back(m);
    bc.rules = rules_.files;
    if (out.keep_body) bc.kept_bodies = options_.plan.options.text(checks::replay_setting::body);
    choose_repro(r, options_.plan, bc);
    bc.partial = !r.interrupted_by.empty();
    e.push_back(std::make_unique<bundle::BundleExporter>(*bundle_, out.bundle, std::move(bc)));
  }
  if (out.prom.empty() && out.push.empty()) return e;
  // The run's time is taken once, so the file and the gateway say the same.
  report::PromTarget base;
  base.labels = prom_labels();
  base.exit_code = code;
  base.run_seconds = std::chrono::duration<double>(core::real_clock().now() - measure_started_).count();
  base.finished_at_s = core::unix_seconds_now();
  base.rules = &rules_;
  for (const auto& slo : slos_) base.slo_metrics.push_back(slo.metric);
  if (!out.prom.empty()) e.push_back(std::make_unique<report::PromFileExporter>(out.prom, base));
  if (!out.push.empty()) e.push_back(std::make_unique<report::PushExporter>(out.push, base));
  return e;
}

int Session::finish(results::RunResult& r) {
  const int code = exit_code(r);
  bool failed = false;
  // Every sample is in: the bundle's log closes before the bundle is finished.
  pacer_->set_sample_sink({});
  samples_.reset();
  const report::Say say_it = [this](const std::string& level, const std::string& text) { say(level, text); };
  for (const auto& exporter : exporters(r, code))
    if (auto st = exporter->write(r, say_it); !st.ok()) {
      say("error", core::scrub(st.error().message));
      failed = true;
    }
  if (!r.unreachable.empty())
    say("error", "could not reach the model: " + core::scrub(r.unreachable));
  else if (!r.interrupted_by.empty())
    say("error", "interrupted (" + r.interrupted_by + "): the report and bundle are partial");
  else if (code == core::kExitCouldNotRun)
    say("error", "no check could measure anything (see the report)");
  return failed ? core::kExitCouldNotRun : code;
}

void rediagnose(results::RunResult& r, const rules::RuleSet& rules) {
  // Limits (--slo) were the run's own: they are kept as they were; the rules are applied afresh.
  std::vector<rules::Finding> kept;
  for (const auto& f : r.diagnosis)
    if (f.rule.rfind("slo.", 0) == 0) kept.push_back(f);
  r.diagnosis = rules::diagnose(rules, flatten_metrics(r));
  r.diagnosis.insert(r.diagnosis.end(), kept.begin(), kept.end());
  name_places(r);
  rank(r.diagnosis);
}

}  // namespace infdoctor::run
