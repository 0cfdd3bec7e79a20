// infdoctor compare: the checklist against two endpoints at once, interleaved, and which layers
// explain the gap between them.
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "bundle/bundle.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "cli/run.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "run/compare.h"
#include "run/runner.h"

namespace infdoctor::cli {
namespace {

struct CompareOptions {
  RunOptions run;  // the plan and the transport flags both sides share
  std::string a, b;
};

struct Side {
  std::string name, model, small;
  EndpointFlags flags;
};

// NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR]. The key comes from key_env, else from
// NAME_API_KEY (upper case, non-alphanumerics as _) when set, else from the preset's variable.
core::Result<Side> parse_side(const std::string& spec, const std::string& flag, const EndpointFlags& shared) {
  auto bad = [&](const std::string& why) {
    return core::make_error(core::ErrorCode::ConfigError,
                            flag + " " + why + " (want NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR])");
  };
  Side s;
  s.flags = shared;
  std::stringstream ss(spec);
  std::string item;
  bool first = true;
  while (std::getline(ss, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return bad("has '" + core::redact_url(item) + "' without '='");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (first) {
      s.name = k;
      s.flags.base_url = v;
      first = false;
    } else if (k == "model") {
      s.model = v;
    } else if (k == "small") {
      s.small = v;
    } else if (k == "preset") {
      s.flags.preset = v;
    } else if (k == "key_env") {
      s.flags.api_key_env = v;
    } else {
      return bad("has an unknown key '" + k + "'");
    }
  }
  if (s.name.empty() || s.name.find_first_of("/ .") != std::string::npos)
    return bad("needs a NAME of letters, digits, - or _");
  if (s.model.empty()) return bad("needs model=");
  if (s.flags.base_url.empty() && s.flags.preset.empty()) return bad("needs a URL after NAME= (or preset=)");
  if (s.flags.api_key_env.empty()) {
    std::string var;
    for (char c : s.name) var += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
    var += "_API_KEY";
    if (std::getenv(var.c_str()) || s.flags.preset.empty()) s.flags.api_key_env = var;
  }
  return s;
}

// 0600 from the start, as the bundle's own files are, and scrubbed of every known secret.
bool write_private(const std::string& path, const std::string& text) {
  return bundle::write_private_file(path, core::scrub(text)).ok();
}

int compare_with(const CompareOptions& o) {
  std::vector<Side> sides;
  for (const auto& [spec, flag] : {std::pair{o.a, "--a"}, {o.b, "--b"}}) {
    auto s = parse_side(spec, flag, o.run.endpoint);
    if (!s.ok()) return fail_config(s.error().message);
    sides.push_back(std::move(s.value()));
  }
  if (sides[0].name == sides[1].name) return fail_config("--a and --b need different names");
  std::vector<api::Endpoint> eps;
  std::vector<checks::Target> targets;
  for (const auto& s : sides) {
    auto ep = make_endpoint(s.flags);
    if (!ep.ok()) return fail_config(s.name + ": " + ep.error().message);
    auto t = checks::parse_target(ep->base_url);
    if (!t.ok()) return fail_config(s.name + ": " + t.error().message);
    eps.push_back(std::move(ep.value()));
    targets.push_back(std::move(t.value()));
  }
  auto plan = make_plan(o.run);
  if (!plan.ok()) return fail_config(plan.error().message, plan.error().detail);
  std::vector<std::string> warnings;
  auto rule_set = run::load_rules(o.run.rules_dir, warnings);
  for (const auto& w : warnings) std::cerr << "infdoctor: warning: " << w << '\n';
  if (!rule_set.ok()) return fail_config(rule_set.error().message, rule_set.error().detail);
  if (!o.run.bundle.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(o.run.bundle, ec) && !std::filesystem::is_empty(o.run.bundle, ec))
      return fail_config("--bundle " + o.run.bundle + " exists and is not empty");
    if (bundle::is_archive_path(o.run.bundle))
      return fail_config("compare writes its bundle as a directory; give --bundle a directory path");
  }

  core::install_interrupt_handlers();
  std::vector<std::unique_ptr<checks::CheckContext>> ctxs;
  std::vector<checks::CheckContext*> raw;
  for (std::size_t i = 0; i < sides.size(); ++i) {
    ctxs.push_back(std::make_unique<checks::CheckContext>(targets[i], eps[i]));
    ctxs.back()->set_models({sides[i].model, sides[i].small});
    ctxs.back()->set_max_requests(o.run.max_requests);
    raw.push_back(ctxs.back().get());
  }
  std::cerr << "infdoctor: comparing " << sides[0].name << " and " << sides[1].name
            << ", check by check (at most " << o.run.max_requests << " model requests each)\n";
  auto results = run::run_interleaved(plan.value(), raw);
  for (auto& r : results) {
    r.diagnosis = rules::diagnose(rule_set.value(), run::flatten_metrics(r));
    run::rank(r.diagnosis);
  }
  const run::Comparison c = run::compare_runs(results[0], results[1], sides[0].name, sides[1].name);
  nlohmann::json j = {{"comparison", run::to_json(c)},
                      {"runs", {{sides[0].name, run::to_json(results[0])}, {sides[1].name, run::to_json(results[1])}}}};
  if (o.run.json_out == "-") {
    std::cout << core::scrub(j.dump(2)) << '\n';
  } else {
    std::cout << core::scrub(run::render_comparison(c));
    if (!o.run.json_out.empty() && !write_private(o.run.json_out, j.dump(2) + "\n"))
      std::cerr << "infdoctor: error: cannot write " << o.run.json_out << '\n';
  }
  if (!o.run.bundle.empty()) {
    bool ok = true;
    for (std::size_t i = 0; i < sides.size(); ++i) {
      auto w = bundle::Writer::start(o.run.bundle + "/" + sides[i].name);
      if (!w.ok()) {
        ok = false;
        std::cerr << "infdoctor: error: " << w.error().message << '\n';
        continue;
      }
      bundle::Context bc;
      bc.command_line = "infdoctor compare (side " + sides[i].name + ")";
      bundle::describe_endpoint(bc, eps[i]);
      for (const auto& m : {sides[i].model, sides[i].small})
        if (!m.empty()) bc.models.push_back(m);
      bc.rules = rule_set->files;
      bc.partial = !results[i].interrupted_by.empty();
      if (auto st = (*w)->finish(results[i], bc); !st.ok()) {
        ok = false;
        std::cerr << "infdoctor: error: " << st.error().message << '\n';
      }
    }
    ok = write_private(o.run.bundle + "/comparison.json", run::to_json(c).dump(2) + "\n") && ok;
    ok = write_private(o.run.bundle + "/summary.md", run::render_comparison_summary(c, results[0], results[1])) && ok;
    if (ok) std::cerr << "infdoctor: comparison bundle written to " << o.run.bundle << '\n';
  }
  if (!results[0].interrupted_by.empty()) {
    std::cerr << "infdoctor: error: interrupted (" << results[0].interrupted_by << "): the comparison is partial\n";
    return kExitCouldNotRun;
  }
  if (run::exit_code(results[0]) == kExitCouldNotRun || run::exit_code(results[1]) == kExitCouldNotRun)
    return kExitCouldNotRun;
  return c.slower.empty() ? kExitOk : kExitDegraded;
}

}  // namespace

void add_compare_command(CLI::App& app, std::function<int()>& chosen) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Run the checklist against two endpoints in one session, check by check in turn, and show layer by layer\n"
      "(DNS, path, connect, TLS, server wait, first token, prefill, decode, cold start, concurrency,\n"
      "serialization) both values, their ratio, whether they differ, and which layers explain the gap.\n"
      "Keys: key_env=VAR, else NAME_API_KEY, else the preset's variable.\n"
      "Exit codes: 0 within 5 % end to end, 1 one side is slower, 3 could not run.\n"
      "Example: infdoctor compare --a old=https://a.example/v1,model=llama-70b --b new=https://b.example/v1,model=llama-70b --quick");
  cmd->add_option("--a", o->a, "NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR]: the first endpoint")->required();
  cmd->add_option("--b", o->b, "the second endpoint, the same way")->required();
  RunOptions& r = o->run;
  cmd->add_option("--cacert", r.endpoint.cacert, "PEM bundle of CA certificates to trust, for both");
  cmd->add_flag("--insecure,-k", r.endpoint.insecure, "do not verify certificates (both)");
  cmd->add_option("--timeout", r.endpoint.timeout_s, "deadline for one request, in seconds")->capture_default_str();
  cmd->add_option("--max-requests", r.max_requests, "most model requests against each endpoint")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--quick", r.quick, "fewer samples and sizes");
  cmd->add_flag("--full", r.full, "more samples, longer idle gaps, higher concurrency");
  cmd->add_option("--checks", r.checks, "comma-separated checks to run (default: all but soak)");
  cmd->add_option("--max-tokens", r.max_tokens, "output sizes of the decode sweep, e.g. 1,32,128");
  cmd->add_option("--prompt-tokens", r.prompt_tokens, "prompt sizes of the prefill sweep, e.g. 64,512,2048");
  cmd->add_option("--set", r.sets, "CHECK.NAME=VALUE: a check's own setting, for both");
  cmd->add_option("--rules", r.rules_dir, "directory of rule files instead of the built-in rules");
  cmd->add_option("--json", r.json_out, "write the comparison and both runs as JSON to FILE, or to stdout with '-'");
  cmd->add_option("--bundle", r.bundle,
                  "write a directory: each side's evidence bundle, comparison.json, and summary.md for the slower "
                  "provider");
  cmd->callback([o, &chosen] { chosen = [o] { return compare_with(*o); }; });
}

}  // namespace infdoctor::cli
