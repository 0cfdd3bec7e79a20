// infdoctor compare: the checklist against two endpoints in one session, interleaved, and which
// layers explain the gap between them.
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "cli/run.h"
#include "core/message.h"
#include "core/redact.h"
#include "http/client.h"
#include "run/compare.h"
#include "run/target_spec.h"

namespace infdoctor::cli {
namespace {

struct CompareOptions {
  RunOptions run;  // the plan, the transport flags and the outputs both sides share
  std::string a, b;
  std::string a_results, b_results;  // NAME=PATH|URL: runs already made, e.g. from two vantage points
};

// A saved run: results.json, a bundle (directory or .tar.gz), or an exporter's bundle over HTTP
// (a URL ending in '/' is a bundle's listing: its results.json is read).
core::Result<results::RunResult> load_run(const std::string& where) {
  nlohmann::json j;
  if (where.rfind("http://", 0) == 0 || where.rfind("https://", 0) == 0) {
    http::Request req;
    req.url = where.back() == '/' ? where + "results.json" : where;
    req.timeout = std::chrono::seconds(30);
    http::Client client;
    const http::Response resp = client.perform(req);
    const std::string shown = core::redact_url(req.url);
    if (!resp.status.ok()) return core::make_error(core::ErrorCode::Io, "cannot fetch " + shown, resp.status.error().message);
    if (resp.http_status != 200)
      return core::make_error(core::ErrorCode::Io, "cannot fetch " + shown, "HTTP " + std::to_string(resp.http_status));
    j = nlohmann::json::parse(resp.body, nullptr, false);
    if (j.is_discarded()) return core::make_error(core::ErrorCode::Io, shown + " is not results.json");
  } else {
    auto read = bundle::read_results(where);
    if (!read.ok()) return read.error();
    j = std::move(read.value());
  }
  auto r = results::from_json(j);
  if (!r.ok()) return core::make_error(r.error().code, where + ": " + r.error().message, r.error().detail);
  return r;
}

// Two runs already made (two vantage points' runs of one target, say), compared as `compare`
// compares two measured together; nothing is sent to a model.
int compare_saved(const CompareOptions& o) {
  std::vector<std::pair<std::string, results::RunResult>> sides;
  for (const auto& [text, flag] : {std::pair{o.a_results, "--a-results"}, {o.b_results, "--b-results"}}) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0) return fail_usage(std::string(flag) + " wants NAME=PATH or NAME=URL");
    auto r = load_run(text.substr(eq + 1));
    if (!r.ok()) return fail(r.error());
    sides.emplace_back(text.substr(0, eq), std::move(r.value()));
  }
  if (sides[0].first == sides[1].first) return fail_usage("--a-results and --b-results need different names");
  auto& [name_a, a] = sides[0];
  auto& [name_b, b] = sides[1];
  if (a.target.base_url != b.target.base_url || a.models.target != b.models.target)
    core::say("warning", "the two runs measured different targets (" + core::redact_url(a.target.base_url) + " " +
                             a.models.target + ", " + core::redact_url(b.target.base_url) + " " + b.models.target +
                             "): the gap is theirs and the places'");
  const run::Comparison c = run::compare_runs(a, b, name_a, name_b);
  if (o.run.outputs.json == "-") {
    std::cout << core::scrub(nlohmann::json{{"comparison", run::to_json(c)}}.dump(2)) << '\n';
  } else {
    std::cout << name_a << ": run of " << a.started_at << "; " << name_b << ": run of " << b.started_at << "\n\n"
              << core::scrub(run::render_comparison(c));
    if (!o.run.outputs.json.empty())
      if (const int code = emit_json(o.run.outputs.json, {{"comparison", run::to_json(c)}}); code != kExitOk) return code;
  }
  if (!c.total_a || !c.total_b)
    return fail_config("no end-to-end time in " + (!c.total_a ? name_a : name_b) + "'s run: its baseline check did not run");
  return c.slower.empty() ? kExitOk : core::kExitDegraded;
}

int compare_with(const CompareOptions& o) {
  const bool saved = !o.a_results.empty() || !o.b_results.empty();
  if (saved && (!o.a.empty() || !o.b.empty()))
    return fail_usage("compare measures (--a, --b) or reads saved runs (--a-results, --b-results), not both");
  if (saved && (o.a_results.empty() || o.b_results.empty())) return fail_usage("--a-results and --b-results go together");
  if (saved) return compare_saved(o);
  if (o.a.empty() || o.b.empty()) return fail_usage("--a and --b are required (or --a-results and --b-results)");
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
      "Keys: key_env=VAR, else NAME_API_KEY, else the preset's variable. The plan and transport flags are run's,\n"
      "for both sides.\n"
      "Exit codes: 0 within 5 % end to end, 1 one side is slower, 3 could not run.\n"
      "Or two runs already made, e.g. one target from two vantage points, read from their exporters' bundles:\n"
      "  infdoctor compare --a-results eu-west=http://infdoctor.eu:9474/bundles/prod/latest/ \\\n"
      "                    --b-results us-east=http://infdoctor.us:9474/bundles/prod/latest/\n"
      "Example: infdoctor compare --a old=https://a.example/v1,model=llama-70b --b new=https://b.example/v1,model=llama-70b --quick",
      compare_with);
  cmd->add_option("--a", o->a, "NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR]: the first endpoint");
  cmd->add_option("--b", o->b, "the second endpoint, the same way");
  cmd->add_option("--a-results", o->a_results,
                  "NAME=PATH|URL: instead of measuring, a run already made: results.json, a bundle, or an exporter's "
                  "bundle URL (http://host:9474/bundles/prod/latest/), e.g. one vantage point's");
  cmd->add_option("--b-results", o->b_results, "the other run, the same way: e.g. eu-west=... against us-east=...");
  RunOptions& r = o->run;
  add_transport_flags(*cmd, r.endpoint);
  add_plan_flags(*cmd, r.plan);
  cmd->add_option("--max-requests", r.max_requests, "most model requests against each endpoint")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--quiet,-s", r.quiet, "no progress on stderr: errors and warnings only");
  cmd->add_option("--rules", r.rules_dir, "directory of rule files instead of the built-in rules");
  add_json_flag(*cmd, r.outputs.json, "the comparison and both runs as JSON");
  cmd->add_option("--bundle", r.outputs.bundle,
                  "write a directory: each side's evidence bundle, comparison.json, and summary.md for the slower "
                  "provider");
}

}  // namespace infdoctor::cli
