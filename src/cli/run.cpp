// infdoctor run: the checklist against one endpoint; the report on stdout, or results.json.
#include "cli/run.h"

#include <algorithm>
#include <iostream>
#include <memory>

#include "checks/registry.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "core/redact.h"
#include "core/strings.h"
#include "report/prometheus.h"
#include "run/slo.h"

namespace infdoctor::cli {

int run_with(const RunOptions& o, const std::string& command_line, results::RunResult* out) {
  if (o.list_settings) {
    std::cout << run::settings_text();
    return kExitOk;
  }
  auto ep = api::make_endpoint(o.endpoint);
  if (!ep.ok()) return fail(ep.error());
  run::PlanOptions plan_options = o.plan;
  plan_options.slo = o.slo;
  auto plan = run::make_plan(plan_options);
  if (!plan.ok()) return fail(plan.error());
  if (auto slos = run::parse_slos(o.slo); !slos.ok()) return fail(slos.error());  // --dry-run checks them too
  // An engine's own server answers /metrics beside its API; other endpoints are scraped only when asked.
  std::string metrics_url = o.metrics_url;
  if (metrics_url.empty() && run::engine_preset(o.endpoint.preset)) metrics_url = run::metrics_url_for(ep->base_url);
  if (metrics_url == "none") metrics_url.clear();
  run::Subject subject{ep.value(), o.endpoint.preset, {o.model, o.small_model}, o.max_requests, metrics_url};
  if (o.dry_run) {
    std::cout << run::dry_run_text(run::planned_steps(plan.value(), subject.models), subject.endpoint, o.max_requests);
    if (const std::string idle = run::idle_line(plan.value()); !idle.empty()) std::cout << "\n" << idle << "\n";
    return kExitOk;
  }
  auto session =
      run::Session::open({plan.value(), o.rules_dir, o.slo, o.outputs, command_line, o.quiet, o.verbose, o.target_name,
                          report::module_of(o.plan.quick, o.plan.full), o.vantage},
                         std::move(subject));
  if (!session.ok()) return fail(session.error());
  results::RunResult result = (*session)->measure();
  (*session)->diagnose(result);
  const int code = (*session)->finish(result);
  if (out) *out = std::move(result);
  return code;
}

namespace {
// `run --help` in groups, as a user looks for them: what to diagnose and how to reach it, the
// request findings are priced on, what to measure, what to write, and what scheduled runs set.
void group_run_options(CLI::App& cmd) {
  const std::pair<const char*, std::vector<std::string>> groups[] = {
      {"Target", {"--base-url", "--preset", "--api-flavour", "--api-key-env", "--api-key-file", "--model", "--small-model",
                  "--metrics-url"}},
      {"Connection", {"--cacert", "--insecure", "--max-time", "--connect-timeout", "--header", "--proxy", "--resolve"}},
      {"Workload", {"--workload", "--body", "--keep-body", "--slo"}},
      {"Checks", {"--checks", "--quick", "--full", "--set", "--settings", "--sweep-prompt-tokens", "--sweep-max-tokens",
                  "--idle-gaps", "--idle-endpoint", "--concurrency", "--load-levels", "--load-rates", "--load-mix", "--soak-minutes",
                  "--resolver", "--no-system-resolvers", "--max-hops", "--check-timeout", "--max-concurrency",
                  "--max-requests", "--rules", "--dry-run"}},
      {"Output", {"--json", "--bundle", "--quiet", "--verbose"}},
      {"Scheduled runs", {"--history", "--prom", "--push", "--target-name", "--vantage"}},
  };
  for (auto* opt : cmd.get_options())
    for (const auto& [group, names] : groups)
      if (std::find(names.begin(), names.end(), opt->get_name()) != names.end()) opt->group(group);
}
}  // namespace

void add_plan_flags(CLI::App& cmd, run::PlanOptions& p) {
  const std::string ids = core::join_by(checks::registry(), ",", [](const checks::CheckEntry& e) { return e.id; });
  // Which checks the default leaves out, as the checks declare it.
  std::vector<std::string> opt_in, only_when;
  for (const auto& e : checks::registry()) {
    if (e.info->opt_in) opt_in.push_back(e.id);
    else if (e.info->off_unless) only_when.push_back(e.id + " only when " + e.info->off_unless->key + " is set");
  }
  cmd.add_option("--max-concurrency", p.max_concurrency,
                 "most parallel streams and load users (default 64); a --concurrency level or load.levels above it is refused")
      ->check(CLI::Range(1, 4096));
  cmd.add_flag("--quick", p.quick, "fewer samples and sizes: about 30 s against a healthy endpoint, still enough requests to judge slowdowns over time");
  cmd.add_flag("--full", p.full, "more samples, longer idle gaps (up to 5 minutes), higher concurrency");
  cmd.add_option("--sweep-prompt-tokens", p.prompt_tokens, "prompt sizes of the prefill sweep, e.g. 64,512,2048");
  cmd.add_option("--sweep-max-tokens", p.max_tokens, "max_tokens values of the decode sweep, e.g. 1,32,128");
  cmd.add_option("--idle-gaps", p.idle_gaps, "idle seconds before the cold-start requests, e.g. 0,5,30,120");
  cmd.add_flag("--idle-endpoint", p.idle_endpoint,
               "keep the cold-start check's idle gaps idle for the whole endpoint: the path and transport checks "
               "(connects, TLS handshakes, GETs of the models list: nothing to a model) run in their own turn "
               "instead of inside them (for a gateway that scales to zero as a whole, where those count as traffic)");
  cmd.add_option("--concurrency", p.concurrency, "parallel stream levels, e.g. 1,2,4,8,16");
  cmd.add_option("--load-levels", p.load_levels,
                 "the load ramp's users at each level, e.g. 5,10,20,50 (with --checks +load; as --set load.levels)");
  cmd.add_option("--load-rates", p.load_rates,
                 "the load ramp as requests a second arriving at random instead of users, e.g. 5,10,20 (load.rates)");
  cmd.add_option("--load-mix", p.load_mix,
                 "the load ramp's request sets, NAME:SHARE:PROMPT:OUTPUT each, e.g. chat:0.7:100-500:128,docs:0.3:4000:512 "
                 "(load.mix)");
  cmd.add_option("--soak-minutes", p.soak_minutes, "run the soak check for this many minutes")
      ->check(CLI::Range(0.0, 1440.0));
  cmd.add_option("--checks", p.checks,
                 "comma-separated checks to run; they run in this order: " + ids +
                     " (default: all but " + core::join(opt_in, " and ") +
                     (only_when.empty() ? "" : ", " + core::join(only_when, ", ")) +
                     "); +ID adds a check to the default ones, e.g. --checks +cache");
  cmd.add_option("--resolver", p.resolvers, "IP[:PORT] of a DNS resolver to measure as well (repeatable)");
  cmd.add_flag("--no-system-resolvers", p.no_system_resolvers, "do not query the resolvers of /etc/resolv.conf");
  cmd.add_option("--max-hops", p.max_hops, "hop limit of the path check's hop table (default 30)")
      ->check(CLI::Range(1, 64));
  cmd.add_option("--set", p.sets,
                 "CHECK.NAME=VALUE: a check's own setting, e.g. dns.samples=10, path.trace=tcp, transport.samples=3 "
                 "(`infdoctor run --settings` lists them all)");
  cmd.add_option("--body", p.body,
                 "FILE: a request body of your own, or several as JSON Lines (OpenAI chat or Anthropic messages "
                 "JSON, as your application sends it; - for stdin), sent as it is (streamed, with --model's name when "
                 "given) to show what its prompt, its stable prefix and the prompt cache cost. The body stays on this "
                 "machine: results keep its size, hash and token counts");
  cmd.add_option("--workload", p.workload,
                 "the request findings are priced on: prompt=P,output=O,concurrency=C (default prompt=1024,output=128 as "
                 "vLLM's serving benchmark; concurrency the concurrency check's highest level). A finding's impact is "
                 "the milliseconds its cause adds to that request");
  cmd.add_option("--check-timeout", p.check_timeout_s,
                 "deadline for one check's requests, in seconds, on top of the waits its plan makes by design (idle "
                 "gaps, --soak-minutes)")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
}

void add_run_command(CLI::App& app, std::function<int()>& chosen) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run the checklist against an endpoint and report each layer: DNS (per resolver), network path (TCP and\n"
      "ICMP round trips, hop table), transport (connect, TLS, first byte; fresh and reused connections), and\n"
      "with --model: cold starts, small against target model, prefill and decode sweeps, serialization,\n"
      "concurrency. Every model request counts against --max-requests.\n"
      "Then the rules turn the measurements into a ranked diagnosis: which cause costs how many milliseconds.\n"
      "Exit codes: 0 healthy, 1 degraded (a warning), 2 critical, 3 could not measure (the last line says why),\n"
      "64 a wrong command line.\n"
      "Example: infdoctor run --base-url https://api.example.com/v1 --model big --small-model small --quick");
  add_endpoint_flags(*cmd, opts->endpoint);
  run::PlanOptions& p = opts->plan;
  run::Outputs& out = opts->outputs;
  cmd->add_option("--model", opts->model, "the model to diagnose (without it the model checks are skipped)");
  cmd->add_option("--small-model", opts->small_model, "a small model on the same endpoint, for comparison");
  cmd->add_option("--metrics-url", opts->metrics_url,
                  "the engine's Prometheus /metrics (vLLM, SGLang, TGI, llama.cpp), read before and after each check so the\n"
                  "report sets the engine's own queue and first-token times beside the measured ones (default with\n"
                  "--preset vllm, sglang, tgi or llama.cpp: /metrics beside the base URL; \"none\" to skip)");
  cmd->add_option("--max-requests", opts->max_requests, "most model requests the run may send")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  add_plan_flags(*cmd, p);
  add_json_flag(*cmd, out.json, "results.json");
  cmd->add_option("--rules", opts->rules_dir, "directory of rule files to use instead of the built-in rules");
  cmd->add_option("--slo", opts->slo,
                  "your own limits, e.g. ttft_p50_ms=2000,itl_p99_ms=80 (or full metric names): a violated one is a "
                  "finding and sets the exit code. Limits on TTFT, time per token and the total are judged on the "
                  "reference request (--workload's or --body's shape, its queue counted in the total) and, with "
                  "the load check, on each of its requests (the goodput)");
  cmd->add_option("--prom", out.prom,
                  "write the run's metrics to FILE in Prometheus's text format, under a temporary name first (for "
                  "node_exporter's textfile collector): seconds and bytes, infdoctor_probe_success, "
                  "infdoctor_finding{cause,scope,severity} 0 or 1 for every cause, labels target, model, module, vantage");
  cmd->add_option("--push", out.push,
                  "push the same metrics to a Prometheus Pushgateway at URL, grouped by job=infdoctor, target, model, "
                  "module and vantage (a failed push makes the exit code 3)");
  cmd->add_option("--target-name", opts->target_name,
                  "the target label of --prom and --push (default: the base URL without credentials or query)");
  cmd->add_option("--vantage", opts->vantage,
                  "the vantage label of --prom and --push: where this run measures from, e.g. eu-west-1 (default: "
                  "this host's name)");
  cmd->add_flag("--quiet,-s", opts->quiet, "no progress, plan line or notes on stderr: errors and warnings only");
  cmd->add_flag("--verbose,-v", opts->verbose, "also one line on stderr per model request as it completes");
  cmd->add_flag("--dry-run", opts->dry_run,
                "print every step the run would take, its model requests and their token cost; send nothing");
  cmd->add_flag("--settings", opts->list_settings,
                "list every check's settings for --set: default, what --quick and --full change, what each accepts; "
                "send nothing");
  cmd->add_option("--history", out.history,
                  "keep this run's key metrics in an SQLite FILE, and compare against the same endpoint's past 7 "
                  "days there (rules history.*); see `infdoctor history FILE`");
  cmd->add_option("--bundle", out.bundle,
                  "write the evidence bundle to PATH: a directory, or a .tar.gz when PATH ends so");
  cmd->add_flag("--keep-body", out.keep_body,
                "keep --body's request bodies in the bundle (body.jsonl), for a provider to send them again; without "
                "it the bundle keeps their size, hash and token counts only");
  group_run_options(*cmd);
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
