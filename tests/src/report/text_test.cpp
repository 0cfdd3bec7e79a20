// The terminal report and report.html on results read back from a file: details, tables and charts
// of the wrong shape (an edited file, another version) draw nothing or are named as unreadable;
// nothing throws.
#include <doctest/doctest.h>

#include "bundle/bundle.h"
#include "report/text.h"
#include "run/runner.h"

namespace infdoctor::report {

TEST_CASE("report: unreadable check details, tables and charts are named or left out, the rest of the report stands") {
  results::RunResult r;
  r.target.base_url = "https://api.example.com/v1";
  checks::CheckResult conc = checks::CheckResult::start("concurrency");
  conc.details = {{"levels", {{{"streams", "eight"}, {"ttft_p50_ms", 1.0}}}}};  // streams is not a number
  conc.set("knee_level_count", 8);
  checks::CheckResult path = checks::CheckResult::start("path");
  path.details = {{"addresses", 42}};  // not a list of objects
  checks::CheckResult cold = checks::CheckResult::start("coldstart");
  cold.details = {{"gaps", {{{"gap_s", 1.0}}}}};  // a gap without its keys
  checks::CheckResult base = checks::CheckResult::start("baseline");
  // A table as results.json holds it, and one of the wrong shape (rows that are not lists of text).
  conc.tables.push_back(checks::table_from_json(
      {{"title", "concurrency: per level"}, {"columns", {"streams", "TTFT p50"}}, {"rows", nlohmann::json::array({nlohmann::json::array({"1", "40.0 ms"})})}}));
  path.tables.push_back(checks::table_from_json({{"title", "path: round trips"}, {"rows", {{1, 2}}}}));
  // report.html draws the charts the checks declared, never their details; a chart of the wrong
  // shape read back (series that are not a list) is named.
  conc.charts.push_back(checks::chart_from_json({{"id", "latency-vs-concurrency"}, {"caption", "TTFT"}, {"series", 3}}));
  r.checks = {path, cold, base, conc};

  std::string text;
  CHECK_NOTHROW(text = render_text(r));
  CHECK(text.find("concurrency: per level\n  streams  TTFT p50\n        1   40.0 ms\n") != std::string::npos);
  CHECK(text.find("a table of this check is unreadable") != std::string::npos);
  CHECK(text.find("  concurrency    ok") != std::string::npos);  // its row is still there

  std::string html;
  CHECK_NOTHROW(html = bundle::render_html(r));
  CHECK(html.find("a chart of this check is unreadable") != std::string::npos);
  bundle::Context ctx;
  CHECK_NOTHROW(bundle::render_summary(r, ctx));
}

TEST_CASE("results read back: a model request with fields of the wrong type stays as written, the rest are typed") {
  api::RequestSample good;
  good.ok = true;
  good.model = "m";
  good.ttft_ms = 41.5;
  good.request_id = "req-1";
  checks::CheckResult base = checks::CheckResult::start("baseline");
  base.requests.push_back({good, {{"model", "target"}}});
  results::RunResult r;
  r.target.base_url = "https://api.example.com/v1";
  r.checks.push_back(base);
  nlohmann::json j = results::to_json(r);
  auto& samples = j["checks"]["baseline"]["samples"];
  REQUIRE(samples.size() == 1);
  samples.push_back({{"model", "m"}, {"request_id", 7}, {"ttft_ms", "slow"}, {"ok", "yes"}});  // every field the wrong type
  const auto back = results::from_json(j);
  REQUIRE(back.ok());
  const auto& c = back->checks.front();
  REQUIRE(c.requests.size() == 1);
  CHECK(c.requests[0].sample.ttft_ms == 41.5);
  CHECK(c.requests[0].sample.request_id == "req-1");
  CHECK(c.requests[0].label == nlohmann::json({{"model", "target"}}));
  REQUIRE(c.samples.size() == 1);
  CHECK(c.samples[0]["ttft_ms"] == "slow");
  CHECK(checks::samples_json(c).size() == 2);  // written again, nothing lost
  bundle::Context ctx;
  CHECK_NOTHROW(bundle::render_summary(*back, ctx));
  CHECK_NOTHROW(bundle::render_html(*back));
}

TEST_CASE("results read back: a check's charts come back as written, and report.html draws them with their requests") {
  checks::CheckResult sweep = checks::CheckResult::start("sweep");
  sweep.charts.push_back({"ttft-vs-prompt", "TTFT against prompt tokens.", {"prompt", "tokens", true}, {"TTFT", "ms"},
                          {{"measured", checks::SeriesKind::Points, {{64, 41.5, "req-1"}, {2048, 240, "req-2"}}},
                           {"fit", checks::SeriesKind::Fit, {{64, 40, ""}, {2048, 238, ""}}}}});
  results::RunResult r;
  r.target.base_url = "https://api.example.com/v1";
  r.checks.push_back(sweep);
  const auto back = results::from_json(results::to_json(r));
  REQUIRE(back.ok());
  REQUIRE(back->checks.front().charts.size() == 1);
  const checks::Chart& c = back->checks.front().charts.front();
  CHECK(checks::to_json(c) == checks::to_json(sweep.charts.front()));
  CHECK(c.series[1].points[0].request_id.empty());  // a derived point names no request
  const std::string html = bundle::render_html(*back);
  CHECK(html.find("<figure data-plot=\"ttft-vs-prompt\">") != std::string::npos);
  CHECK(html.find("measured: 2048, 240 (request req-2)") != std::string::npos);
  CHECK(html.find("prompt (tokens)") != std::string::npos);
}

TEST_CASE("report: a preset's timing signals, seen and not seen, counted from the samples") {
  const api::Preset* openai = api::find_preset("openai");
  REQUIRE(openai != nullptr);
  results::RunResult r;
  r.target.base_url = "https://api.openai.com/v1";
  checks::CheckResult base = checks::CheckResult::start("baseline");
  api::RequestSample answered;
  answered.ok = true;
  answered.headers = {{"openai-processing-ms", "12"}, {"x-request-id", "r"}};
  for (int i = 0; i < 3; ++i) base.requests.push_back({answered, nullptr});
  base.requests.push_back({api::RequestSample{}, nullptr});  // failed: not counted
  r.checks.push_back(base);
  r.preset = run::preset_signals(*openai, r);
  CHECK(r.preset["requests"] == 3);
  const std::string text = render_text(r);
  CHECK(text.find("preset openai: timing signals seen: openai-processing-ms (3 of 3), x-request-id (3 of 3)") !=
        std::string::npos);
  CHECK(text.find("not seen: x-ratelimit-* (0 of 3); a gateway or proxy on the way may strip them") != std::string::npos);
  // From an edited file: wrong types count as absent, nothing throws.
  r.preset = {{"name", 5}, {"requests", "x"}, {"signals", {{{"signal", "a"}, {"seen_in", "3"}}, 7}}};
  std::string edited;
  CHECK_NOTHROW(edited = render_text(r));
  CHECK(edited.find("preset ?: timing signals seen: none") != std::string::npos);
}

}  // namespace infdoctor::report
