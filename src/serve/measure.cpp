#include "serve/measure.h"

#include "api/sample.h"
#include "bundle/bundle.h"
#include "core/clock.h"
#include "core/redact.h"
#include "run/engine_metrics.h"
#include "run/pacer.h"
#include "run/session.h"

namespace infdoctor::serve {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

void write_probe_bundle(const std::string& path, const std::string& name, const api::Endpoint& ep,
                        const results::RunResult& r, const Log& log) {
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

run::PlanOptions plan_options(const std::string& module) {
  run::PlanOptions po;
  po.quick = module == "quick";
  po.full = module == "full";
  return po;
}

Outcome probe_at(core::Result<api::Endpoint> ep, const checks::Models& models, std::chrono::milliseconds timeout) {
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
  out.result = std::move(r);
  return out;
}

Outcome run_checklist(const ServeTarget& t, const ChecklistOptions& options, int max_requests, const std::string& bundle,
                      const Log& log) {
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
  so.log = [log, name = t.spec.name](const std::string& level, const std::string& text) {
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

}  // namespace infdoctor::serve
