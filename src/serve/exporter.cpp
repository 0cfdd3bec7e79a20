#include "serve/exporter.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "core/clock.h"
#include "core/exit_code.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "report/prometheus.h"
#include "run/pacer.h"
#include "run/session.h"
#include "serve/bundle_store.h"
#include "serve/measure.h"
#include "serve/schedule.h"

namespace infdoctor::serve {
namespace {

using Clock = std::chrono::steady_clock;

HttpResponse text(int status, const std::string& body) { return {status, "text/plain; charset=utf-8", body}; }

// Seconds to the millisecond, for a log line.
double seconds_rounded(double s) { return std::round(s * 1000) / 1000; }

report::PromLabels labels_of(const ServeTarget& t, const std::string& vantage, const std::string& module) {
  return {t.spec.name, t.spec.models.target, module, vantage};
}

// The exporter's own families, beside each target's run families.
constexpr report::PromFamily kExporterFamilies[] = {
    {"infdoctor_runs_total", "counter",
     "Scheduled runs by outcome: completed, failed (could not start), skipped_budget (the hour's request "
     "budget could not pay for the run)."},
    {"infdoctor_run_in_progress", "gauge",
     "1 while a scheduled run against the target is in progress."},
    {"infdoctor_request_budget_remaining", "gauge",
     "Model requests the target's hourly budget has left."},
    {"infdoctor_config_last_reload_successful", "gauge",
     "1 when the last reading of the targets succeeded."},
    {"infdoctor_config_last_reload_success_timestamp_seconds", "gauge",
     "When the targets were last read successfully, in Unix seconds."},
    {"infdoctor_metrics_build_seconds", "gauge",
     "Wall time the previous /metrics took to build its body: the lock a run's end holds, rendering runs not yet "
     "rendered, joining every target's text. Sending the body is not in it."},
    {"infdoctor_metrics_build_cpu_seconds", "gauge",
     "CPU time the thread that built the previous /metrics body used for it."},
    {"infdoctor_metrics_build_runqueue_seconds", "gauge",
     "Time the thread that built the previous /metrics body was ready to run and waited for a CPU (Linux "
     "schedstat); the build's wall time less this and its CPU time was spent waiting on a lock."},
};

// The calling thread's CPU time and the time it waited, ready to run, for a CPU (the second field of
// /proc/thread-self/schedstat; 0 where the kernel keeps no schedstat), in seconds.
struct ThreadTimes {
  double cpu_s = 0, runqueue_s = 0;
  static ThreadTimes now() {
    ThreadTimes t;
    timespec ts{};
    if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) t.cpu_s = static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
    std::ifstream in("/proc/thread-self/schedstat");
    unsigned long long on_cpu = 0, waited = 0;
    if (in >> on_cpu >> waited) t.runqueue_s = static_cast<double>(waited) / 1e9;
    return t;
  }
};

// A target's run families as exposition text, in the order they were declared: the sample lines
// of each family one after another in `samples`, each family's by its place in the exporter's
// table of family headers (their HELP and TYPE lines, said once a scrape, not once a target).
struct RenderedTarget {
  std::uint64_t version = 0;  // the TargetState::version it was rendered from
  std::string samples;
  struct Piece {
    std::size_t family, from, size;
  };
  std::vector<Piece> pieces;
};

struct FamilyHeader {
  std::string name, header;
};

// Splits text as render_prometheus writes it (each family opening with its HELP line) into
// `families`' headers (new ones added) and a target's pieces; the build's own family is left out,
// as a scrape says it once.
RenderedTarget split_families(const std::string& text, std::vector<FamilyHeader>& families) {
  RenderedTarget out;
  out.samples.reserve(text.size());
  std::size_t family = 0;  // the family whose lines follow
  bool skip = true, fresh = false;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    const std::string_view line(text.data() + at, end - at);
    at = end;
    if (line.starts_with("# HELP ")) {
      const std::string_view rest = line.substr(7);
      const std::string_view name = rest.substr(0, rest.find(' '));
      skip = name == "infdoctor_build_info";
      auto it = std::find_if(families.begin(), families.end(), [&](const FamilyHeader& f) { return f.name == name; });
      fresh = it == families.end();
      if (fresh) it = families.insert(families.end(), {std::string(name), std::string(line)});
      family = static_cast<std::size_t>(it - families.begin());
      continue;
    }
    if (skip) continue;
    if (line.starts_with("# ")) {  // its TYPE line
      if (fresh) families[family].header += line;
      continue;
    }
    if (out.pieces.empty() || out.pieces.back().family != family) out.pieces.push_back({family, out.samples.size(), 0});
    out.samples += line;
    out.pieces.back().size += line.size();
  }
  out.samples.shrink_to_fit();
  return out;
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
  Schedule schedule;
  std::thread scheduler;
  std::mutex rendered_mu;  // one scrape at a time renders and joins
  std::map<const TargetState*, RenderedTarget> rendered;
  std::vector<FamilyHeader> family_headers;
  std::shared_ptr<std::string> body_buffer;  // /metrics' body, filled again by each scrape
  // How long the previous scrape took to build its body (under rendered_mu).
  std::optional<std::pair<double, ThreadTimes>> last_build;
  std::mutex reload_mu;  // guards the two below
  bool reload_ok = true;
  double reload_ok_at = 0;
  // Under flight_mu: whether the exporter is stopping, the scheduler's loop has ended, and the
  // on-demand probes under way; stop() waits on flight_cv for them to end.
  std::mutex flight_mu;
  std::condition_variable flight_cv;
  bool draining = false;
  bool loop_done = false;
  int probes_in_flight = 0;

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

  // A module's run against one target, its results kept; `timeout` bounds a probe's request.
  // The measurements themselves (serve/measure.h), logging as this exporter does. Once the
  // exporter has cut a run short, what the run says of it is not logged: it would blame the target.
  Log logger() {
    return [this](const std::string& level, const std::string& msg, const LogFields& fields) {
      if (!core::interrupted()) log(level, msg, fields);
    };
  }
  Outcome probe(const ServeTarget& t, std::chrono::milliseconds timeout) {
    return probe_at(api::make_endpoint(t.spec.endpoint), t.spec.models, timeout);
  }
  Outcome checklist(const ServeTarget& t, int max_requests, const std::string& bundle) {
    return run_checklist(t, {options.rules_dir, options.vantage}, max_requests, bundle, logger());
  }

  // A probe's bundle, written once the run is known to be worth keeping; the kept path or "".
  std::string keep_probe_bundle(const ServeTarget& t, const Outcome& o, std::chrono::system_clock::time_point started,
                                const Kept& kept, std::string& error) {
    auto ep = api::make_endpoint(t.spec.endpoint);
    const auto slot = store.begin(t.spec.name, started);
    if (!ep.ok() || !slot) return {};
    write_probe_bundle(slot->staging, t.spec.name, ep.value(), *o.result, logger());
    return store.finish(t.spec.name, *slot, kept, error);
  }

  void run_scheduled(TargetState& st) {
    const ServeTarget t = schedule.target_of(st);
    std::unique_lock busy(st.busy);  // a probe in flight finishes first
    const int remaining = schedule.budget_left(st);
    const bool is_probe = t.module == "probe";
    int cost = 1;
    if (!is_probe) {
      if (auto plan = run::make_plan(plan_options(t.module)); plan.ok())
        cost = run::planned_cost(run::planned_steps(plan.value(), t.spec.models)).requests;
    }
    if (cost > remaining) {
      log("warning", "run skipped: it needs about " + std::to_string(cost) + " model requests and the hour's budget has " +
                         std::to_string(std::max(remaining, 0)) + " left",
          {{"target", t.spec.name}, {"module", t.module}, {"budget_per_hour", t.budget_per_hour}});
      schedule.count(st, "skipped_budget");
      return;
    }
    log("info", "run started", {{"target", t.spec.name}, {"module", t.module}});
    const auto started = std::chrono::system_clock::now();
    // A checklist writes its bundle as it goes; a probe's is written after it, if worth keeping.
    const auto slot = is_probe ? std::nullopt : store.begin(t.spec.name, started);
    // A probe's request ends by the time the next one is due.
    const auto probe_timeout =
        std::min(std::chrono::milliseconds(static_cast<long>(t.spec.endpoint.timeout_s * 1000)),
                 std::chrono::duration_cast<std::chrono::milliseconds>(t.interval));
    const Outcome o = is_probe ? probe(t, probe_timeout)
                               : checklist(t, std::min(remaining, run::kDefaultMaxRequests), slot ? slot->staging : "");
    if (core::interrupted()) {  // stop() cut it short: no result of the target's
      if (slot) store.discard(*slot);
      log("info", "run stopped by the shutdown: its results and partial bundle are discarded",
          {{"target", t.spec.name}, {"module", t.module}, {"seconds", seconds_rounded(o.seconds)}});
      return;
    }
    const auto now = BundleHistory::Clock::now();
    std::optional<Kept> kept = checklist_bundle();
    if (is_probe && o.result) kept = probe_bundle_worth_keeping(st.bundles, *o.result, o.exit_code, now, options.probe_bundle_every);
    std::string bundle, error;
    if (is_probe && kept && o.result)
      bundle = keep_probe_bundle(t, o, started, *kept, error);
    else if (slot)
      bundle = store.finish(t.spec.name, *slot, *kept, error);
    if (!error.empty()) log("error", "cannot keep the bundle: " + error, {{"target", t.spec.name}});
    st.bundles.ran(!o.result || run_failed(*o.result, o.exit_code), !bundle.empty(), now);
    schedule.keep(st, o, true);
    schedule.count(st, o.result ? "completed" : "failed");
    render_latest(st);
    LogFields f = {{"target", t.spec.name}, {"module", t.module}, {"exit_code", o.exit_code}, {"seconds", seconds_rounded(o.seconds)}};
    if (o.result && !o.result->diagnosis.empty()) f.emplace_back("top_finding", o.result->diagnosis.front().rule);
    if (!bundle.empty()) {
      f.emplace_back("bundle", bundle);
      f.emplace_back("kept", kept->reason);
    }
    log(o.exit_code == core::kExitCouldNotRun ? "error" : "info", "run finished", f);
  }

  // --- HTTP ---------------------------------------------------------------------------------

  // A target's run families, as /metrics shows them, from its state (under the schedule's lock) and
  // rendered after it, the run held.
  struct Unrendered {
    const TargetState* key;
    std::uint64_t version;
    report::PromTarget target;
    std::shared_ptr<const results::RunResult> held;
  };
  Unrendered unrendered(const TargetState& st) {
    report::PromTarget t;
    t.labels = labels_of(st.target, options.vantage, st.target.module);
    t.run = st.last.get();
    t.exit_code = st.exit_code;
    t.run_seconds = st.run_seconds;
    t.finished_at_s = st.finished_at;
    t.totals = st.totals;
    if (st.target.module != "probe") t.rules = &rules;
    return {&st, st.version, std::move(t), st.last};
  }
  // Under rendered_mu.
  void render(const Unrendered& u) {
    RenderedTarget r = split_families(core::scrub(report::render_prometheus({u.target})), family_headers);
    r.version = u.version;
    rendered[u.key] = std::move(r);
  }
  // After a run has ended: its families are rendered now, on the scheduler's thread, so a scrape
  // joins text and renders none of the runs that ended since the last one.
  void render_latest(TargetState& st) {
    std::lock_guard lock(rendered_mu);
    std::optional<Unrendered> u;
    schedule.with(st, [&](TargetState& s) { u = unrendered(s); });
    render(*u);
  }

  // Every target's latest run and the exporter's own families. A target's run families change only
  // when a run of it ends, so each target's are rendered then and kept as text by family (a target
  // a scrape finds unrendered, such as one without a run, is rendered by the scrape); a scrape
  // joins them family by family. With a thousand targets, rendering every run at every scrape took
  // longer than 100 ms.
  HttpResponse metrics() {
    const auto began = std::chrono::steady_clock::now();
    const ThreadTimes thread_began = ThreadTimes::now();
    report::PromWriter w;
    for (const auto& f : kExporterFamilies) w.family(f);
    std::vector<const TargetState*> in_order;
    std::vector<Unrendered> stale;
    const auto now = TargetState::Clock::now();
    std::lock_guard scrape(rendered_mu);
    schedule.each([&](TargetState& st) {
      const auto base = report::base_labels(labels_of(st.target, options.vantage, st.target.module));
      for (const char* outcome : {"completed", "failed", "skipped_budget"}) {
        auto lab = base;
        lab.emplace_back("outcome", outcome);
        auto it = st.runs.find(outcome);
        w.sample("infdoctor_runs_total", lab, it == st.runs.end() ? 0 : it->second);
      }
      w.sample("infdoctor_run_in_progress", base, st.running ? 1 : 0);
      w.sample("infdoctor_request_budget_remaining", base, std::max(0, st.target.budget_per_hour - st.spent_last_hour(now)));
      in_order.push_back(&st);
      if (auto it = rendered.find(&st); it == rendered.end() || it->second.version != st.version) stale.push_back(unrendered(st));
    });
    {
      std::lock_guard lock(reload_mu);
      w.sample("infdoctor_config_last_reload_successful", {}, reload_ok ? 1 : 0);
      w.sample("infdoctor_config_last_reload_success_timestamp_seconds", {}, std::round(reload_ok_at));
    }
    if (last_build) {
      w.sample("infdoctor_metrics_build_seconds", {}, last_build->first);
      w.sample("infdoctor_metrics_build_cpu_seconds", {}, last_build->second.cpu_s);
      w.sample("infdoctor_metrics_build_runqueue_seconds", {}, last_build->second.runqueue_s);
    }
    for (const auto& u : stale) render(u);
    const std::set<const TargetState*> current(in_order.begin(), in_order.end());
    std::erase_if(rendered, [&](const auto& kv) { return !current.count(kv.first); });  // targets a reload removed

    // The families in the order they were declared, which every target's text keeps.
    std::vector<std::size_t> families;
    std::size_t size = 0;
    for (const auto* key : in_order) {
      std::size_t at = 0;
      for (const auto& p : rendered.at(key).pieces) {
        size += p.size;
        auto it = std::find(families.begin(), families.end(), p.family);
        if (it == families.end()) it = families.insert(families.begin() + static_cast<std::ptrdiff_t>(at), p.family);
        at = static_cast<std::size_t>(it - families.begin()) + 1;
      }
    }
    for (const std::size_t family : families) size += family_headers[family].header.size();
    const std::string own = core::scrub(w.text());
    static const std::string build = report::render_prometheus({});  // the build's one family
    // The last scrape's buffer, unless an answer is still being sent from it: its pages are mapped
    // already, where a new one of megabytes costs a page fault every 4 KiB.
    if (!body_buffer || body_buffer.use_count() > 1) body_buffer = std::make_shared<std::string>();
    std::string& body = *body_buffer;
    body.clear();
    body.reserve(size + build.size() + own.size());
    std::vector<std::size_t> next(in_order.size(), 0);  // each target's next piece, as both go in order
    for (const std::size_t family : families) {
      body += family_headers[family].header;
      for (std::size_t i = 0; i < in_order.size(); ++i) {
        const RenderedTarget& mine = rendered.at(in_order[i]);
        if (next[i] >= mine.pieces.size() || mine.pieces[next[i]].family != family) continue;
        const auto& p = mine.pieces[next[i]++];
        body.append(mine.samples, p.from, p.size);
      }
    }
    body += build;
    body += own;
    const ThreadTimes thread_ended = ThreadTimes::now();
    last_build = {std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count(),
                  {thread_ended.cpu_s - thread_began.cpu_s, thread_ended.runqueue_s - thread_began.runqueue_s}};
    HttpResponse out{200, "text/plain; version=0.0.4; charset=utf-8", ""};
    out.shared_body = body_buffer;
    return out;
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
    {
      std::lock_guard lock(flight_mu);
      if (draining || core::stop_requested() != 0) return text(503, "the exporter is stopping\n");
      ++probes_in_flight;
    }
    struct Landed {  // however the probe answers, stop() stops waiting for it
      Impl* x;
      ~Landed() {
        {
          std::lock_guard lock(x->flight_mu);
          --x->probes_in_flight;
        }
        x->flight_cv.notify_all();
      }
    } landed{this};
    std::shared_ptr<TargetState> st = schedule.find(name);
    if (!st && (name.rfind("http://", 0) == 0 || name.rfind("https://", 0) == 0))
      return url_probe(name, param("model", ""), deadline);
    if (!st) return text(400, "unknown target '" + core::redact_url(name) + "'; known: " + core::join(schedule.names(), ", ") + "\n");
    std::unique_lock busy(st->busy, std::defer_lock);
    if (!busy.try_lock_for(deadline / 2))
      return text(503, "a run against " + name + " is in progress; probe again after it\n");
    if (schedule.budget_left(*st) < 1) return text(429, "the hour's request budget of " + name + " is spent\n");
    const ServeTarget t = schedule.target_of(*st);
    const Outcome o = probe(t, deadline / 2);
    if (core::interrupted()) return text(503, "the exporter is stopping\n");  // cut short by stop(): no answer of the target's
    schedule.keep(*st, o, false);
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
    const Outcome o = probe_at(std::move(ep), models, deadline / 2);
    if (core::interrupted()) return text(503, "the exporter is stopping\n");
    return probe_answer({label, model, "probe", options.vantage}, o);
  }

  // An on-demand probe's metrics, logged.
  HttpResponse probe_answer(const report::PromLabels& labels, const Outcome& o) {
    report::PromTarget pt;
    pt.labels = labels;
    pt.run = o.result.get();
    pt.exit_code = o.exit_code;
    pt.run_seconds = o.seconds;
    pt.finished_at_s = core::unix_seconds_now();
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
    if (p == "/-/ready") return schedule.stopping() ? text(503, "stopping\n") : text(200, "Ready\n");
    if (p == "/bundles" || p.rfind("/bundles/", 0) == 0) return store.serve(p, schedule.names());
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
  impl->reload_ok_at = core::unix_seconds_now();
  impl->schedule.set_targets(std::move(targets.value()));
  Impl* raw = impl.get();
  raw->scheduler = std::thread([raw] {
    raw->schedule.loop([raw](TargetState& st) { raw->run_scheduled(st); });
    {
      std::lock_guard lock(raw->flight_mu);
      raw->loop_done = true;
    }
    raw->flight_cv.notify_all();
  });
  return std::unique_ptr<Exporter>(new Exporter(std::move(impl)));
}

HttpResponse Exporter::handle(const HttpRequest& request) { return impl_->handle(request); }

core::Status Exporter::reload() {
  auto targets = impl_->all_targets();
  if (!targets.ok()) {
    {
      std::lock_guard lock(impl_->reload_mu);
      impl_->reload_ok = false;
    }
    impl_->log("error", "reload failed, the targets stay as they were: " + targets.error().message);
    return targets.error();
  }
  const std::size_t n = targets->size();
  impl_->schedule.set_targets(std::move(targets.value()));
  {
    std::lock_guard lock(impl_->reload_mu);
    impl_->reload_ok = true;
    impl_->reload_ok_at = core::unix_seconds_now();
  }
  impl_->log("info", "targets read again", {{"targets", n}});
  return {};
}

void Exporter::log(const std::string& level, const std::string& msg, const LogFields& fields) {
  impl_->log(level, msg, fields);
}

void Exporter::stop() {
  Impl& x = *impl_;
  x.schedule.stop();
  std::unique_lock lock(x.flight_mu);
  x.draining = true;
  const auto ended = [&] { return x.loop_done && x.probes_in_flight == 0; };
  if (!x.flight_cv.wait_for(lock, x.options.shutdown_grace, ended)) {
    lock.unlock();
    x.log("info", "stopping what is still in flight after the shutdown grace",
          {{"grace_s", static_cast<double>(x.options.shutdown_grace.count())}});
    core::interrupt_now();
    lock.lock();
    // Cut short, a run ends within moments: its requests are cancelled and no check starts. The
    // bound is for a wrapper that does not look at the interrupt (a stuck resolver thread).
    if (!x.flight_cv.wait_for(lock, std::chrono::seconds(30), ended))
      x.log("warning", "still not ended 30 s after being stopped; waiting for it");
  }
  lock.unlock();
  if (x.scheduler.joinable()) x.scheduler.join();
}

}  // namespace infdoctor::serve
