// infdoctor run: the checklist against one endpoint; the report on stdout, or results.json.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "bundle/bundle.h"
#include "checks/registry.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "history/history.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "cli/run.h"
#include "report/text.h"
#include "run/runner.h"

namespace infdoctor::cli {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Settings of the two profiles; explicit flags and --set come after and win.
const std::vector<std::pair<std::string, std::string>> kQuick = {
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
const std::vector<std::pair<std::string, std::string>> kFull = {
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

void print_plan(const run::RunPlan& plan, int max_requests) {
  checks::Cost total;
  std::string line;
  for (const auto& e : checks::registry()) {
    if (!plan.check_ids.empty() && std::find(plan.check_ids.begin(), plan.check_ids.end(), e.id) == plan.check_ids.end())
      continue;
    const checks::Cost c = e.make(plan.options)->cost();
    if (c.requests == 0) continue;
    total.requests += c.requests;
    total.prompt_tokens += c.prompt_tokens;
    total.output_tokens += c.output_tokens;
    line += (line.empty() ? "" : ", ") + e.id + " " + std::to_string(c.requests);
  }
  if (total.requests == 0) return;
  std::cerr << "infdoctor: plan: at most " << total.requests << " model requests (" << line << "), about "
            << total.prompt_tokens << " prompt and " << total.output_tokens << " output tokens; budget "
            << max_requests << " (--max-requests)\n";
  if (total.requests > max_requests)
    std::cerr << "infdoctor: warning: the plan needs more requests than the budget; checks stop when it is spent\n";
}

// --dry-run: every step of every chosen check, with the model requests and their token cost.
// Builds the checks from the options only: nothing is resolved, connected or sent.
int print_dry_run(const run::RunPlan& plan, const RunOptions& o, const api::Endpoint& ep) {
  const std::string url = core::redact_url(ep.base_url);
  std::printf("infdoctor run --dry-run: nothing is sent. The plan against %s\n", url.c_str());
  std::printf("(model requests are POST %s%s, streamed unless the step says not)\n\n", url.c_str(), ep.chat_path().c_str());
  auto row = [](const std::string& check, const std::string& n, const std::string& model, const std::string& prompt,
                const std::string& max_tokens, const std::string& what) {
    std::printf("  %-13s %8s  %-22s %12s %11s  %s\n", check.c_str(), n.c_str(), model.c_str(), prompt.c_str(),
                max_tokens.c_str(), what.c_str());
  };
  row("check", "requests", "model", "prompt tok", "max_tokens", "step");
  checks::Cost sum;
  for (const auto& e : checks::registry()) {
    if (std::find(plan.check_ids.begin(), plan.check_ids.end(), e.id) == plan.check_ids.end()) continue;
    const auto steps = e.make(plan.options)->plan();
    if (steps.empty()) row(e.id, "-", "-", "-", "-", "off");
    for (const auto& st : steps) {
      if (st.requests == 0) {
        row(e.id, "-", "-", "-", "-", st.what);
        continue;
      }
      if (o.model.empty()) {
        row(e.id, "-", "-", "-", "-", "skipped: no --model");
        break;
      }
      const bool small = st.model == "small";
      if (small && (o.small_model.empty() || o.small_model == o.model)) continue;  // no --small-model
      const checks::Cost c = checks::cost_of({st});
      sum.requests += c.requests;
      sum.prompt_tokens += c.prompt_tokens;
      sum.output_tokens += c.output_tokens;
      std::string what = st.what;
      if (!st.stream) what += " (stream: false)";
      row(e.id, std::to_string(st.requests), small ? o.small_model : o.model, std::to_string(st.prompt_tokens),
          std::to_string(st.max_tokens), what);
    }
  }
  std::printf("\ntotal: at most %d model requests, about %lld prompt and %lld output tokens (synthetic prompts: "
              "about one token per word)\n",
              sum.requests, sum.prompt_tokens, sum.output_tokens);
  std::printf("budget: %d (--max-requests)%s\n", o.max_requests,
              sum.requests > o.max_requests ? "; the run would stop checks once it is spent" : "");
  return kExitOk;
}

}  // namespace

core::Result<run::RunPlan> make_plan(const RunOptions& o) {
  if (o.quick && o.full) return core::make_error(core::ErrorCode::ConfigError, "--quick and --full exclude each other");
  run::RunPlan plan;
  plan.check_ids = split_list(o.checks);
  if (plan.check_ids.empty()) {
    for (const auto& e : checks::registry())
      if (e.id != "soak" || o.soak_minutes > 0) plan.check_ids.push_back(e.id);
  }
  for (const auto& [k, v] : o.quick ? kQuick : (o.full ? kFull : decltype(kQuick){})) plan.options.set(k, v);
  if (!o.prompt_tokens.empty()) plan.options.set("sweep.prompt_tokens", o.prompt_tokens);
  if (!o.max_tokens.empty()) plan.options.set("sweep.max_tokens", o.max_tokens);
  if (!o.idle_gaps.empty()) plan.options.set("coldstart.idle_gaps", o.idle_gaps);
  if (!o.concurrency.empty()) plan.options.set("concurrency.levels", o.concurrency);
  if (o.max_concurrency > 0) plan.options.set("concurrency.max_streams", std::to_string(o.max_concurrency));
  if (o.soak_minutes > 0) plan.options.set("soak.minutes", std::to_string(o.soak_minutes));
  plan.check_timeout = std::chrono::seconds(static_cast<long long>(o.check_timeout_s));
  if (!o.resolvers.empty()) {
    std::string joined;
    for (const auto& r : o.resolvers) joined += (joined.empty() ? "" : ",") + r;
    plan.options.set("dns.resolvers", joined);
  }
  if (o.no_system_resolvers) plan.options.set("dns.system", "0");
  if (o.max_hops > 0) plan.options.set("path.max_hops", std::to_string(o.max_hops));
  for (const auto& kv : o.sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos)
      return core::make_error(core::ErrorCode::ConfigError, "--set wants CHECK.NAME=VALUE, got '" + kv + "'");
    plan.options.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (auto st = run::validate(plan); !st.ok()) return st.error();
  return plan;
}

int run_with(const RunOptions& o, const std::string& command_line) {
  auto ep = make_endpoint(o.endpoint);
  if (!ep.ok()) return fail_config(ep.error().message);
  auto target = checks::parse_target(ep->base_url);
  if (!target.ok()) return fail_config(target.error().message);
  auto made = make_plan(o);
  if (!made.ok()) return fail_config(made.error().message, made.error().detail);
  const run::RunPlan plan = std::move(made.value());
  if (o.dry_run) return print_dry_run(plan, o, ep.value());
  std::vector<std::string> rule_warnings;
  auto rule_set = run::load_rules(o.rules_dir, rule_warnings);
  for (const auto& w : rule_warnings) std::cerr << "infdoctor: warning: " << w << '\n';
  if (!rule_set.ok()) return fail_config(rule_set.error().message, rule_set.error().detail);
  auto slos = run::parse_slos(o.slo);
  if (!slos.ok()) return fail_config(slos.error().message);

  std::unique_ptr<history::History> hist;
  if (!o.history.empty()) {
    auto h = history::History::open(o.history);
    if (!h.ok()) return fail_config(h.error().message);
    hist = std::move(h.value());
  }

  std::unique_ptr<bundle::Writer> bundle_writer;
  std::unique_ptr<bundle::SampleLog> sample_log;
  if (!o.bundle.empty()) {
    auto w = bundle::Writer::start(o.bundle);
    if (!w.ok()) return fail_config(w.error().message, w.error().detail);
    bundle_writer = std::move(w.value());
    auto log = bundle::SampleLog::open(bundle_writer->samples_path());
    if (!log.ok()) return fail_config(log.error().message, log.error().detail);
    sample_log = std::move(log.value());
  }
  print_plan(plan, o.max_requests);
  core::install_interrupt_handlers();
  checks::CheckContext ctx(target.value(), ep.value());
  ctx.set_models({o.model, o.small_model});
  ctx.set_max_requests(o.max_requests);
  if (sample_log) ctx.set_sample_sink([&](const nlohmann::json& s) { sample_log->append(s); });
  run::RunResult result = run::run_checks(plan, ctx);
  if (const api::Preset* p = api::find_preset(o.endpoint.preset)) result.preset = run::preset_signals(*p, result);
  const std::string history_target = core::redact_url(ep->base_url);
  if (hist) {
    auto past = hist->compare(run::flatten_metrics(result), history_target, o.model, result.started_at);
    if (past.ok()) result.history_metrics = std::move(past.value());
    else std::cerr << "infdoctor: warning: " << past.error().message << '\n';
  }
  const auto metrics = run::flatten_metrics(result);
  result.diagnosis = rules::diagnose(rule_set.value(), metrics);
  std::vector<std::string> unmeasured;
  for (auto& f : run::check_slos(slos.value(), metrics, unmeasured)) result.diagnosis.push_back(std::move(f));
  run::rank(result.diagnosis);
  for (const auto& m : unmeasured) std::cerr << "infdoctor: warning: --slo names " << m << ", which was not measured\n";
  const nlohmann::json j = run::to_json(result);
  // What the provider said (error messages, headers) may echo the key: scrubbed on the way out.
  if (o.json_out == "-") {
    std::cout << core::scrub(j.dump(2)) << '\n';
  } else {
    std::cout << core::scrub(report::render_text(result));
    if (!o.json_out.empty()) {
      std::ofstream f(o.json_out, std::ios::binary | std::ios::trunc);
      f << core::scrub(j.dump(2)) << '\n';
      if (!f) std::cerr << "infdoctor: error: cannot write " << o.json_out << '\n';
    }
  }
  const int code = run::exit_code(result);
  if (hist) {
    history::RunRecord rec;
    rec.started_at = result.started_at;
    rec.target = history_target;
    rec.model = o.model;
    rec.exit_code = code;
    rec.top_finding = result.diagnosis.empty() ? "" : result.diagnosis.front().rule;
    rec.partial = !result.interrupted_by.empty();
    rec.metrics = metrics;
    if (auto id = hist->record(rec); !id.ok()) std::cerr << "infdoctor: error: " << id.error().message << '\n';
  }
  if (bundle_writer) {
    bundle::Context bc;
    bc.command_line = command_line;
    bundle::describe_endpoint(bc, ep.value());
    for (const auto& m : {o.model, o.small_model})
      if (!m.empty()) bc.models.push_back(m);
    bc.rules = rule_set->files;
    bc.partial = !result.interrupted_by.empty();
    sample_log.reset();
    if (auto st = bundle_writer->finish(result, bc); !st.ok())
      std::cerr << "infdoctor: error: " << st.error().message << '\n';
    else
      std::cerr << "infdoctor: evidence bundle written to " << o.bundle << '\n';
  }
  if (!o.prom_out.empty()) {
    std::ofstream f(o.prom_out, std::ios::binary | std::ios::trunc);
    f << core::scrub(report::render_prometheus(result, code));
    if (!f) std::cerr << "infdoctor: error: cannot write " << o.prom_out << '\n';
  }
  if (!result.interrupted_by.empty())
    std::cerr << "infdoctor: error: interrupted (" << result.interrupted_by << "): the report and bundle are partial\n";
  else if (code == kExitCouldNotRun)
    std::cerr << "infdoctor: error: no check could measure anything (see the report)\n";
  return code;
}

void add_run_command(CLI::App& app, std::function<int()>& chosen) {
  auto opts = std::make_shared<RunOptions>();
  std::string ids;
  for (const auto& e : checks::registry()) ids += (ids.empty() ? "" : ",") + e.id;
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run the checklist against an endpoint and report each layer: DNS (per resolver), network path (TCP and\n"
      "ICMP round trips, hop table), transport (connect, TLS, first byte; fresh and reused connections), and\n"
      "with --model: cold starts, small against target model, prefill and decode sweeps, serialization,\n"
      "concurrency. Every model request counts against --max-requests.\n"
      "Then the rules turn the measurements into a ranked diagnosis: which cause costs how many milliseconds.\n"
      "Exit codes: 0 healthy, 1 degraded (a warning), 2 critical, 3 could not run.\n"
      "Example: infdoctor run --base-url https://api.example.com/v1 --model big --small-model small --quick");
  add_endpoint_flags(*cmd, opts->endpoint);
  cmd->add_option("--model,-m", opts->model, "the model to diagnose (without it the model checks are skipped)");
  cmd->add_option("--small-model", opts->small_model, "a small model on the same endpoint, for comparison");
  cmd->add_option("--max-requests", opts->max_requests, "most model requests the run may send")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--max-concurrency", opts->max_concurrency,
                  "most requests in flight at once (default 64); a --concurrency level above it is refused")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--quick", opts->quick, "fewer samples and sizes: about a minute against a healthy endpoint");
  cmd->add_flag("--full", opts->full, "more samples, longer idle gaps (up to 5 minutes), higher concurrency");
  cmd->add_option("--prompt-tokens", opts->prompt_tokens, "prompt sizes of the prefill sweep, e.g. 64,512,2048");
  cmd->add_option("--max-tokens", opts->max_tokens, "output sizes of the decode sweep, e.g. 1,32,128");
  cmd->add_option("--idle-gaps", opts->idle_gaps, "idle seconds before the cold-start requests, e.g. 0,5,30,120");
  cmd->add_option("--concurrency", opts->concurrency, "parallel stream levels, e.g. 1,2,4,8,16");
  cmd->add_option("--soak-minutes", opts->soak_minutes, "run the soak check for this many minutes")
      ->check(CLI::Range(0.0, 1440.0));
  cmd->add_option("--checks", opts->checks,
                  "comma-separated checks to run; they run in this order: " + ids + " (default: all; soak only with --soak-minutes)");
  cmd->add_option("--resolver", opts->resolvers, "IP[:PORT] of a DNS resolver to measure as well (repeatable)");
  cmd->add_flag("--no-system-resolvers", opts->no_system_resolvers, "do not query the resolvers of /etc/resolv.conf");
  cmd->add_option("--max-hops", opts->max_hops, "hop limit of the path check's hop table (default 30)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--set", opts->sets,
                  "CHECK.NAME=VALUE: a check's own setting, e.g. dns.samples=10, path.trace=tcp, transport.samples=3");
  cmd->add_option("--json", opts->json_out, "write results.json to FILE, or to stdout with '-' (instead of the report)");
  cmd->add_option("--rules", opts->rules_dir, "directory of rule files to use instead of the built-in rules");
  cmd->add_option("--slo", opts->slo,
                  "your own limits, e.g. ttft_p50_ms=2000,itl_p99_ms=80 (or full metric names): a violated one is a "
                  "finding and sets the exit code");
  cmd->add_option("--prom", opts->prom_out, "write key latencies and finding severities to FILE, Prometheus text format");
  cmd->add_option("--check-timeout", opts->check_timeout_s, "deadline for one check, in seconds")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_flag("--dry-run", opts->dry_run,
                "print every step the run would take, its model requests and their token cost; send nothing");
  cmd->add_option("--history", opts->history,
                  "keep this run's key metrics in an SQLite FILE, and compare against the same endpoint's past 7 "
                  "days there (rules history.*); see `infdoctor history FILE`");
  cmd->add_option("--bundle", opts->bundle,
                  "write the evidence bundle to PATH: a directory, or a .tar.gz when PATH ends so");
  cmd->callback([opts, &chosen, cmd] {
    // The command line as the bundle records it: flags and values, URLs without credentials.
    std::string line = "infdoctor run";
    for (const auto* opt : cmd->get_options()) {
      if (opt->count() == 0 || opt->get_name() == "--help") continue;
      const auto& res = opt->results();
      if (res.empty() || opt->get_expected_min() == 0) {
        line += " " + opt->get_name();
        continue;
      }
      for (const auto& v : res) line += " " + opt->get_name() + " " + core::redact_url(v);
    }
    chosen = [opts, line] { return run_with(*opts, line); };
  });
}

}  // namespace infdoctor::cli
