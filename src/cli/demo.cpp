// infdoctor demo: starts the fake provider with a planted fault, runs the quick checklist against
// it and prints the diagnosis: a real diagnosis with no API key and no network.
#include <iostream>
#include <memory>

#include "core/message.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/run.h"
#include "fake/demo_env.h"

namespace infdoctor::cli {
namespace {

// The checks the demo runs where the quick checklist would hide the fault: the noisy neighbour's
// bursts (6 s of every 16) fall on whichever check runs then, and a burst across the concurrency
// check's levels reads as a queue. The time series reads the baseline's and the sweep's requests,
// so those alone show it. Every other fault runs the whole quick checklist.
std::string demo_checks(const fake::DemoFault& f) { return f.name == "noisy_neighbour" ? "baseline,sweep" : ""; }

struct DemoOptions {
  std::string fault = fake::kDefaultDemoFault;
  bool list = false;
  std::string bundle;
  std::string json_out;
  bool quiet = false;
};

int run_demo(const DemoOptions& o) {
  if (o.list) {
    std::cout << fake::demo_fault_table();
    return kExitOk;
  }
  const fake::DemoFault* fault = fake::find_demo_fault(o.fault);
  if (!fault) return fail_usage("no demo fault '" + o.fault + "' (see 'infdoctor demo --list-faults')");
  if (!fault->unavailable.empty())
    return fail_config("the demo cannot plant " + fault->name + " yet: " + fault->unavailable);
  auto env = fake::DemoEnvironment::start(*fault);
  if (!env.ok()) return fail_config(env.error().message);
  if (!o.quiet)
    core::say("", "demo: fake provider at " + (*env)->base_url() + " with fault '" + fault->name + "': " + fault->description +
                      "; expected: " + fake::expected_text(*fault));
  RunOptions r;
  r.endpoint.base_url = (*env)->base_url();
  r.endpoint.api_key_env = "INFDOCTOR_DEMO_NO_KEY";
  r.endpoint.cacert = (*env)->cacert();
  r.model = fake::kDemoModel;
  r.small_model = fake::kDemoSmallModel;
  r.plan.quick = true;
  r.plan.checks = demo_checks(*fault);
  if (!(*env)->resolver().empty()) {
    r.plan.resolvers.push_back((*env)->resolver());
    r.plan.no_system_resolvers = true;
  }
  r.outputs.bundle = o.bundle;
  r.outputs.json = o.json_out;
  r.quiet = o.quiet;
  results::RunResult result;
  const int code = (*env)->run_client([&] { return run_with(r, "infdoctor demo --fault " + fault->name, &result); });
  if (code == kExitCouldNotRun || code == kExitUsage) return code;
  // Whether the diagnosis found what was planted: the demo's whole point, said in one line.
  std::vector<std::string> causes;
  for (const auto& f : result.diagnosis)
    if (f.severity != rules::Severity::Info) causes.push_back(rules::cause_label(f));
  if (fake::diagnosis_matches(*fault, causes))
    core::say("", "demo: " + std::string(causes.empty() ? "" : "found ") + fake::causes_text(causes) + ", as planted");
  else
    core::say("", "demo: planted " + fake::expected_text(*fault) + "; found " + fake::causes_text(causes));
  return code;
}

}  // namespace

void add_demo_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, opts] = add_command<DemoOptions>(
      app, chosen, "demo",
      "Start the fake provider on loopback with a planted fault, run the quick checklist against it and print the\n"
      "diagnosis. No API key, no network. --list-faults shows what can be planted and what must be found.",
      run_demo);
  cmd->add_option("--fault", opts->fault, "the fault to plant")->capture_default_str();
  cmd->add_flag("--list-faults", opts->list, "list the faults and the diagnosis each must give");
  cmd->add_option("--bundle", opts->bundle, "write the evidence bundle to PATH (directory or .tar.gz)");
  add_json_flag(*cmd, opts->json_out, "results.json");
  cmd->add_flag("--quiet,-s", opts->quiet, "no progress on stderr: errors and warnings only");
}

}  // namespace infdoctor::cli
