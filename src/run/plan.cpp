#include "run/plan.h"

#include <algorithm>

#include "core/redact.h"
#include "core/strings.h"
#include "stats/series.h"

namespace infdoctor::run {
namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// Settings of the two profiles; the sweep flags and --set come after and win.
const Settings kQuick = {
    {"dns.samples", "3"},
    {"path.samples", "5"},
    {"path.max_hops", "12"},
    {"path.probes_per_hop", "1"},
    {"transport.samples", "3"},
    {"coldstart.idle_gaps", "0,1,3"},
    {"coldstart.baseline_samples", "2"},
    {"baseline.samples", "3"},
    {"baseline.max_tokens", "32"},
    {"sweep.prompt_tokens", "64,512,2048"},
    {"sweep.max_tokens", "1,16,64"},
    {"sweep.repeats", "1"},
    {"serialization.sizes_kb", "1,256,1024"},
    {"serialization.repeats", "1"},
    {"serialization.max_tokens", "16"},
    {"concurrency.levels", "1,2,4,8"},
    {"concurrency.max_tokens", "16"},
};
const Settings kFull = {
    {"dns.samples", "10"},
    {"path.samples", "20"},
    {"transport.samples", "10"},
    {"coldstart.idle_gaps", "0,5,30,60,120,300"},
    {"coldstart.baseline_samples", "5"},
    {"baseline.samples", "10"},
    {"sweep.prompt_tokens", "64,512,2048,8192,32768"},
    {"sweep.max_tokens", "1,32,128,512,1024"},
    {"sweep.repeats", "3"},
    {"serialization.repeats", "3"},
    {"concurrency.levels", "1,2,4,8,16,32,64"},
    {"concurrency.rounds", "2"},
};

bool is_registered(const std::string& id) {
  const auto& reg = checks::registry();
  return std::any_of(reg.begin(), reg.end(), [&](const checks::CheckEntry& e) { return e.id == id; });
}

}  // namespace

core::Result<RunPlan> make_plan(const PlanOptions& o) {
  if (o.quick && o.full) return core::make_error(core::ErrorCode::InvalidArgument, "--quick and --full exclude each other");
  RunPlan plan;
  plan.check_ids = core::split(o.checks);
  if (plan.check_ids.empty()) {
    for (const auto& e : checks::registry())
      if (e.id != "soak" || o.soak_minutes > 0) plan.check_ids.push_back(e.id);
  }
  for (const auto& [k, v] : o.quick ? kQuick : (o.full ? kFull : Settings{})) plan.options.set(k, v);
  const std::pair<const char*, const std::string*> lists[] = {{"sweep.prompt_tokens", &o.prompt_tokens},
                                                              {"sweep.max_tokens", &o.max_tokens},
                                                              {"coldstart.idle_gaps", &o.idle_gaps},
                                                              {"concurrency.levels", &o.concurrency}};
  for (const auto& [key, value] : lists)
    if (!value->empty()) plan.options.set(key, *value);
  if (o.max_concurrency > 0) plan.options.set("concurrency.max_streams", std::to_string(o.max_concurrency));
  if (o.soak_minutes > 0) plan.options.set("soak.minutes", std::to_string(o.soak_minutes));
  plan.check_timeout = std::chrono::seconds(static_cast<long long>(o.check_timeout_s));
  if (!o.resolvers.empty()) plan.options.set("dns.resolvers", core::join(o.resolvers, ","));
  if (o.no_system_resolvers) plan.options.set("dns.system", "0");
  if (o.max_hops > 0) plan.options.set("path.max_hops", std::to_string(o.max_hops));
  for (const auto& kv : o.sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      return core::make_error(core::ErrorCode::InvalidArgument, "--set wants CHECK.NAME=VALUE, got '" + kv + "'");
    plan.options.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  auto workload = parse_workload(o.workload);
  if (!workload.ok()) return workload.error();
  plan.workload = workload.value();
  if (!o.workload.empty()) plan.options.set("sweep.workload_prompt_tokens", std::to_string(plan.workload.prompt_tokens));
  if (auto st = validate(plan); !st.ok()) return st.error();
  return plan;
}

core::Status validate(const RunPlan& plan) {
  std::vector<std::string> problems;
  const std::string known = core::join_by(checks::registry(), ", ", [](const checks::CheckEntry& e) { return e.id; });
  for (const auto& id : plan.check_ids)
    if (!is_registered(id)) problems.push_back("unknown check '" + id + "' (known: " + known + ")");
  // Options of unknown checks are typos, not silently ignored settings.
  for (const auto& key : plan.options.keys())
    if (key.find('.') == std::string::npos || !is_registered(key.substr(0, key.find('.'))))
      problems.push_back("option '" + key + "' names no check (write CHECK.NAME=VALUE)");
  // Every check's constructor reads and checks its options, selected or not: a bad value is a
  // mistake either way.
  for (const auto& e : checks::registry()) (void)e.make(plan.options);
  for (const auto& err : plan.options.errors()) problems.push_back(err);
  const auto& asked = plan.options.asked();
  for (const auto& key : plan.options.keys()) {
    if (asked.count(key) || key.find('.') == std::string::npos) continue;
    const std::string check = key.substr(0, key.find('.') + 1);
    std::vector<std::string> settings;
    for (const auto& a : asked)
      if (a.rfind(check, 0) == 0) settings.push_back(a.substr(check.size()));
    if (!settings.empty())
      problems.push_back("'" + key + "' is no setting of that check (its settings: " + core::join(settings) + ")");
  }
  if (problems.empty()) return {};
  return core::make_error(core::ErrorCode::InvalidArgument, "invalid configuration", core::join(problems, "\n"));
}

std::vector<const checks::CheckEntry*> selected(const RunPlan& plan) {
  std::vector<const checks::CheckEntry*> out;
  for (const auto& e : checks::registry())
    if (plan.check_ids.empty() ||
        std::find(plan.check_ids.begin(), plan.check_ids.end(), e.id) != plan.check_ids.end())
      out.push_back(&e);
  return out;
}

std::vector<PlannedStep> planned_steps(const RunPlan& plan, const checks::Models& models) {
  std::vector<PlannedStep> out;
  for (const auto* e : selected(plan)) {
    const auto steps = e->make(plan.options)->plan();
    if (steps.empty()) out.push_back({e->id, {"off", 0}, "", ""});
    for (const auto& st : steps) {
      if (st.requests == 0) {
        out.push_back({e->id, st, "", ""});
        continue;
      }
      if (models.target.empty()) {
        out.push_back({e->id, {"", 0}, "", "no --model"});
        break;
      }
      const bool small = st.model == "small";
      if (small && (models.small.empty() || models.small == models.target)) continue;
      out.push_back({e->id, st, small ? models.small : models.target, ""});
    }
  }
  return out;
}

checks::Cost planned_cost(const std::vector<PlannedStep>& steps) {
  std::vector<checks::Step> taken;
  for (const auto& p : steps)
    if (!p.model.empty()) taken.push_back(p.step);
  return checks::cost_of(taken);
}

std::string series_blind_spot(const std::vector<PlannedStep>& steps) {
  // The run's requests read as one time series (run/runner.cpp, read_series) count when they are
  // streamed and bring 8 tokens or more, and are not the concurrency check's parallel streams
  // (counted out here whole): a plan with fewer than the series needs cannot see slowdowns over time.
  int series = 0;
  for (const auto& p : steps)
    if (!p.model.empty() && p.check != "concurrency" && p.step.stream && p.step.max_tokens >= 8)
      series += p.step.requests;
  if (series >= static_cast<int>(stats::kMinSamples)) return "";
  return "it cannot judge slowdowns over time (a noisy neighbour, a slow replica): that needs " +
         std::to_string(stats::kMinSamples) + " requests of 8 tokens or more, it plans about " + std::to_string(series) +
         " (the default profile sends enough)";
}

std::string plan_line(const std::vector<PlannedStep>& steps, int max_requests) {
  const checks::Cost total = planned_cost(steps);
  if (total.requests == 0) return "";
  std::vector<std::pair<std::string, int>> per_check;  // in run order
  for (const auto& p : steps) {
    if (p.model.empty()) continue;
    if (per_check.empty() || per_check.back().first != p.check) per_check.push_back({p.check, 0});
    per_check.back().second += p.step.requests;
  }
  const std::string parts = core::join_by(per_check, ", ", [](const auto& pc) {
    return pc.first + " " + std::to_string(pc.second);
  });
  std::string line = "plan: at most " + std::to_string(total.requests) + " model requests (" + parts + "), about " +
                     std::to_string(total.prompt_tokens) + " prompt and " + std::to_string(total.output_tokens) +
                     " output tokens; budget " + std::to_string(max_requests) + " (--max-requests)";
  if (const auto blind = series_blind_spot(steps); !blind.empty()) line += "; " + blind;
  return line;
}

std::string dry_run_text(const std::vector<PlannedStep>& steps, const api::Endpoint& ep, int max_requests) {
  const std::string url = core::redact_url(ep.base_url);
  std::string out;
  core::appendf(out, "infdoctor run --dry-run: nothing is sent. The plan against %s\n", url.c_str());
  core::appendf(out, "(model requests are POST %s%s, streamed unless the step says not)\n\n", url.c_str(), ep.chat_path().c_str());
  auto row = [&](const std::string& check, const std::string& n, const std::string& model, const std::string& prompt,
                 const std::string& max_tokens, const std::string& what) {
    core::appendf(out, "  %-13s %8s  %-22s %12s %11s  %s\n", check.c_str(), n.c_str(), model.c_str(), prompt.c_str(),
        max_tokens.c_str(), what.c_str());
  };
  row("check", "requests", "model", "prompt tok", "max_tokens", "step");
  for (const auto& p : steps) {
    if (p.model.empty()) {
      row(p.check, "-", "-", "-", "-", p.skipped.empty() ? p.step.what : "skipped: " + p.skipped);
      continue;
    }
    row(p.check, std::to_string(p.step.requests), p.model, std::to_string(p.step.prompt_tokens),
        std::to_string(p.step.max_tokens), p.step.what + (p.step.stream ? "" : " (stream: false)"));
  }
  const checks::Cost sum = planned_cost(steps);
  core::appendf(out,
      "\ntotal: at most %d model requests, about %lld prompt and %lld output tokens (synthetic prompts: about one "
      "token per word)\n",
      sum.requests, sum.prompt_tokens, sum.output_tokens);
  core::appendf(out, "budget: %d (--max-requests)%s\n", max_requests,
      sum.requests > max_requests ? "; the run would stop checks once it is spent" : "");
  if (const auto blind = series_blind_spot(steps); !blind.empty()) core::appendf(out, "this plan: %s\n", blind.c_str());
  return out;
}

}  // namespace infdoctor::run
