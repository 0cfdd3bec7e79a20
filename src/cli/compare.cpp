// infdoctor compare: the checklist against two endpoints in one session, interleaved, and which
// layers explain the gap between them.
#include <filesystem>
#include <memory>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/run.h"
#include "run/compare.h"
#include "run/target_spec.h"

namespace infdoctor::cli {
namespace {

struct CompareOptions {
  RunOptions run;  // the plan, the transport flags and the outputs both sides share
  std::string a, b;
};

int compare_with(const CompareOptions& o) {
  const std::string& dir = o.run.outputs.bundle;
  if (!dir.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(dir, ec) && !std::filesystem::is_empty(dir, ec))
      return fail_usage("--bundle " + dir + " exists and is not empty");
    if (bundle::is_archive_path(dir))
      return fail_usage("compare writes its bundle as a directory; give --bundle a directory path");
  }
  auto plan = run::make_plan(o.run.plan);
  if (!plan.ok()) return fail(plan.error());
  std::vector<run::TargetSpec> specs;
  std::vector<std::unique_ptr<run::Session>> sessions;
  for (const auto& [text, flag] : {std::pair{o.a, "--a"}, {o.b, "--b"}}) {
    auto spec = run::parse_target_spec(text, flag, o.run.endpoint);
    if (!spec.ok()) return fail(spec.error());
    if (!specs.empty() && specs.front().name == spec->name) return fail_usage("--a and --b need different names");
    auto ep = api::make_endpoint(spec->endpoint);
    if (!ep.ok()) return fail({ep.error().code, spec->name + ": " + ep.error().message, ep.error().detail});
    run::Outputs out;
    out.report = false;
    if (!dir.empty()) out.bundle = dir + "/" + spec->name;
    auto s = run::Session::open({plan.value(), o.run.rules_dir, o.run.slo, out, "infdoctor compare (side " + spec->name + ")",
                                 o.run.quiet},
                                {ep.value(), spec->endpoint.preset, spec->models, o.run.max_requests, {}});
    if (!s.ok()) return fail({s.error().code, spec->name + ": " + s.error().message, s.error().detail});
    specs.push_back(std::move(spec.value()));
    sessions.push_back(std::move(s.value()));
  }
  return run::measure_and_compare(*sessions[0], *sessions[1], specs[0].name, specs[1].name, o.run.outputs,
                                  o.run.max_requests);
}

}  // namespace

void add_compare_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, o] = add_command<CompareOptions>(
      app, chosen, "compare",
      "Run the checklist against two endpoints in one session, check by check in turn, and show layer by layer\n"
      "(DNS, path, connect, TLS, server wait, first token, prefill, decode, cold start, concurrency,\n"
      "serialization) both values, their ratio, whether they differ, and which layers explain the gap.\n"
      "Keys: key_env=VAR, else NAME_API_KEY, else the preset's variable.\n"
      "Exit codes: 0 within 5 % end to end, 1 one side is slower, 3 could not run.\n"
      "Example: infdoctor compare --a old=https://a.example/v1,model=llama-70b --b new=https://b.example/v1,model=llama-70b --quick",
      compare_with);
  cmd->add_option("--a", o->a, "NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR]: the first endpoint")->required();
  cmd->add_option("--b", o->b, "the second endpoint, the same way")->required();
  RunOptions& r = o->run;
  cmd->add_option("--cacert", r.endpoint.cacert, "PEM bundle of CA certificates to trust, for both");
  cmd->add_flag("--insecure,-k", r.endpoint.insecure, "do not verify certificates (both)");
  cmd->add_option("--max-time,-m,--timeout", r.endpoint.timeout_s, "deadline for one request, in seconds (both)")
      ->capture_default_str();
  cmd->add_option("--max-requests", r.max_requests, "most model requests against each endpoint")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--quick", r.plan.quick, "fewer samples and sizes");
  cmd->add_flag("--quiet,-s", r.quiet, "no progress on stderr: errors and warnings only");
  cmd->add_flag("--full", r.plan.full, "more samples, longer idle gaps, higher concurrency");
  cmd->add_option("--checks", r.plan.checks, "comma-separated checks to run (default: all but soak)");
  cmd->add_option("--sweep-max-tokens", r.plan.max_tokens, "max_tokens values of the decode sweep, e.g. 1,32,128");
  cmd->add_option("--sweep-prompt-tokens", r.plan.prompt_tokens, "prompt sizes of the prefill sweep, e.g. 64,512,2048");
  cmd->add_option("--set", r.plan.sets, "CHECK.NAME=VALUE: a check's own setting, for both");
  cmd->add_option("--rules", r.rules_dir, "directory of rule files instead of the built-in rules");
  add_json_flag(*cmd, r.outputs.json, "the comparison and both runs as JSON");
  cmd->add_option("--bundle", r.outputs.bundle,
                  "write a directory: each side's evidence bundle, comparison.json, and summary.md for the slower "
                  "provider");
}

}  // namespace infdoctor::cli
