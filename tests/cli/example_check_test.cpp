// Adding a check takes one file: this one. The check below is defined here and nowhere else. It
// registers itself, declares its metric, headline and table, a chart of its requests and how to
// reproduce what it measured; a run that takes it (and a rule of this test's own citing its
// metric) shows it in report.html, summary.md and repro.sh without any other file knowing it.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "api/openai.h"
#include "checks/registry.h"
#include "cli/run.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

constexpr checks::MetricKey kSlowerTtftMs{"example.slower_ttft_ms"};

const checks::CheckInfo kExampleInfo{
    "example",
    "Two short requests",
    "Two short requests to the target model, one after the other: the slower one's time to first token.",
    {{kSlowerTtftMs.name, "ms", "the slower request's time to first token"}},
    {{nullptr, "the slower of two short requests took {slower_ttft_ms} to its first token"}},
    {}};

constexpr int kPromptWords = 12;
constexpr int kMaxTokens = 4;

class ExampleCheck final : public checks::Check {
 public:
  explicit ExampleCheck(const checks::Options&) {}
  const checks::CheckInfo& info() const override { return kExampleInfo; }
  std::vector<checks::Step> plan() const override { return {{"two short requests", 2, "target", kPromptWords, kMaxTokens}}; }

  checks::CheckResult run(checks::CheckContext& ctx) const override {
    checks::CheckResult out = checks::CheckResult::start(kExampleInfo.id);
    checks::RequestLoop loop(ctx, out);
    checks::Table table{"Two short requests", {"turn", "request id", "TTFT"}, {}, ""};
    std::vector<double> ttft;
    for (int turn = 1; turn <= 2; ++turn)
      if (auto s = loop.send(api::synthetic_request(ctx.models().target, kPromptWords, kMaxTokens), {{"turn", turn}}); s && s->ok)
        if (auto t = checks::server_ttft_ms(*s)) {
          ttft.push_back(*t);
          table.rows.push_back({std::to_string(turn), s->request_id, checks::cell(*t, "ms")});
        }
    if (!ttft.empty()) out.set(kSlowerTtftMs, *std::max_element(ttft.begin(), ttft.end()));
    out.tables.push_back(std::move(table));
    return out;
  }

  std::vector<checks::Chart> charts(const checks::CheckResult& r) const override {
    checks::ChartSeries requests{"requests", checks::SeriesKind::Points, {}};
    for (const auto& req : r.requests)
      if (auto t = checks::server_ttft_ms(req.sample))
        requests.points.push_back({req.label.value("turn", 0.0), *t, req.sample.request_id});
    return {{"example-ttft-by-turn", "Two short requests: time to first token of each, in turn.", {"turn", "", true},
             {"TTFT", "ms"}, {requests}}};
  }

  std::vector<checks::ReproRequest> repro(const checks::CheckResult& r, const std::string& metric,
                                          const checks::Models&) const override {
    if (metric != kSlowerTtftMs.name) return {};
    const checks::RunTtft t = checks::run_ttft(r, [](const checks::LabelledSample&) { return true; });
    if (!t.last) return {};
    return {{"one short request of the two", false, kPromptWords, kMaxTokens, 0, t.median_ms}};
  }
};

// A rule of this test's own: the check's metric is known to the rules as soon as it is registered.
constexpr const char* kRule = R"({"family": "example", "rules": [{
  "id": "example.slow_first_token", "cause": "provider_wide", "scope": "endpoint", "severity": "warning",
  "title": "The example check's slower request waited for its first token",
  "when": "example.slower_ttft_ms > 0", "impact_ms": "example.slower_ttft_ms",
  "impact_is": "the slower request's time to first token", "confidence": 0.9,
  "explain": "The slower of two short requests took {example.slower_ttft_ms} to its first token.",
  "ask_provider": [], "actions": ["Nothing: it is an example."], "evidence": ["example.slower_ttft_ms"]}]})";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a check defined in one file registers itself, and report.html, summary.md and repro.sh show its chart, table and repro step") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 40, "decode_ms_per_token": 2}}})");
  const test::TempFile rules(kRule, "example.json");
  const test::TempFile scratch("", "unused");
  const std::string bundle = scratch.dir() + "/bundle";

  cli::RunOptions o;
  o.endpoint.base_url = server->base_url();
  o.endpoint.api_key_env = "INFDOCTOR_TEST_NO_SUCH_KEY";
  o.model = "m";
  o.plan.checks = "example";
  o.rules_dir = rules.dir();
  o.outputs.report = false;
  o.outputs.bundle = bundle;
  o.quiet = true;
  results::RunResult r;
  {
    const checks::Registration registered(checks::entry_of<ExampleCheck>(kExampleInfo));
    CHECK(checks::find_info("example") == &kExampleInfo);
    CHECK(cli::run_with(o, "infdoctor run --checks example", &r) == 1);  // the rule's warning: degraded
  }
  CHECK(checks::find_info("example") == nullptr);  // gone with its registration

  REQUIRE(r.checks.size() == 1);
  const checks::CheckResult& c = r.checks.front();
  CHECK(c.id == "example");
  CHECK(checks::status_name(c.status) == "ok");
  REQUIRE(c.requests.size() == 2);
  const double slower = c.metrics.at("slower_ttft_ms");
  CHECK(slower > 40);  // the fake's overhead before any first token
  REQUIRE(!r.diagnosis.empty());
  CHECK(r.diagnosis.front().rule == "example.slow_first_token");

  const std::string html = slurp(bundle + "/report.html");
  CHECK(html.find("example-ttft-by-turn") != std::string::npos);
  CHECK(html.find("Two short requests: time to first token of each, in turn.") != std::string::npos);
  for (const auto& req : c.requests) {  // each point names the request it came from
    REQUIRE(!req.sample.request_id.empty());
    CHECK(html.find(req.sample.request_id) != std::string::npos);
  }

  const std::string summary = slurp(bundle + "/summary.md");
  CHECK(summary.find("| example | ok |") != std::string::npos);
  CHECK(summary.find("the slower of two short requests took ") != std::string::npos);
  CHECK(summary.find("### Two short requests") != std::string::npos);
  CHECK(summary.find("The example check's slower request waited for its first token") != std::string::npos);
  CHECK(summary.find("the top finding (provider_wide") != std::string::npos);

  // repro.sh sends again the request the check declared, beside the run's median.
  const std::string repro = slurp(bundle + "/repro.sh");
  CHECK(repro.find("the top finding (provider_wide") != std::string::npos);
  const auto ask = repro.find("\nask 'one short request of the two' 0 ");
  REQUIRE(ask != std::string::npos);
  CHECK(repro.find("\"max_tokens\":4", ask) != std::string::npos);
  CHECK(repro.find("\nask ", ask + 1) == std::string::npos);  // that one request, no other
}

}  // namespace infdoctor
