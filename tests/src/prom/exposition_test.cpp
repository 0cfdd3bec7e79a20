#include "prom/exposition.h"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "api/flavour.h"
#include "run/engine_metrics.h"

namespace infdoctor {
namespace {

std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(INFDOCTOR_FIXTURES "/metrics/") + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& text) {
  auto r = prom::parse_exposition(text);
  return r.ok() ? std::string("(parsed)") : r.error().message;
}

}  // namespace

TEST_CASE("exposition: vLLM's /metrics in its own names, labels, histograms and all") {
  auto e = prom::parse_exposition(read_fixture("vllm.prom"));
  REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.error().message));
  CHECK(e->types.at("vllm:request_queue_time_seconds") == "histogram");
  CHECK(e->types.at("vllm:num_requests_waiting") == "gauge");
  CHECK(*prom::sum(*e, "vllm:num_requests_waiting") == 14);
  CHECK(*prom::sum(*e, "python_gc_objects_collected_total") == 12866 + 3472);
  CHECK(*prom::sum(*e, "python_gc_objects_collected_total", {{"generation", "1"}}) == 3472);
  CHECK(*prom::sum(*e, "vllm:request_queue_time_seconds_bucket", {{"le", "+Inf"}}) == 60);
  CHECK_FALSE(prom::sum(*e, "vllm:absent").has_value());
  const auto s = run::read_engine(*e);
  REQUIRE(s.has_value());
  CHECK(s->engine == "vLLM");
  CHECK(*s->running == 3);
  CHECK(*s->waiting == 14);
  CHECK(*s->kv_usage_ratio == doctest::Approx(0.9731));
  CHECK(*s->preemptions == 7);
  CHECK(*s->queue_sum_s == doctest::Approx(18.25));
  CHECK(*s->queue_count == 60);
  CHECK(*s->prefix_hits == 30720);
  CHECK(*s->spec_draft_tokens == 9000);
  CHECK(*s->spec_accepted_tokens == 5400);
}

TEST_CASE("exposition: llama.cpp's and TGI's /metrics are read as their engines") {
  auto l = prom::parse_exposition(read_fixture("llamacpp.prom"));
  REQUIRE(l.ok());
  auto ls = run::read_engine(*l);
  REQUIRE(ls.has_value());
  CHECK(ls->engine == "llama.cpp");
  CHECK(*ls->waiting == 5);
  CHECK(*ls->running == 2);
  CHECK_FALSE(ls->queue_count.has_value());
  auto t = prom::parse_exposition(read_fixture("tgi.prom"));
  REQUIRE(t.ok());
  auto ts = run::read_engine(*t);
  REQUIRE(ts.has_value());
  CHECK(ts->engine == "TGI");
  CHECK(*ts->queue_sum_s == doctest::Approx(1.5));
  CHECK(*ts->queue_count == 10);
}

TEST_CASE("exposition: the format's corners: escapes, special values, timestamps, blank lines and comments") {
  auto e = prom::parse_exposition(
      "# a comment\n\n"
      "m{path=\"a\\\\b\",quote=\"say \\\"hi\\\"\",nl=\"x\\ny\"} 1.5e3 1700000000000\r\n"
      "m_nan NaN\nm_inf +Inf\nm_ninf -Inf\nm_trailing{a=\"b\",} 2\n  \t\n");
  REQUIRE_MESSAGE(e.ok(), (e.ok() ? "" : e.error().message));
  REQUIRE(e->samples.size() == 5);
  CHECK(*e->samples[0].label("path") == "a\\b");
  CHECK(*e->samples[0].label("quote") == "say \"hi\"");
  CHECK(*e->samples[0].label("nl") == "x\ny");
  CHECK(e->samples[0].value == 1500);
  CHECK(std::isnan(e->samples[1].value));
  CHECK(std::isinf(e->samples[2].value));
  CHECK(e->samples[3].value < 0);
  CHECK(e->samples[4].value == 2);
}

TEST_CASE("exposition: what is not the format is an error naming its line, never a guess") {
  CHECK(error_of("ok 1\n9bad 1\n") == "metrics exposition, line 2: a sample must start with a metric name");
  CHECK(error_of("m 1\nm two\n").find("line 2: 'two' is not a number") != std::string::npos);
  CHECK(error_of("m{a=b} 1").find("line 1: label a needs a quoted value") != std::string::npos);
  CHECK(error_of("m{a=\"b\" 1").find("line 1: ',' or '}' expected") != std::string::npos);
  CHECK(error_of("m{a=\"b\",a=\"c\"} 1").find("label a given twice") != std::string::npos);
  CHECK(error_of("m{a=\"\\x\"} 1").find("quoted value") != std::string::npos);
  CHECK(error_of("m 1 12.5").find("not a timestamp") != std::string::npos);
  CHECK(error_of("m 1 2 3").find("text after the timestamp") != std::string::npos);
  CHECK(error_of("m1").find("line 1: a blank expected") != std::string::npos);
  CHECK(error_of("# TYPE m widget\n").find("unknown type 'widget'") != std::string::npos);
  CHECK(error_of("# TYPE m gauge\n# TYPE m gauge\n").find("a second # TYPE for m") != std::string::npos);
  CHECK(error_of("m 0x10").find("not a number") != std::string::npos);
  CHECK(error_of("m inf").find("not a number") != std::string::npos);
  CHECK(error_of("<html><body>502 Bad Gateway</body></html>").find("line 1") != std::string::npos);
}

TEST_CASE("engine_preset: the engines whose /metrics is read by default are presets, and hosted APIs are not") {
  for (const char* p : {"vllm", "sglang", "tgi", "llama.cpp"}) {
    CAPTURE(p);
    CHECK(api::find_preset(p) != nullptr);
    CHECK(run::engine_preset(p));
  }
  for (const char* p : {"openai", "anthropic", "ollama", ""}) CHECK_FALSE(run::engine_preset(p));
}

TEST_CASE("engine_metrics: the counters' growth between scrapes, the concurrency check's alone, and a restart") {
  run::EngineSnapshot a{"vLLM", "", 0.0, 0.0, 0.1, 0.0, 1.0, 10.0, 2.0, 10.0, 1000.0, 0.0, 0.0, 0.0};
  run::EngineSnapshot b = a;
  b.after = "baseline";
  b.queue_sum_s = 1.2;  // 10 more requests, 0.02 s of queue each
  b.queue_count = 20;
  b.ttft_sum_s = 3.0;
  b.ttft_count = 20;
  b.prefix_queries = 2000;
  b.prefix_hits = 250;
  b.spec_draft_tokens = 400;  // 400 proposed during the run, 300 of them accepted
  b.spec_accepted_tokens = 300;
  run::EngineSnapshot c = b;
  c.after = "concurrency";
  c.queue_sum_s = 5.2;  // 8 more, 0.5 s each
  c.queue_count = 28;
  c.waiting = 3;
  c.kv_usage_ratio = 0.6;
  const auto m = run::engine_metrics({a, b, c});
  CHECK(m.at("run.engine_scrapes_count") == 3);
  CHECK(m.at("run.engine_queue_time_mean_ms") == doctest::Approx(4200.0 / 18));
  CHECK(m.at("run.engine_concurrency_queue_time_mean_ms") == doctest::Approx(500));
  CHECK(m.at("run.engine_concurrency_requests_count") == 8);
  CHECK(m.at("run.engine_waiting_max_count") == 3);
  CHECK(m.at("run.engine_kv_cache_usage_max_ratio") == doctest::Approx(0.6));
  CHECK(m.at("run.engine_prefix_cache_hit_ratio") == doctest::Approx(0.25));
  CHECK(m.at("run.engine_spec_draft_tokens_count") == 400);
  CHECK(m.at("run.engine_spec_acceptance_ratio") == doctest::Approx(0.75));
  CHECK_FALSE(run::engine_metrics({b, c}).count("run.engine_spec_acceptance_ratio"));  // none proposed between
  // A counter that went back (the engine restarted between scrapes) gives no mean at all.
  run::EngineSnapshot restarted = c;
  restarted.queue_count = 3;
  restarted.queue_sum_s = 0.1;
  CHECK_FALSE(run::engine_metrics({a, restarted}).count("run.engine_queue_time_mean_ms"));
}

}  // namespace infdoctor
