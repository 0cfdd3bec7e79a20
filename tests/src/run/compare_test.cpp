#include "run/compare.h"

#include <doctest/doctest.h>

namespace infdoctor::run {
namespace {

results::RunResult with(std::map<std::string, std::map<std::string, double>> by_check) {
  results::RunResult r;
  for (auto& [id, metrics] : by_check) {
    checks::CheckResult c;
    c.id = id;
    c.metrics = metrics;
    r.checks.push_back(c);
  }
  return r;
}

const LayerDiff& layer(const Comparison& c, const std::string& name) {
  for (const auto& l : c.layers)
    if (l.layer == name) return l;
  FAIL("no layer " << name);
  return c.layers.front();
}

}  // namespace

TEST_CASE("compare_runs: intervals decide significance, the gap is split into the layers that explain it") {
  const results::RunResult a = with({{"baseline",
                             {{"ttft_p50_ms", 300}, {"ttft_p50_ci_low_ms", 290}, {"ttft_p50_ci_high_ms", 310},
                              {"tpot_p50_ms", 10}, {"tpot_p50_ci_low_ms", 9.5}, {"tpot_p50_ci_high_ms", 10.5},
                              {"output_tokens_p50_count", 101}, {"total_p50_ms", 1300}}},
                            {"path", {{"tcp_rtt_p50_ms", 20}}},
                            {"transport", {{"tls_p50_ms", 30}, {"tls_p50_ci_low_ms", 28}, {"tls_p50_ci_high_ms", 33}}}});
  const results::RunResult b = with({{"baseline",
                             {{"ttft_p50_ms", 305}, {"ttft_p50_ci_low_ms", 295}, {"ttft_p50_ci_high_ms", 320},
                              {"tpot_p50_ms", 40}, {"tpot_p50_ci_low_ms", 38}, {"tpot_p50_ci_high_ms", 42},
                              {"output_tokens_p50_count", 101}, {"total_p50_ms", 4305}}},
                            {"path", {{"tcp_rtt_p50_ms", 21}}},
                            {"transport", {{"tls_p50_ms", 90}, {"tls_p50_ci_low_ms", 85}, {"tls_p50_ci_high_ms", 96}}}});
  const Comparison c = compare_runs(a, b, "A", "B");
  CHECK(c.slower == "B");
  const auto& decode = layer(c, "decode per output token");
  CHECK(decode.significant == "yes");
  CHECK(*decode.ratio == doctest::Approx(4.0));
  CHECK(decode.explains_ms == doctest::Approx(30.0 * 100));  // 30 ms more for each token after the first
  CHECK(layer(c, "time to first token").significant == "no");  // the intervals overlap
  CHECK(layer(c, "TLS handshake").significant == "yes");         // but only new connections pay it
  CHECK(layer(c, "TLS handshake").explains_ms == 0);
  CHECK(layer(c, "network path (TCP round trip)").significant == "unclear");  // no interval, 1 ms apart
  CHECK(layer(c, "DNS").significant.empty());                                 // not measured
  REQUIRE(c.explaining.size() == 1);
  CHECK(c.explaining[0] == "decode per output token");
  const std::string text = render_comparison(c);
  CHECK(text.find("B is slower by 3005 ms a request. Explained by:") != std::string::npos);
  CHECK(text.find("decode per output token: 3000 ms (100 % of the gap)") != std::string::npos);

  // Within 5 % end to end: no gap, nothing to explain.
  const Comparison same = compare_runs(a, a, "A", "A2");
  CHECK(same.slower.empty());
  CHECK(same.explaining.empty());
  const auto j = to_json(same);
  CHECK(j["slower"].is_null());
  CHECK(j["schema"] == "infdoctor.compare/1");
}

TEST_CASE("compare_runs: separated intervals within 5 % of each other are no difference") {
  // Two quiet servers 0.2 ms apart at 80 ms: tight intervals that do not overlap, a difference
  // no request notices. 6 % apart is one.
  const auto run = [](double ttft) {
    return with({{"baseline",
                  {{"ttft_p50_ms", ttft}, {"ttft_p50_ci_low_ms", ttft - 0.05}, {"ttft_p50_ci_high_ms", ttft + 0.05},
                   {"total_p50_ms", ttft + 100}}}});
  };
  CHECK(layer(compare_runs(run(80.1), run(80.3), "A", "B"), "time to first token").significant == "no");
  CHECK(layer(compare_runs(run(80.1), run(85.0), "A", "B"), "time to first token").significant == "yes");
  CHECK(layer(compare_runs(run(85.0), run(80.1), "A", "B"), "time to first token").significant == "yes");
}

TEST_CASE("compare_runs: the migration story, decode 6x and prefill 14x, priced on the same reference request") {
  // Each side priced the default reference request (1,024 prompt and 128 output tokens) from its
  // own measurements: B's prefill of 14x A's shows on that prompt, not on the baseline's short one.
  const auto side = [](double prefill, double tpot, double r2) {
    results::RunResult r = with({{"baseline",
                         {{"ttft_p50_ms", 60 + 32 * prefill}, {"tpot_p50_ms", tpot}, {"output_tokens_p50_count", 64},
                          {"total_p50_ms", 60 + 32 * prefill + 63 * tpot}}},
                        {"sweep", {{"prefill_ms_per_token", prefill}, {"prefill_overhead_ms", 60}, {"prefill_fit_r2_ratio", r2}}}});
    r.run_metrics = {{"run.workload_prompt_tokens_count", 1024},
                     {"run.workload_output_tokens_count", 128},
                     {"run.workload_total_ms", 60 + 1024 * prefill + 127 * tpot}};
    return r;
  };
  const Comparison c = compare_runs(side(0.2, 12, 0.99), side(2.85, 71.2, 0.98), "A", "B");
  CHECK(c.priced_on.find("1024 prompt and 128 output tokens") != std::string::npos);
  CHECK(*c.total_a == doctest::Approx(60 + 204.8 + 1524));
  const auto& prefill = layer(c, "prefill per prompt token");
  CHECK(*prefill.ratio == doctest::Approx(14.25));
  CHECK(prefill.significant == "yes");  // both fits explain their points: measured at every size
  CHECK(prefill.explains_ms == doctest::Approx((2.85 - 0.2) * 1024));
  const auto& decode = layer(c, "decode per output token");
  CHECK(decode.explains_ms == doctest::Approx((71.2 - 12) * 127));
  REQUIRE(c.explaining.size() == 2);
  CHECK(c.explaining[0] == "decode per output token");
  CHECK(c.explaining[1] == "prefill per prompt token");
  CHECK(render_comparison(c).find("prefill per prompt token: 2714 ms") != std::string::npos);

  // A fit that does not explain its points leaves the ratio to the plain bar ("likely").
  CHECK(layer(compare_runs(side(0.2, 12, 0.5), side(2.85, 71.2, 0.98), "A", "B"), "prefill per prompt token").significant ==
        "likely");
  // Without a common reference request, the baseline's short request is what both are priced on.
  results::RunResult other = side(2.85, 71.2, 0.98);
  other.run_metrics["run.workload_prompt_tokens_count"] = 4096;
  CHECK(compare_runs(side(0.2, 12, 0.99), other, "A", "B").priced_on.find("baseline") != std::string::npos);
}

}  // namespace infdoctor::run

namespace infdoctor::run {

TEST_CASE("compare_runs: the reference request's terms on each side add up to the gap, the queue on top") {
  const auto side = [](double network, double overhead, double prefill, double decode, double queue) {
    results::RunResult r;
    r.run_metrics = {{"run.workload_prompt_tokens_count", 1024}, {"run.workload_output_tokens_count", 128},
                     {"run.workload_network_ms", network},       {"run.workload_overhead_ms", overhead},
                     {"run.workload_prefill_ms", prefill},       {"run.workload_decode_ms", decode},
                     {"run.workload_queue_ms", queue},           {"run.workload_setup_ms", 0},
                     {"run.workload_total_ms", network + overhead + prefill + decode}};
    return r;
  };
  const Comparison c = compare_runs(side(20, 80, 100, 2540, 0), side(60, 300, 110, 7620, 900), "A", "B");
  REQUIRE_FALSE(c.terms.empty());
  double sum = 0;
  for (const auto& t : c.terms)
    if (t.term != "= the request alone" && t.term != "queue (on top)") sum += *t.b - *t.a;
  CHECK(sum == doctest::Approx(*c.total_b - *c.total_a));
  CHECK(c.terms.back().term == "queue (on top)");
  const std::string text = render_comparison(c);
  CHECK(text.find("B is slower by 5350 ms a request") < text.find("the reference request's terms"));
  CHECK(text.find("decode") != std::string::npos);
}

}  // namespace infdoctor::run
