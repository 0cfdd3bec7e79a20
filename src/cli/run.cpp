// infdoctor run: the checklist against one endpoint; the report on stdout, or results.json.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "checks/registry.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "report/text.h"
#include "run/runner.h"

namespace infdoctor::cli {
namespace {

struct RunOptions {
  EndpointFlags endpoint;
  std::string checks;
  std::vector<std::string> resolvers;
  bool no_system_resolvers = false;
  std::vector<std::string> sets;
  int max_hops = 0;
  std::string json_out;
  double check_timeout_s = 120;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int fail_config(const std::string& message, const std::string& detail = {}) {
  std::cerr << "infdoctor: error: " << message << '\n';
  std::stringstream ss(detail);
  for (std::string line; std::getline(ss, line);) std::cerr << "  " << line << '\n';
  return kExitCouldNotRun;
}

int run_run(const RunOptions& o) {
  auto ep = make_endpoint(o.endpoint);
  if (!ep.ok()) return fail_config(ep.error().message);
  auto target = checks::parse_target(ep->base_url);
  if (!target.ok()) return fail_config(target.error().message);
  run::RunPlan plan;
  plan.check_ids = split_list(o.checks);
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
    if (eq == std::string::npos) return fail_config("--set wants CHECK.NAME=VALUE, got '" + kv + "'");
    plan.options.set(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (auto st = run::validate(plan); !st.ok()) return fail_config(st.error().message, st.error().detail);

  checks::CheckContext ctx(target.value(), ep.value());
  const run::RunResult result = run::run_checks(plan, ctx);
  const nlohmann::json j = run::to_json(result);
  if (o.json_out == "-") {
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << report::render_text(result);
    if (!o.json_out.empty()) {
      std::ofstream f(o.json_out, std::ios::binary | std::ios::trunc);
      f << j.dump(2) << '\n';
      if (!f) std::cerr << "infdoctor: error: cannot write " << o.json_out << '\n';
    }
  }
  // Nothing measured at all is "could not run"; judging what was measured comes with the rules.
  const bool any_ok = std::any_of(result.checks.begin(), result.checks.end(),
                                  [](const checks::CheckResult& c) { return c.status == checks::CheckStatus::Ok; });
  const bool any_error = std::any_of(result.checks.begin(), result.checks.end(),
                                     [](const checks::CheckResult& c) { return c.status == checks::CheckStatus::Error; });
  if (!any_ok && any_error) {
    std::cerr << "infdoctor: error: no check could measure anything (see the report)\n";
    return kExitCouldNotRun;
  }
  return kExitOk;
}

}  // namespace

void add_run_command(CLI::App& app, std::function<int()>& chosen) {
  auto opts = std::make_shared<RunOptions>();
  std::string ids;
  for (const auto& e : checks::registry()) ids += (ids.empty() ? "" : ",") + e.id;
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run the checklist against an endpoint and report each layer: DNS (per resolver), network path (TCP and\n"
      "ICMP round trips, hop table), transport (connect, TLS, first byte; fresh and reused connections).\n"
      "Example: infdoctor run --base-url https://api.example.com/v1 --checks dns,path,transport");
  add_endpoint_flags(*cmd, opts->endpoint);
  cmd->add_option("--checks", opts->checks, "comma-separated checks to run, in this order: " + ids + " (default: all)");
  cmd->add_option("--resolver", opts->resolvers, "IP[:PORT] of a DNS resolver to measure as well (repeatable)");
  cmd->add_flag("--no-system-resolvers", opts->no_system_resolvers, "do not query the resolvers of /etc/resolv.conf");
  cmd->add_option("--max-hops", opts->max_hops, "hop limit of the path check's hop table (default 30)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--set", opts->sets,
                  "CHECK.NAME=VALUE: a check's own setting, e.g. dns.samples=10, path.trace=tcp, transport.samples=3");
  cmd->add_option("--json", opts->json_out, "write results.json to FILE, or to stdout with '-' (instead of the report)");
  cmd->add_option("--check-timeout", opts->check_timeout_s, "deadline for one check, in seconds")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->callback([opts, &chosen] { chosen = [opts] { return run_run(*opts); }; });
}

}  // namespace infdoctor::cli
