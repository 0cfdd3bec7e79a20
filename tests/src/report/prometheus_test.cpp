#include "report/prometheus.h"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "core/redact.h"
#include "prom/exposition.h"
#include "report/exporter.h"
#include "run/runner.h"

namespace infdoctor {
namespace {

api::RequestSample answered(double ttft_ms, std::vector<double> gaps_ms, const std::string& model = "big") {
  api::RequestSample s;
  s.ok = true;
  s.model = model;
  s.ttft_ms = ttft_ms;
  s.ttfb_ms = ttft_ms / 2;
  s.total_ms = ttft_ms + 100;
  s.server_wait_ms = 1.0;
  s.itl_ms = std::move(gaps_ms);
  s.prompt_tokens = 100;
  s.output_tokens = static_cast<std::int64_t>(s.itl_ms.size() + 1);
  return s;
}

// A run with a baseline of `ttfts`, a finding of `cause`, and the built-in rules.
results::RunResult run_with(const std::vector<double>& ttfts, const std::string& cause, double impact_ms) {
  results::RunResult r;
  r.models.target = "big";
  checks::CheckResult c = checks::CheckResult::start("baseline");
  for (double t : ttfts) c.requests.push_back({answered(t, {10, 12}), nlohmann::json::object()});
  c.set("ttft_p50_ms", ttfts.empty() ? 0 : ttfts[0]);
  c.set("samples_count", static_cast<double>(ttfts.size()));
  c.set("arrivals_per_token_ratio", 1);
  r.checks.push_back(c);
  rules::Finding f;
  f.rule = "queueing.slots";
  f.cause = cause;
  f.scope = "target_model";
  f.severity = rules::Severity::Warning;
  f.impact_ms = impact_ms;
  r.diagnosis.push_back(f);
  return r;
}

const rules::RuleSet& built_in() {
  static const rules::RuleSet set = [] {
    std::vector<std::string> warnings;
    return run::load_rules("", warnings).value();
  }();
  return set;
}

std::string render(const results::RunResult& r, const report::PromLabels& labels = {"t", "big", "quick", "lab"}) {
  report::PromTarget t;
  t.labels = labels;
  t.run = &r;
  t.totals = report::tally(r);
  t.rules = &built_in();
  return report::render_prometheus({t});
}

}  // namespace

TEST_CASE("prometheus text: numbers are short, whole numbers exact, and every value reads back") {
  CHECK(report::prom_number(3) == "3");
  CHECK(report::prom_number(0.05) == "0.05");
  CHECK(report::prom_number(1796425832) == "1796425832");
  CHECK(report::prom_number(std::nan("")) == "NaN");
  CHECK(report::prom_number(INFINITY) == "+Inf");
  CHECK(report::prom_number(-INFINITY) == "-Inf");
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-7, 7);
  for (int i = 0; i < 2000; ++i) {
    const double v = std::pow(10.0, exponent(rng));
    const std::string text = report::prom_number(v);
    CHECK(text.size() <= 15);
    CHECK(std::stod(text) == doctest::Approx(v).epsilon(1e-8));
  }
}

TEST_CASE("prometheus text: one HELP and TYPE per family, its samples together, in a form the strict reader takes") {
  report::PromWriter w;
  w.family({"a_seconds", "gauge", "A."});
  w.family({"b_total", "counter", "B."});
  w.sample("a_seconds", {{"x", "1"}}, 1);
  w.sample("b_total", {}, 2);
  w.sample("a_seconds", {{"x", "quote \" and \\ and\nnewline"}}, 3);
  const std::string text = w.text();
  CHECK(text ==
        "# HELP a_seconds A.\n# TYPE a_seconds gauge\na_seconds{x=\"1\"} 1\n"
        "a_seconds{x=\"quote \\\" and \\\\ and\\nnewline\"} 3\n# HELP b_total B.\n# TYPE b_total counter\nb_total 2\n");
  auto e = prom::parse_exposition(text);
  REQUIRE(e.ok());
  CHECK(e->samples[1].label("x") == "quote \" and \\ and\nnewline");
}

TEST_CASE("prometheus text: a run's exposition reads back whole, in seconds, with every cause and the one found") {
  const auto r = run_with({820, 910, 1500}, "queueing", 1234.5);
  const std::string text = render(r);
  auto e = prom::parse_exposition(text);
  REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.error().message));
  const std::vector<std::pair<std::string, std::string>> target = {{"target", "t"}};
  CHECK(prom::sum(*e, "infdoctor_finding", {{"cause", "queueing"}, {"scope", "target_model"}, {"severity", "warning"}}) == 1);
  CHECK(prom::sum(*e, "infdoctor_finding") == 1);  // the others are 0
  for (const auto& cause : rules::causes())
    CHECK_MESSAGE(prom::sum(*e, "infdoctor_finding", {{"cause", cause}}).has_value(), cause);
  CHECK(prom::sum(*e, "infdoctor_finding_impact_seconds", {{"cause", "queueing"}}) == doctest::Approx(1.2345));
  CHECK(prom::sum(*e, "infdoctor_check_seconds", {{"check", "baseline"}, {"name", "ttft_p50"}}) == doctest::Approx(0.82));
  CHECK(prom::sum(*e, "infdoctor_check_value", {{"check", "baseline"}, {"name", "samples_count"}}) == 3);
  CHECK(e->types["infdoctor_time_to_first_token_seconds"] == "histogram");
  CHECK(e->types["infdoctor_requests_total"] == "counter");
  // Buckets are cumulative and le is inclusive: 0.82 and 0.91 under 1, 1.5 under 2.5.
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_bucket", {{"le", "0.75"}}) == 0);
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_bucket", {{"le", "1"}}) == 2);
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_bucket", {{"le", "2.5"}}) == 3);
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_bucket", {{"le", "+Inf"}}) == 3);
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_sum") == doctest::Approx(3.23));
  CHECK(prom::sum(*e, "infdoctor_inter_token_seconds_count") == 6);
  CHECK(prom::sum(*e, "infdoctor_tokens_total", {{"kind", "prompt"}}) == 300);
  CHECK(prom::sum(*e, "infdoctor_phase_duration_seconds", {{"phase", "first_token"}}) == doctest::Approx(0.455));
  CHECK(prom::sum(*e, "infdoctor_probe_success") == 1);
  CHECK(prom::sum(*e, "infdoctor_build_info") == 1);
  // Every per-target sample carries the four labels.
  for (const auto& s : e->samples) {
    if (s.name == "infdoctor_build_info") continue;
    for (const char* l : {"target", "model", "module", "vantage"}) CHECK_MESSAGE(s.label(l).has_value(), s.name << " " << l);
  }
}

TEST_CASE("prometheus text: the findings' series are the same set whatever a run found, drawn at random") {
  std::mt19937_64 rng(11);
  std::size_t series = 0;
  for (int i = 0; i < 50; ++i) {
    // A finding as a rule of the built-in set gives it: its cause, scope and severity.
    const auto& rule = built_in().rules[rng() % built_in().rules.size()];
    if (rule.cause.empty()) continue;
    const std::string cause = rule.cause;
    const double impact = std::uniform_real_distribution<double>(0, 60000)(rng);
    auto r = run_with({100}, cause, impact);
    r.diagnosis[0].scope = rule.scope;
    r.diagnosis[0].severity = rule.severity;
    auto e = prom::parse_exposition(render(r));
    REQUIRE(e.ok());
    std::size_t n = 0;
    for (const auto& s : e->samples) n += s.name == "infdoctor_finding";
    if (series == 0) series = n;
    CHECK(n == series);
    CHECK(prom::sum(*e, "infdoctor_finding_impact_seconds", {{"cause", cause}}) == doctest::Approx(impact / 1000));
  }
  CHECK(series >= rules::causes().size());
}

TEST_CASE("prometheus text: a run that could not reach the model is probe_success 0, and a failed request an error") {
  results::RunResult r;
  r.unreachable = "connect: refused";
  checks::CheckResult c = checks::CheckResult::start("probe");
  api::RequestSample s;
  s.error = "connect_failed";
  c.requests.push_back({s, nlohmann::json::object()});
  r.checks.push_back(c);
  report::PromTarget t;
  t.labels = {"t", "m", "probe", "v"};
  t.run = &r;
  t.exit_code = 3;
  t.totals = report::tally(r);
  auto e = prom::parse_exposition(report::render_prometheus({t}));
  REQUIRE(e.ok());
  CHECK(prom::sum(*e, "infdoctor_probe_success") == 0);
  CHECK(prom::sum(*e, "infdoctor_requests_total", {{"outcome", "error"}}) == 1);
  CHECK(prom::sum(*e, "infdoctor_requests_total", {{"outcome", "ok"}}) == 0);
  CHECK_FALSE(prom::sum(*e, "infdoctor_finding").has_value());  // a probe diagnoses nothing
}

TEST_CASE("prometheus text: labels and the Pushgateway's path never carry credentials or a query") {
  CHECK(report::target_label("https://user:secret@api.example.com/v1?api-version=1&key=abc") == "https://api.example.com/v1");
  CHECK(report::target_label("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1");
  // base64url of the values, "=" for an empty one.
  CHECK(report::push_url("http://gw:9091/", {"local/fake", "m", "quick", ""}) ==
        "http://gw:9091/metrics/job/infdoctor/target@base64/bG9jYWwvZmFrZQ==/model@base64/bQ==/module@base64/"
        "cXVpY2s=/vantage@base64/=");
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("prometheus text: counters read back from an earlier exposition are exactly what it held, for its own labels only") {
  const auto r = run_with({820, 910, 1500}, "queueing", 10);
  const report::PromLabels mine{"t", "big", "quick", "lab"}, other{"u", "big", "quick", "lab"};
  auto e = prom::parse_exposition(render(r, mine) + "");
  REQUIRE(e.ok());
  const report::Tally own = report::tally(r);
  const report::Tally back = report::tally_from(*e, mine);
  CHECK(back.requests == own.requests);
  CHECK(back.tokens == own.tokens);
  CHECK(back.ttft.counts == own.ttft.counts);
  CHECK(back.ttft.sum == doctest::Approx(own.ttft.sum));
  CHECK(back.itl.count == own.itl.count);
  const report::Tally none = report::tally_from(*e, other);
  CHECK(none.requests.at("ok") == 0);
  CHECK(none.ttft.count == 0);
  // Buckets of another layout are not carried over; the counters still are.
  std::string text = render(r, mine);
  for (std::size_t at; (at = text.find("le=\"0.25\"")) != std::string::npos;) text.replace(at, 9, "le=\"0.3\"");
  auto changed = prom::parse_exposition(text);
  REQUIRE(changed.ok());
  const report::Tally partial = report::tally_from(*changed, mine);
  CHECK(partial.ttft.count == 0);
  CHECK(partial.requests.at("ok") == 3);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("exporters: --prom carries its counters on from the file, --json is written whole and private, and neither lets the key out") {
  const auto dir = std::filesystem::temp_directory_path() / ("infdoctor-exporters-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  core::register_secret("sk-exporter-canary-7f3a");
  auto r = run_with({820, 910, 1500}, "queueing", 1234.5);
  r.checks.front().error = "the provider said: bad key sk-exporter-canary-7f3a";
  std::vector<std::pair<std::string, std::string>> said;
  const report::Say say = [&](const std::string& level, const std::string& text) { said.emplace_back(level, text); };
  report::PromTarget base;
  base.labels = {"t", "big", "full", "lab"};
  base.rules = &built_in();

  // Twice to one file: the counters add up, the histogram too; what the file held was Prometheus text.
  const std::string prom = (dir / "infdoctor.prom").string();
  report::PromFileExporter to_file(prom, base);
  REQUIRE(to_file.write(r, say).ok());
  REQUIRE(to_file.write(r, say).ok());
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto e = prom::parse_exposition(read(prom));
  REQUIRE(e.ok());
  CHECK(prom::sum(*e, "infdoctor_requests_total", {{"outcome", "ok"}}) == 6);
  CHECK(prom::sum(*e, "infdoctor_time_to_first_token_seconds_count") == 6);
  CHECK(said.empty());
  // A file that is not Prometheus text: said, and the counters start again from this run.
  std::ofstream(prom) << "this is not { exposition\n";
  REQUIRE(to_file.write(r, say).ok());
  e = prom::parse_exposition(read(prom));
  REQUIRE(e.ok());
  CHECK(prom::sum(*e, "infdoctor_requests_total", {{"outcome", "ok"}}) == 3);
  REQUIRE(said.size() == 1);
  CHECK(said[0].first == "warning");
  CHECK(said[0].second.find("held no Prometheus text") != std::string::npos);

  // --json: the results, read back whole; mode 0600; the key scrubbed; on "-", the stream instead.
  const std::string json_path = (dir / "results.json").string();
  std::ostringstream out;
  REQUIRE(report::JsonExporter(json_path, out).write(r, say).ok());
  CHECK(out.str().empty());
  const std::string json_text = read(json_path);
  CHECK(nlohmann::json::parse(json_text)["checks"]["baseline"]["error"].get<std::string>().find("bad key") != std::string::npos);
  CHECK((std::filesystem::status(json_path).permissions() & std::filesystem::perms::all) ==
        (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
  REQUIRE(report::JsonExporter("-", out).write(r, say).ok());
  CHECK(out.str() == json_text);
  for (const auto& text : {json_text, read(prom), out.str()}) CHECK(text.find("sk-exporter-canary-7f3a") == std::string::npos);
  // A place it cannot write: the error names the path; nothing is left behind.
  const auto st = report::JsonExporter((dir / "missing" / "results.json").string(), out).write(r, say);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message.find("missing/results.json") != std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace infdoctor
