#include "run/workload.h"

#include <doctest/doctest.h>

namespace infdoctor::run {
namespace {

checks::CheckResult check(const std::string& id, std::map<std::string, double> metrics) {
  checks::CheckResult c;
  c.id = id;
  c.metrics = std::move(metrics);
  return c;
}

checks::CheckResult concurrency(std::initializer_list<std::pair<int, double>> waits) {
  checks::CheckResult c = check("concurrency", {{"max_level_count", waits.size() ? std::prev(waits.end())->first : 0}});
  c.details["levels"] = nlohmann::json::array();
  for (const auto& [streams, wait] : waits) c.details["levels"].push_back({{"streams", streams}, {"queue_wait_mean_ms", wait}});
  return c;
}

}  // namespace

TEST_CASE("parse_workload: defaults, any of the three keys, and a clear message for the rest") {
  const auto d = parse_workload("");
  REQUIRE(d.ok());
  CHECK(d->prompt_tokens == 1024);
  CHECK(d->output_tokens == 128);
  CHECK(d->concurrency == 0);
  const auto w = parse_workload("output=512,concurrency=4");
  REQUIRE(w.ok());
  CHECK(w->prompt_tokens == 1024);
  CHECK(w->output_tokens == 512);
  CHECK(w->concurrency == 4);
  CHECK(parse_workload("prompt=0")->prompt_tokens == 0);
  for (const char* bad : {"prompt=abc", "tokens=5", "output=0", "concurrency=-1", "prompt", "prompt=1e3", "output=99999999999"}) {
    CAPTURE(bad);
    const auto r = parse_workload(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("--workload") == 0);
    CHECK(r.error().detail.find("prompt=P,output=O,concurrency=C") != std::string::npos);
  }
}

TEST_CASE("price_workload: each term from its measurement, evaluated at the workload's shape") {
  const std::vector<checks::CheckResult> checks = {
      check("path", {{"tcp_rtt_p50_ms", 20}}),
      check("baseline", {{"ttft_p50_ms", 130}, {"tpot_p50_ms", 30}}),
      check("sweep", {{"prefill_ms_per_token", 0.2}, {"prefill_overhead_ms", 120}, {"decode_context_ms_per_1k_tokens", 2}}),
      concurrency({{1, 0.4}, {2, 3}, {4, 40}, {8, 900}, {16, 2600}}),
  };
  const auto m = price_workload(Workload{2000, 101, 5}, checks);
  CHECK(m.at("run.workload_prompt_tokens_count") == 2000);
  CHECK(m.at("run.workload_output_tokens_count") == 101);
  CHECK(m.at("run.workload_concurrency_count") == 5);
  CHECK(m.at("run.workload_network_ms") == doctest::Approx(20));
  CHECK(m.at("run.workload_overhead_ms") == doctest::Approx(100));  // the intercept less the round trip
  CHECK(m.at("run.workload_prefill_ms") == doctest::Approx(400));
  CHECK(m.at("run.workload_tpot_ms_per_token") == doctest::Approx(34));  // 30 at a short prompt + 2 x 2.0
  CHECK(m.at("run.workload_decode_ms") == doctest::Approx(3400));
  CHECK(m.at("run.workload_queue_ms") == doctest::Approx(40));  // level 4 is nearest 5
  CHECK(m.at("run.workload_total_ms") == doctest::Approx(120 + 400 + 3400));  // the queue comes on top

  // Concurrency unsaid: the check's highest level.
  const auto top = price_workload(Workload{}, checks);
  CHECK(top.at("run.workload_concurrency_count") == 16);
  CHECK(top.at("run.workload_queue_ms") == doctest::Approx(2600));
  // One stream: nobody waits behind itself.
  CHECK(price_workload(Workload{1024, 128, 1}, checks).at("run.workload_queue_ms") == doctest::Approx(0.4));
}

TEST_CASE("price_workload: what was not measured is no term, and never a guess") {
  // No sweep: the first token is the baseline's, at its own short prompt; decode has no growth.
  const auto m = price_workload(Workload{1024, 11, 0}, {check("baseline", {{"ttft_p50_ms", 130}, {"tpot_p50_ms", 30}})});
  CHECK(m.count("run.workload_prefill_ms") == 0);
  CHECK(m.count("run.workload_overhead_ms") == 0);
  CHECK(m.count("run.workload_network_ms") == 0);
  CHECK(m.count("run.workload_queue_ms") == 0);
  CHECK(m.at("run.workload_concurrency_count") == 1);
  CHECK(m.at("run.workload_decode_ms") == doctest::Approx(300));
  CHECK(m.at("run.workload_total_ms") == doctest::Approx(430));
  // Nothing measured: the shape only, and the body its prompt makes.
  const auto none = price_workload(Workload{}, {});
  CHECK(none.size() == 4);
  CHECK(none.at("run.workload_body_bytes") > 1024 * 3);  // 1,024 prompt tokens: about 4 KB of JSON
  CHECK(none.count("run.workload_total_ms") == 0);
}

}  // namespace infdoctor::run
