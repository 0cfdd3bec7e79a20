#include "rules/rules.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "report/text.h"
#include "rules/embedded.h"
#include "run/runner.h"
#include "run/slo.h"
#include "support/rule_text.h"

namespace infdoctor::rules {
namespace {

const std::vector<std::string> kKnown = {"dns.p50_ms", "dns.max_ms", "dns.samples_count", "dns.failures_count", "dns.timeouts_count", "path.tcp_rtt_p50_ms",
                                         "baseline.ttft_p50_ms", "baseline.total_p50_ms"};

RuleSet load(const std::string& text, LoadReport& report, const std::string& name = "rules/test.json") {
  return load_texts({RuleFile{name, text}}, kKnown, report);
}

std::string rule_file(const std::string& rule_fields) {
  return R"({"family": "dns", "rules": [)" "\n" + rule_fields + "\n]}";
}

// A valid rule file of one rule dns.x, with some fields' JSON values replaced (an empty value
// leaves the field out). `when` and what follows it stand on line 3.
std::string one_rule(const std::map<std::string, std::string>& changed) {
  const std::vector<std::pair<std::string, std::string>> fields = {
      {"id", R"("dns.x")"}, {"cause", R"("dns_slow")"}, {"scope", R"("client_path")"}, {"severity", R"("info")"}, {"title", R"("t")"},
      {"when", R"("1")"},   {"impact_ms", R"("1")"},   {"confidence", "1"},        {"explain", R"("e")"}};
  std::string rule = "{";
  for (const auto& [name, value] : fields) {
    auto it = changed.find(name);
    const std::string& v = it == changed.end() ? value : it->second;
    if (v.empty()) continue;
    rule += std::string(rule.size() > 1 ? ", " : "") + (name == "when" ? "\n" : "") + "\"" + name + "\": " + v;
  }
  for (const auto& [name, value] : changed)  // fields the valid rule does not have
    if (std::none_of(fields.begin(), fields.end(), [&](const auto& f) { return f.first == name; }))
      rule += ", \"" + name + "\": " + value;
  return rule_file(rule + "}");
}

const char* kGood = R"({"id": "dns.slow", "cause": "dns_slow", "scope": "client_path", "severity": "warning", "title": "slow DNS",
  "when": "dns.p50_ms > 100 && dns.samples_count >= 3", "impact_ms": "dns.p50_ms - 20", "impact_is": "the lookup",
  "confidence": "dns.samples_count >= 5 ? 0.9 : 0.6", "explain": "median {dns.p50_ms}, worst {dns.max_ms}",
  "ask_provider": [], "actions": ["try another resolver"], "evidence": ["dns.max_ms"]})";

}  // namespace

TEST_CASE("expressions: dotted names, ternaries, and the position of an error") {
  auto e = Expression::compile("dns.p50_ms > 100 && dns.samples_count >= 3 ? 1 : 0");
  REQUIRE(e.ok());
  CHECK(e->variables() == std::vector<std::string>{"dns.p50_ms", "dns.samples_count"});
  CHECK(*e->eval({{"dns.p50_ms", 150}, {"dns.samples_count", 5}}) == 1);
  CHECK(*e->eval({{"dns.p50_ms", 50}, {"dns.samples_count", 5}}) == 0);
  CHECK_FALSE(e->eval({{"dns.p50_ms", 150}}).has_value());  // a metric not measured: no answer
  auto bad = Expression::compile("dns.p50_ms > * 3");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("at position 13") != std::string::npos);
  CHECK(bad.error().message.find("position", bad.error().message.find("position") + 1) == std::string::npos);
  auto div = Expression::compile("1 / dns.p50_ms");
  REQUIRE(div.ok());
  CHECK_FALSE(div->eval({{"dns.p50_ms", 0}}).has_value());  // not finite
}

TEST_CASE("an applicable rule fires with its numbers, a rule over unmeasured metrics is quiet") {
  LoadReport report;
  const RuleSet set = load(rule_file(kGood), report);
  REQUIRE(report.errors.empty());
  REQUIRE(set.rules.size() == 1);
  auto found = diagnose(set, {{"dns.p50_ms", 420}, {"dns.samples_count", 5}, {"dns.max_ms", 900}});
  REQUIRE(found.size() == 1);
  const Finding& f = found[0];
  CHECK(f.rule == "dns.slow");
  CHECK(f.cause == "dns_slow");
  CHECK(f.severity == Severity::Warning);
  CHECK(f.impact_ms == 400);
  CHECK(f.confidence == doctest::Approx(0.9));
  CHECK(f.explanation == "median 420 ms, worst 900 ms");
  CHECK(f.evidence.at("dns.max_ms") == 900);
  CHECK(f.evidence.at("dns.p50_ms") == 420);  // what `when` read is evidence too
  CHECK(f.share == doctest::Approx(1.0));     // nothing else measured: all of it
  CHECK(diagnose(set, {{"dns.p50_ms", 420}}).empty());  // samples_count not measured
  CHECK(diagnose(set, {{"dns.p50_ms", 20}, {"dns.samples_count", 5}}).empty());
}

TEST_CASE("malformed rules: many broken rules, each error on its own rule's line") {
  // 300 rules, one a line, the same id, each with a bad `when` and no title: every error must
  // name its own line (the locator walks the file in order; the fuzzer found the old one slow).
  std::string text = "{\"family\": \"dns\", \"rules\": [\n";
  for (int i = 0; i < 300; ++i)
    text += std::string(i ? "," : "") + R"({"id": "dns.x", "cause": "dns_slow", "severity": "info", "when": "1 +", )"
            R"("impact_ms": "1", "confidence": 1, "explain": "e"})" "\n";
  text += "]}";
  LoadReport report;
  load(text, report);
  int when_errors = 0;
  for (const auto& e : report.errors) {
    if (e.find(": when: ") == std::string::npos) continue;
    ++when_errors;
    CAPTURE(e);
    CHECK(e.rfind("rules/test.json:" + std::to_string(1 + when_errors) + ": rule dns.x: when:", 0) == 0);
  }
  CHECK(when_errors == 300);
}

TEST_CASE("malformed rules: every problem named with file, line, rule id, field and position") {
  struct Case {
    const char* name;
    std::string text;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"not JSON", "{\"family\": \"dns\",\n \"rules\": [,]}", "rules/test.json:2: not valid JSON"},
      {"a number out of range", "{\"family\": 1e99999}", "rules/test.json:1: not readable JSON"},
      {"bad expression", one_rule({{"when", R"("dns.p50_ms >")"}}),
       "rules/test.json:3: rule dns.x: when: 'dns.p50_ms >': Unexpected end of expression at position"},
      {"unknown metric", one_rule({{"when", R"("dns.p50 > 3")"}}), "rules/test.json:3: rule dns.x: when: unknown metric 'dns.p50'"},
      {"unknown cause", one_rule({{"cause", R"("gremlins")"}}), "rule dns.x: cause: 'gremlins' is not in the cause taxonomy"},
      {"bad severity", one_rule({{"severity", R"("meh")"}}), "rule dns.x: severity: must be info, warning or critical"},
      {"unknown placeholder", one_rule({{"explain", R"("was {dns.nope}")"}}),
       "rule dns.x: explain: placeholder {dns.nope} is not a known metric"},
      {"missing field", one_rule({{"impact_ms", ""}}), "rule dns.x: impact_ms: missing"},
      {"id outside the family", one_rule({{"id", R"("tls.x")"}}), "rule tls.x: id: must start with the family, 'dns.'"},
      {"confidence out of range", one_rule({{"confidence", "3"}}), "rule dns.x: confidence: must lie in [0, 1]"},
      {"unknown scope", one_rule({{"scope", R"("the cloud")"}}),
       "rule dns.x: scope: 'the cloud' is not one of endpoint, target_model, intermediary, client_path"},
      {"conditional scope without else", one_rule({{"scope", R"({"when": "1", "then": "endpoint"})"}}),
       "rule dns.x: scope: a conditional scope is"},
      {"conditional scope over an unknown metric", one_rule({{"scope", R"({"when": "dns.nope > 1", "then": "endpoint", "else": "client_path"})"}}),
       "rule dns.x: scope: unknown metric 'dns.nope'"},
      {"unless over an unknown metric", one_rule({{"unless", R"("dns.nope > 1")"}}), "rule dns.x: unless: unknown metric 'dns.nope'"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      LoadReport report;
      const RuleSet set = load(c.text, report);
      REQUIRE_FALSE(report.errors.empty());
      CHECK_MESSAGE(report.errors.front().find(c.expect) != std::string::npos, report.errors.front());
      CHECK(set.rules.empty());
    }
  }
  SUBCASE("duplicates across files, and every error of every file listed") {
    LoadReport report;
    load_texts({RuleFile{"a.json", rule_file(kGood)}, RuleFile{"b.json", rule_file(kGood)},
                RuleFile{"c.json", "not json"}},
               kKnown, report);
    REQUIRE(report.errors.size() == 2);
    CHECK(report.errors[0].find("b.json:2: rule dns.slow: id: duplicate rule id") != std::string::npos);
    CHECK(report.errors[1].find("c.json:1: not valid JSON") != std::string::npos);
  }
  SUBCASE("an unknown key warns and the rule still loads") {
    LoadReport report;
    std::string text = kGood;
    text.insert(1, "\"colour\": \"red\", ");
    const RuleSet set = load(rule_file(text), report);
    CHECK(report.errors.empty());
    REQUIRE(report.warnings.size() == 1);
    CHECK(report.warnings[0].find("unknown key 'colour'") != std::string::npos);
    CHECK(set.rules.size() == 1);
  }
}

TEST_CASE("ranking: causes before notes, then milliseconds, confidence, id, one finding per cause, shares") {
  const std::string text = test::rules_text("dns", {{"dns.a", "dns_slow", "warning", 100, 0.5},
                                                    {"dns.b", "dns_slow", "warning", 300, 0.5},
                                                    {"dns.c", "network_rtt", "info", 200, 0.9},
                                                    {"dns.d", "tls_slow", "warning", 200, 0.4}});
  LoadReport report;
  const RuleSet set = load(text, report);
  REQUIRE(report.errors.empty());
  const auto found = diagnose(set, {{"run.typical_total_ms", 1000}});
  REQUIRE(found.size() == 3);
  CHECK(found[0].rule == "dns.b");  // 300 ms; dns.a (same cause, fewer ms) is folded into it
  CHECK(found[1].rule == "dns.d");  // 200 ms: a cause, critical or not
  CHECK(found[2].rule == "dns.c");  // 200 ms and more confident, but info: a note after the causes
  // Shares are of the 1000 ms reference request: DNS and TLS come on top of it, the round trip inside.
  CHECK(found[0].share == doctest::Approx(300.0 / 1000));
  CHECK(found[0].on_top);
  CHECK(found[2].share == doctest::Approx(200.0 / 1000));
  CHECK_FALSE(found[2].on_top);
  CHECK(found[2].severity == Severity::Info);
  // The folded rule stays beside the one that speaks for its cause: not ranked, its own share.
  REQUIRE(found[0].also.size() == 1);
  CHECK(found[0].also[0].rule == "dns.a");
  CHECK(found[0].also[0].share == doctest::Approx(100.0 / 1000));
  CHECK(found[0].also[0].on_top);
  CHECK(found[1].also.empty());
  // It goes to JSON and back with it, and the report prints it under it.
  const auto back = finding_from_json(to_json(found[0]));
  REQUIRE(back.has_value());
  REQUIRE(back->also.size() == 1);
  CHECK(back->also[0].rule == "dns.a");
  CHECK(back->also[0].impact_ms == 100);
  // One level is read: a file that nests `also` in `also` (written by nobody) does not recurse.
  auto nested = to_json(found[0]);
  nested["also"][0]["also"] = nlohmann::json::array({to_json(found[1])});
  const auto read = finding_from_json(nested);
  REQUIRE(read.has_value());
  REQUIRE(read->also.size() == 1);
  CHECK(read->also[0].also.empty());
  const std::string printed = report::render_diagnosis(found, {});
  CHECK(printed.find("also for this cause: [warning]") != std::string::npos);
  CHECK(printed.find("(rule dns.a)") != std::string::npos);

  // A note of a cause never hides its warning, however many milliseconds the note counts (the
  // run's first request against the idle gaps of the coldstart check).
  const RuleSet cold = load(test::rules_text("coldstart", {{"coldstart.first", "cold_start", "info", 2400, 0.6},
                                                           {"coldstart.gaps", "cold_start", "warning", 1800, 0.9}}),
                            report);
  const auto folded = diagnose(cold, {});
  REQUIRE(folded.size() == 1);
  CHECK(folded[0].rule == "coldstart.gaps");
  REQUIRE(folded[0].also.size() == 1);
  CHECK(folded[0].also[0].rule == "coldstart.first");  // the note, with its 2400 ms, beside it
}

TEST_CASE("templates format by unit") {
  CHECK(render_template("{a_ms} {b_ratio} {c_count} {d_s} {e_bytes} {f_ms_per_token}",
                        {{"a_ms", 1234.5}, {"b_ratio", 0.456}, {"c_count", 7}, {"d_s", 3},
                         {"e_bytes", 2048}, {"f_ms_per_token", 0.5}}) ==
        "1234 ms 0.46 7 3.0 s 2048 bytes 0.5 ms per token");
}

TEST_CASE("a sentence that names an unmeasured value is left out whole, never printed with n/a in it") {
  const std::map<std::string, double> m = {{"a_ms", 12}, {"b_count", 3}};
  CHECK(render_template("First {a_ms}. Over {missing_count|token} generation is most. Then {b_count|request}.", m) ==
        "First 12.0 ms. Then 3 requests.");
  CHECK(render_template("Only {missing_ms} here", m).empty());
  CHECK(render_template("Both {a_ms} and {b_count}", m) == "Both 12.0 ms and 3");
}

TEST_CASE("the rules the build embeds are rules/ as it is, and load without an error") {
  std::vector<std::string> warnings;
  auto embedded = run::load_rules("", warnings);
  REQUIRE_MESSAGE(embedded.ok(), (embedded.ok() ? "" : embedded.error().detail));
  CHECK(warnings.empty());
  auto on_disk = run::load_rules(std::string(INFDOCTOR_SOURCE_DIR) + "/rules", warnings);
  REQUIRE(on_disk.ok());
  REQUIRE(embedded->rules.size() == on_disk->rules.size());
  for (std::size_t i = 0; i < embedded->files.size(); ++i)
    CHECK(embedded->files[i].content == on_disk->files[i].content);
  // Every cause of the taxonomy has at least one rule.
  for (const auto& cause : causes()) {
    CAPTURE(cause);
    CHECK(std::any_of(on_disk->rules.begin(), on_disk->rules.end(), [&](const Rule& r) { return r.cause == cause; }));
  }
}

TEST_CASE("a conditional scope and an unless follow the metrics, and an unmeasured condition does not hold") {
  LoadReport report;
  const RuleSet set = load(rule_file(R"({"id": "dns.x", "cause": "dns_slow", "severity": "warning", "title": "t",
      "scope": {"when": "dns.failures_count > 0", "then": "endpoint", "else": "client_path"},
      "unless": "dns.timeouts_count > 2", "when": "dns.p50_ms > 100", "impact_ms": "dns.p50_ms", "confidence": 1,
      "explain": "e"})"),
                           report);
  REQUIRE_MESSAGE(report.errors.empty(), report.errors.front());
  auto scope_of = [&](const std::map<std::string, double>& m) {
    const auto found = diagnose(set, m);
    return found.empty() ? std::string("(quiet)") : found[0].scope;
  };
  CHECK(scope_of({{"dns.p50_ms", 300}}) == "client_path");
  CHECK(scope_of({{"dns.p50_ms", 300}, {"dns.failures_count", 0}}) == "client_path");
  CHECK(scope_of({{"dns.p50_ms", 300}, {"dns.failures_count", 2}}) == "endpoint");
  CHECK(scope_of({{"dns.p50_ms", 300}, {"dns.timeouts_count", 3}}) == "(quiet)");
  CHECK(scope_of({{"dns.p50_ms", 300}, {"dns.timeouts_count", 1}}) == "client_path");
}

TEST_CASE("every built-in rule with a cause says where it sits") {
  std::vector<std::string> warnings;
  auto rules = run::load_rules("", warnings);
  REQUIRE(rules.ok());
  CHECK(warnings.empty());
  for (const auto& r : rules->rules) {
    CAPTURE(r.id);
    if (!r.cause.empty()) CHECK_FALSE(r.scope.empty());
  }
}

TEST_CASE("every rule has its fixture under tests/rules, every fixture its rule, and each case holds") {
  std::vector<std::string> warnings;
  auto rules = run::load_rules("", warnings);
  REQUIRE(rules.ok());
  const std::string dir = std::string(INFDOCTOR_SOURCE_DIR) + "/tests/rules";
  std::set<std::string> fixtures;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") fixtures.insert(e.path().stem().string());
  for (const auto& r : rules->rules) CHECK_MESSAGE(fixtures.count(r.id), "no fixture tests/rules/" << r.id << ".json");
  for (const auto& name : fixtures) {
    CAPTURE(name);
    std::ifstream in(dir + "/" + name + ".json");
    const auto doc = nlohmann::json::parse(in);
    REQUIRE(doc["rule"] == name);
    // The rule alone, so another rule of its cause cannot speak for it.
    LoadReport report;
    RuleSet one = load_texts(rules->files, run::known_metrics(), report);
    one.rules.erase(std::remove_if(one.rules.begin(), one.rules.end(), [&](const Rule& r) { return r.id != name; }),
                    one.rules.end());
    REQUIRE_MESSAGE(one.rules.size() == 1, "fixture for a rule that does not exist: " << name);
    bool fires_seen = false, quiet_seen = false;
    for (const auto& c : doc["cases"]) {
      CAPTURE(c["name"].get<std::string>());
      const auto found = diagnose(one, c["metrics"].get<std::map<std::string, double>>());
      const bool fires = c["expect"] == "fires";
      (fires ? fires_seen : quiet_seen) = true;
      CHECK(found.size() == (fires ? 1u : 0u));
      if (fires && !found.empty()) {
        CHECK(found[0].explanation.find("n/a") == std::string::npos);  // every placeholder was measured
        CHECK(found[0].impact_ms >= 0);
        // A case may state what the finding says, not only that it fires.
        if (c.contains("impact_ms")) CHECK(found[0].impact_ms == doctest::Approx(c["impact_ms"].get<double>()).epsilon(0.001));
        if (c.contains("severity")) CHECK(std::string(severity_name(found[0].severity)) == c["severity"].get<std::string>());
        if (c.contains("scope")) CHECK(found[0].scope == c["scope"].get<std::string>());
      }
    }
    CHECK(fires_seen);
    CHECK(quiet_seen);
  }
}

// What a tired reader trips on in a rendered sentence: a count of one with a plural noun, a number
// in scientific notation, a unit said twice, a placeholder left unmeasured.
std::vector<std::string> sentence_faults(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex one_plural(
      R"re((^|[^0-9.,])1 (requests|streams|hops|tokens|answers|lookups|runs|episodes|gaps|segments|replicas|events|models|connections|levels|retries|stalls|decode requests)\b)re");
  std::smatch m;
  if (std::regex_search(text, m, one_plural)) out.push_back("a count of one with a plural: '" + m[0].str() + "'");
  if (std::regex_search(text, m, std::regex(R"re([0-9]e[+-][0-9])re"))) out.push_back("scientific notation: '" + m[0].str() + "'");
  for (const char* twice : {"ms ms", "per token per token", "% %", "tokens tokens", "per MB per megabyte"})
    if (text.find(twice) != std::string::npos) out.push_back(std::string("a unit twice: '") + twice + "'");
  if (text.find("n/a") != std::string::npos) out.push_back("an unmeasured placeholder");
  return out;
}

TEST_CASE("every rule's sentences read as words: counts of one agree with their nouns, no scientific notation, no unit twice") {
  std::vector<std::string> warnings;
  auto rules = run::load_rules("", warnings);
  REQUIRE(rules.ok());
  const std::string dir = std::string(INFDOCTOR_SOURCE_DIR) + "/tests/rules";
  int rendered = 0;
  for (const auto& r : rules->rules) {
    CAPTURE(r.id);
    std::ifstream in(dir + "/" + r.id + ".json");
    const auto doc = nlohmann::json::parse(in, nullptr, false);
    if (doc.is_discarded()) continue;  // the fixture test above says what is wrong
    for (const auto& c : doc["cases"]) {
      if (c["expect"] != "fires") continue;
      const auto metrics = c["metrics"].get<std::map<std::string, double>>();
      std::vector<std::string> texts = {r.explain, r.impact_is};
      texts.insert(texts.end(), r.ask_provider.begin(), r.ask_provider.end());
      texts.insert(texts.end(), r.actions.begin(), r.actions.end());
      for (const auto& text : texts) {
        if (text.empty()) continue;
        // As the fixture measured it, then with each count it names at one.
        std::vector<std::map<std::string, double>> variants = {metrics};
        for (const auto& [name, _] : metrics)
          if (name.size() > 6 && name.compare(name.size() - 6, 6, "_count") == 0 && text.find("{" + name) != std::string::npos) {
            auto one = metrics;
            one[name] = 1;
            variants.push_back(one);
          }
        for (const auto& v : variants) {
          const std::string out = render_template(text, v);
          ++rendered;
          for (const auto& problem : sentence_faults(out)) CHECK_MESSAGE(false, problem << " in: " << out);
        }
      }
    }
  }
  CHECK(rendered > 150);
  // The lint itself catches what it looks for.
  CHECK(sentence_faults("over 1 hops").size() == 1);
  CHECK(sentence_faults("adds 1.54e+03 before").size() == 1);
  CHECK(sentence_faults("of 21 requests over 1.5 s, 1 of them").empty());
}

TEST_CASE("a healthy endpoint yields no finding above info") {
  std::vector<std::string> warnings;
  auto rules = run::load_rules("", warnings);
  REQUIRE(rules.ok());
  // Measured against a healthy fake provider (tests/cli/run_test.cpp's scenario, --quick).
  const std::map<std::string, double> healthy = {
      {"path.tcp_rtt_p50_ms", 0.1},        {"path.tcp_rtt_samples_count", 5},  {"path.tcp_loss_ratio", 0},
      {"transport.connect_p50_ms", 0.1},   {"transport.keepalive_ratio", 1},   {"transport.ttfb_p50_ms", 0.8},
      {"coldstart.baseline_ttft_p50_ms", 62}, {"coldstart.baseline_ttft_mad_ms", 2}, {"coldstart.cold_gaps_count", 0},
      {"coldstart.first_request_penalty_ms", 3}, {"coldstart.first_request_ttft_ms", 65},
      {"baseline.ttft_p50_ms", 62},        {"baseline.ttft_p90_ms", 64},       {"baseline.tpot_p50_ms", 8},
      {"baseline.total_p50_ms", 310},      {"baseline.itl_p50_ms", 8},         {"baseline.itl_p99_ms", 9},
      {"baseline.events_per_token_ratio", 1}, {"baseline.samples_count", 3},   {"baseline.output_tokens_p50_count", 32},
      {"baseline.small_ttft_p50_ms", 31},  {"baseline.small_tpot_p50_ms", 3},  {"baseline.small_total_p50_ms", 125},
      {"baseline.ttft_ratio", 2},          {"baseline.tpot_ratio", 2.7},       {"sweep.prefill_ms_per_token", 0.02},
      {"sweep.prefill_overhead_ms", 61},   {"sweep.prefill_fit_r2_ratio", 0.99}, {"sweep.prefill_samples_count", 3},
      {"sweep.max_prompt_tokens_count", 2048}, {"sweep.ttft_at_max_prompt_ms", 102}, {"sweep.decode_ms_per_token", 8},
      {"sweep.stopped_early_count", 0},    {"serialization.upload_parse_ms_per_mb", 15},
      {"serialization.upload_parse_fit_r2_ratio", 0.9}, {"serialization.stream_overhead_ms", 2},
      {"serialization.nonstream_total_p50_ms", 180}, {"concurrency.latency_growth_ratio", 0.13},
      {"concurrency.throughput_scaling_ratio", 0.98}, {"concurrency.knee_level_count", 8},
      {"concurrency.max_level_count", 8},  {"concurrency.ttft_p50_at_1_ms", 62}, {"concurrency.ttft_p50_at_max_ms", 64},
      {"run.rate_limited_count", 0},       {"run.requests_count", 37},         {"run.retry_wait_ms", 0}};
  for (const auto& f : diagnose(rules.value(), healthy)) {
    CAPTURE(f.rule);
    CHECK(f.severity == Severity::Info);
  }
}

}  // namespace infdoctor::rules
