#include "run/plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "checks/coldstart.h"
#include "checks/concurrency.h"
#include "checks/dns.h"
#include "checks/path.h"
#include "checks/replay.h"
#include "checks/load.h"
#include "checks/soak.h"
#include "checks/sweep.h"
#include "core/redact.h"
#include "core/strings.h"
#include "run/slo.h"
#include "stats/series.h"

namespace infdoctor::run {
namespace {

// The profile --quick or --full asks for, as each setting declares it (Setting::quick, ::full);
// nullptr for none. The sweep flags and --set come after and win.
const char* profile_value(const PlanOptions& o, const checks::Setting& s) {
  return o.quick ? s.quick : o.full ? s.full : nullptr;
}

bool is_registered(const std::string& id) {
  const auto& reg = checks::registry();
  return std::any_of(reg.begin(), reg.end(), [&](const checks::CheckEntry& e) { return e.id == id; });
}

}  // namespace

core::Result<std::string> read_body(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return core::make_error(core::ErrorCode::InvalidArgument, "--body " + path + ": cannot read it");
    text << in.rdbuf();
  }
  if (text.str().find_first_not_of(" \t\r\n") == std::string::npos)
    return core::make_error(core::ErrorCode::InvalidArgument, "--body " + path + ": it is empty");
  return text.str();
}

core::Result<RunPlan> make_plan(const PlanOptions& o) {
  namespace cs = checks::concurrency_setting;
  if (o.quick && o.full) return core::make_error(core::ErrorCode::InvalidArgument, "--quick and --full exclude each other");
  RunPlan plan;
  plan.check_ids = core::split(o.checks);
  for (const auto& e : checks::registry())
    for (const auto& s : e.info->settings)
      if (const char* v = profile_value(o, s)) plan.options.set(s, v);
  const std::pair<const checks::Setting*, const std::string*> lists[] = {
      {&checks::sweep_setting::prompt_tokens, &o.prompt_tokens},
      {&checks::sweep_setting::max_tokens, &o.max_tokens},
      {&checks::coldstart_setting::idle_gaps, &o.idle_gaps},
      {&cs::levels, &o.concurrency},
      {&checks::load_setting::levels, &o.load_levels},
      {&checks::load_setting::rates, &o.load_rates},
      {&checks::load_setting::mix, &o.load_mix}};
  for (const auto& [s, value] : lists)
    if (!value->empty()) plan.options.set(*s, *value);
  if (o.max_concurrency > 0) plan.options.set(cs::max_streams, std::to_string(o.max_concurrency));
  if (o.soak_minutes > 0) plan.options.set(checks::soak_setting::minutes, checks::format_number(o.soak_minutes));
  plan.check_timeout = std::chrono::seconds(static_cast<long long>(o.check_timeout_s));
  plan.idle_endpoint = o.idle_endpoint;
  if (!o.resolvers.empty()) plan.options.set(checks::dns_setting::resolvers, core::join(o.resolvers, ","));
  if (o.no_system_resolvers) plan.options.set(checks::dns_setting::system, "0");
  if (o.max_hops > 0) plan.options.set(checks::path_setting::max_hops, std::to_string(o.max_hops));
  // A capped list the user gave (its flag or --set) is held to its cap; values from a default or a
  // profile above the cap are left out (the lowest value the cap allows, when none is left).
  std::set<std::string> lists_given;
  for (const auto& [s, value] : lists)
    if (!value->empty()) lists_given.insert(s->key);
  for (const auto& kv : o.sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      return core::make_error(core::ErrorCode::InvalidArgument, "--set wants CHECK.NAME=VALUE, got '" + kv + "'");
    plan.options.set(kv.substr(0, eq), kv.substr(eq + 1));
    lists_given.insert(kv.substr(0, eq));
  }
  for (const auto& e : checks::registry())
    for (const auto& s : e.info->settings) {
      if (!s.capped_by || lists_given.count(s.key)) continue;
      const std::string* cap_text = plan.options.given(*s.capped_by);
      if (!cap_text || !checks::setting_problem(*s.capped_by, *cap_text).empty()) continue;
      const double cap = std::strtod(cap_text->c_str(), nullptr);
      const std::string* values = plan.options.given(s);
      std::vector<std::string> kept;
      for (const auto& v : core::split(values ? *values : s.def))
        if (std::strtod(v.c_str(), nullptr) <= cap) kept.push_back(v);
      plan.options.set(s, kept.empty() ? checks::format_number(cap) : core::join(kept, ","));
    }
  if (!o.body.empty()) {
    auto text = read_body(o.body);
    if (!text.ok()) return text.error();
    plan.options.set(checks::replay_setting::body, text.value());
  }
  auto workload = parse_workload(o.workload);
  if (!workload.ok()) return workload.error();
  plan.workload = workload.value();
  namespace ls = checks::load_setting;
  const auto unless_given = [&](const checks::Setting& s, const std::string& v) {
    if (!plan.options.given(s)) plan.options.set(s, v);
  };
  // A size the workload gives, within what the setting takes (a workload's empty prompt is one
  // token to a check that sends it).
  const auto sized = [](const checks::Setting& s, int v) {
    return checks::format_number(std::clamp(static_cast<double>(v), s.lo, s.hi));
  };
  // The decode fit reaches the reference request's output (128 tokens unless --workload says),
  // and past it only where the pace changed with the answer's length.
  unless_given(checks::sweep_setting::workload_output_tokens,
               sized(checks::sweep_setting::workload_output_tokens, plan.workload.output_tokens));
  if (!o.workload.empty()) {
    plan.options.set(checks::sweep_setting::workload_prompt_tokens, std::to_string(plan.workload.prompt_tokens));
    unless_given(ls::prompt_tokens, sized(ls::prompt_tokens, plan.workload.prompt_tokens));
    unless_given(ls::max_tokens, sized(ls::max_tokens, plan.workload.output_tokens));
    // A soak on the workload's own request: its drift is the one the workload meets.
    namespace ss = checks::soak_setting;
    unless_given(ss::prompt_tokens, sized(ss::prompt_tokens, plan.workload.prompt_tokens));
    unless_given(ss::max_tokens, sized(ss::max_tokens, plan.workload.output_tokens));
  }
  // The load check's goodput counts a request as meeting the user's --slo when it is within the
  // limits --slo sets on the reference request's TTFT, time per token and end-to-end time (a bad
  // --slo is left to run's own reading of it, which names what is wrong).
  std::map<const checks::Setting*, double> limits;  // the least limit given for each
  if (auto slos = parse_slos(o.slo); slos.ok())
    for (const auto& slo : slos.value())
      for (const auto& r : request_limits())
        if (slo.metric == r.measured.name)
          limits[r.load] = limits.count(r.load) ? std::min(limits[r.load], slo.limit) : slo.limit;
  for (const auto& [s, v] : limits) unless_given(*s, checks::format_number(v));
  if (auto st = prepare(plan); !st.ok()) return st.error();
  // A body is for the check whose setting it fills: --checks without it would leave the body
  // unsent, unsaid.
  const std::string sends_body(checks::replay_setting::body.check());
  if (!o.body.empty() && std::none_of(plan.checks.begin(), plan.checks.end(), [&](const auto& c) {
        return c->info().id == sends_body;
      }))
    return core::make_error(core::ErrorCode::InvalidArgument, "--body is sent by the " + sends_body +
                                                                  " check, which --checks leaves out: add " + sends_body +
                                                                  " to --checks");
  return plan;
}

core::Status prepare(RunPlan& plan) {
  std::vector<std::string> problems;
  const std::string known = core::join_by(checks::registry(), ", ", [](const checks::CheckEntry& e) { return e.id; });
  for (const auto& id : plan.check_ids)
    if (!is_registered(id.substr(id.rfind('+', 0) == 0 ? 1 : 0)))
      problems.push_back("unknown check '" + id + "' (known: " + known + ")");
  // Every setting given is checked against its declaration, its check selected or not: a bad value
  // is a mistake either way, and a key no check declares is a typo.
  for (auto& p : checks::setting_problems(plan.options)) problems.push_back(std::move(p));
  if (!problems.empty())
    return core::make_error(core::ErrorCode::InvalidArgument, "invalid configuration", core::join(problems, "\n"));
  // Each check the run takes is made once, here: the plan, --dry-run and the run read the same one.
  // Named ones only; or, when every name is +ID or none is given, the default ones and those added.
  plan.checks.clear();
  const auto named = [&](const std::string& id) {
    return std::find(plan.check_ids.begin(), plan.check_ids.end(), id) != plan.check_ids.end();
  };
  const bool defaults = std::all_of(plan.check_ids.begin(), plan.check_ids.end(),
                                    [](const std::string& id) { return id.rfind('+', 0) == 0; });
  for (const auto& e : checks::registry()) {
    const bool by_default =
        !e.info->opt_in && (!e.info->off_unless || plan.options.on(*e.info->off_unless));
    if (named(e.id) || named("+" + e.id) || (defaults && by_default)) plan.checks.push_back(e.make(plan.options));
  }
  // What a check found wrong beyond its settings' declarations (a body that is not JSON).
  if (!plan.options.errors().empty())
    return core::make_error(core::ErrorCode::InvalidArgument, "invalid configuration", core::join(plan.options.errors(), "\n"));
  return {};
}

std::vector<PlannedStep> planned_steps(const RunPlan& plan, const checks::Models& models) {
  std::vector<PlannedStep> out;
  for (const auto& check : plan.checks) {
    const std::string& id = check->info().id;
    const auto steps = check->plan();
    if (steps.empty()) out.push_back({id, {"off", 0}, "", ""});
    for (const auto& st : steps) {
      if (st.requests == 0) {
        out.push_back({id, st, "", ""});
        continue;
      }
      if (models.target.empty()) {
        out.push_back({id, {"", 0}, "", "no --model"});
        break;
      }
      const bool small = st.model == "small";
      if (small && (models.small.empty() || models.small == models.target)) continue;
      out.push_back({id, st, small ? models.small : models.target, ""});
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
  // streamed and bring 8 tokens or more, and are not parallel streams (a check that sends stream
  // levels is counted out here whole): a plan with fewer than the series needs cannot see slowdowns over time.
  int series = 0;
  for (const auto& p : steps)
    if (!p.model.empty() && !checks::sends_stream_levels(p.check) && p.step.stream && p.step.max_tokens >= 8)
      series += p.step.requests;
  if (series >= static_cast<int>(stats::kMinSamples)) return "";
  return "it cannot judge slowdowns over time (a noisy neighbour, a slow replica): that needs " +
         std::to_string(stats::kMinSamples) + " requests of 8 tokens or more, it plans about " + std::to_string(series) +
         " (the default profile sends enough)";
}

std::optional<std::size_t> idle_host(const RunPlan& plan, std::size_t i) {
  if (plan.idle_endpoint || i >= plan.checks.size() || !plan.checks[i]->runs_in_idle()) return std::nullopt;
  for (std::size_t j = i + 1; j < plan.checks.size(); ++j)
    if (plan.checks[j]->planned_wait().count() > 0) return j;
  return std::nullopt;
}

std::string idle_line(const RunPlan& plan) {
  std::vector<std::string> held, unless;
  std::optional<std::size_t> host;
  for (std::size_t i = 0; i < plan.checks.size(); ++i)
    if (const auto h = idle_host(plan, i)) {
      const checks::Check& c = *plan.checks[i];
      held.push_back(c.info().id);
      if (const std::string u = c.idle_unless(); !u.empty()) unless.push_back(c.info().id + " runs in its own turn when " + u);
      host = h;
    }
  if (!host) return "";
  return core::join(held, ", ") + (held.size() > 1 ? " run" : " runs") + " inside " + plan.checks[*host]->info().id +
         "'s idle gaps: " + (held.size() > 1 ? "they send" : "it sends") +
         " nothing to a model, so the model stays idle (--idle-endpoint keeps the whole endpoint idle, for a gateway "
         "that scales to zero)" +
         (unless.empty() ? "" : "; " + core::join(unless, "; "));
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

std::string settings_text() {
  std::string out =
      "Every check's settings, as --set CHECK.NAME=VALUE gives them (--set comes last and wins over a profile\n"
      "and the flags named beside a setting). What --quick and --full change is shown beside the default.\n";
  for (const auto& e : checks::registry()) {
    const std::string off = e.info->off_unless ? std::string(" (off unless ") + e.info->off_unless->key + " is given)"
                            : e.info->opt_in ? " (only when --checks names it: --checks +" + e.id + " adds it)"
                                             : "";
    core::appendf(out, "\n%s: %s%s\n", e.id.c_str(), e.info->title.c_str(), off.c_str());
    for (const auto& s : e.info->settings) {
      const std::string def = *s.def ? s.def : "(none)";
      core::appendf(out, "  %-30s default %s", s.key, def.c_str());
      if (s.quick) core::appendf(out, ", --quick %s", s.quick);
      if (s.full) core::appendf(out, ", --full %s", s.full);
      core::appendf(out, "\n      %s; %s\n", s.help, checks::setting_accepts(s).c_str());
    }
  }
  return out;
}

}  // namespace infdoctor::run
