// `infdoctor run` reading the engine's own /metrics (the fake's, under vLLM's names) before and
// after each check, and rules speaking from what the engine counted.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/fronts.h"
#include "support/results.h"

namespace infdoctor {

using test::finding;
using test::rules_fired;

TEST_CASE("engine /metrics: a server with two slots, its queue counted by the engine itself, speaks as queueing.engine_queue") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10, "slots": 2}}})");
  const std::string origin = server->base_url().substr(0, server->base_url().size() - 3);  // without /v1
  const auto j = test::run_results({"--base-url", server->base_url(), "--model", "big", "--quick", "--checks",
                                    "baseline,concurrency", "--metrics-url", origin + "/metrics"});
  CAPTURE(rules_fired(j));
  CHECK(j["engine"]["engine"] == "vLLM");
  CHECK(j["engine"]["scrapes_count"] == 3);  // before the first check and after each
  CHECK(j["engine"]["failure"].is_null());
  const auto& m = j["run"]["metrics"];
  // Eight streams on two slots of 190 ms: 0, 0, 190, 190, 380, 380, 570, 570 ms in the queue,
  // 285 on average; the levels before (1, 2, 4) add seven more requests and 380 ms in all.
  MESSAGE("the engine counted " << m["engine_concurrency_requests_count"] << " requests, mean queue "
                                 << m["engine_concurrency_queue_time_mean_ms"] << " ms (planted 177.3)");
  CHECK(m["engine_concurrency_requests_count"] == 15);
  CHECK(m["engine_concurrency_queue_time_mean_ms"].get<double>() == doctest::Approx((2280.0 + 380.0) / 15).epsilon(0.15));
  const auto* f = finding(j, "queueing.engine_queue");
  REQUIRE(f != nullptr);
  CHECK((*f)["scope"] == "target_model");
  CHECK((*f)["explanation"].get<std::string>().find("engine's own /metrics counted 15 requests") != std::string::npos);
  CHECK(finding(j, "queueing.slots") == nullptr);
}

TEST_CASE("engine /metrics: streams held by a gateway in front wait, the engine queues nothing: queueing.before_engine") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10}}})");
  test::Nghttpx front(test::address_of(*server), {"--backend-connections-per-frontend=2"});
  const std::string origin = front.base_url().substr(0, front.base_url().size() - 3);
  const auto j = test::run_results({"--base-url", front.base_url(), "--cacert", test::ca_pem(), "--model", "big", "--quick",
                                    "--checks", "concurrency", "--metrics-url", origin + "/metrics"});
  CAPTURE(rules_fired(j));
  CHECK(j["run"]["metrics"]["engine_concurrency_queue_time_mean_ms"].get<double>() < 5);
  const auto* f = finding(j, "queueing.before_engine");
  REQUIRE(f != nullptr);
  CHECK((*f)["scope"] == "intermediary");
  CHECK(finding(j, "queueing.engine_queue") == nullptr);
  CHECK(finding(j, "queueing.slots") == nullptr);
}

TEST_CASE("engine /metrics: the vllm preset scrapes beside the base URL, and what is not an exposition is said and skipped") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 20, "decode_ms_per_token": 3}}})");
  const auto j = test::run_results(
      {"--preset", "vllm", "--base-url", server->base_url(), "--model", "big", "--quick", "--checks", "baseline"});
  CHECK(j["engine"]["scrapes_count"] == 2);
  CHECK(j["run"]["metrics"].contains("engine_ttft_mean_ms"));

  // The models list is JSON, not the text format: the run says why and measures on.
  const auto bad = test::run_results({"--base-url", server->base_url(), "--model", "big", "--quick", "--checks", "baseline",
                                      "--metrics-url", server->base_url() + "/models"});
  CHECK(bad["engine"]["scrapes_count"] == 0);
  CHECK(bad["engine"]["failure"].get<std::string>().find("metrics exposition, line 1") != std::string::npos);
  CHECK(bad["checks"]["baseline"]["status"] == "ok");
  CHECK_FALSE(bad["run"]["metrics"].contains("engine_scrapes_count"));
}

TEST_CASE("engine /metrics: the API key goes to /metrics only on the API's own origin") {
  const std::string key = "sk-metrics-canary-1234567890";
  auto api = test::start_fake(R"({"api_key": ")" + key + R"(", "models": {"big": {"overhead_ms": 20, "decode_ms_per_token": 3}}})");
  // Another host that asks for a key of its own: what it is sent shows whether ours went along.
  auto other = test::start_fake(R"({"api_key": "sk-other", "models": {"m": {"overhead_ms": 1}}})");
  std::vector<std::string> argv = {"/usr/bin/env", "METRICS_TEST_KEY=" + key, test::infdoctor_bin(), "run",
                                   "--base-url", api->base_url(), "--api-key-env", "METRICS_TEST_KEY", "--model", "big",
                                   "--quick", "--checks", "baseline", "--metrics-url", other->base_url() + "/models", "--json", "-"};
  auto r = net::run_command(argv, std::chrono::seconds(120));
  REQUIRE(r.ok());
  const auto j = nlohmann::json::parse(r->out);
  CHECK(j["engine"]["failure"].get<std::string>().find("HTTP 401") != std::string::npos);
  REQUIRE_FALSE(other->served().empty());
  for (const auto& s : other->served()) CHECK(s.key_header.empty());
  // On the API's own origin the key goes along (llama.cpp's server guards /metrics with it): the
  // key-guarded models list answers, and is then no exposition.
  argv[argv.size() - 3] = api->base_url() + "/models";
  auto same = net::run_command(argv, std::chrono::seconds(120));
  REQUIRE(same.ok());
  const auto failure = nlohmann::json::parse(same->out)["engine"]["failure"].get<std::string>();
  CHECK(failure.find("metrics exposition, line 1") != std::string::npos);
  CHECK(same->out.find(key) == std::string::npos);
}

TEST_CASE("gateway headers: LiteLLM's own time and Cloudflare AI Gateway's cache hits are kept, counted and spoken for") {
  auto server = test::start_fake(R"({"models": {"big": {"overhead_ms": 80, "decode_ms_per_token": 5,
      "headers": {"x-litellm-overhead-duration-ms": "45.5", "cf-aig-cache-status": "HIT", "x-ms-region": "West Europe"}}}})");
  const auto j = test::run_results({"--base-url", server->base_url(), "--model", "big", "--quick", "--checks", "baseline"});
  CAPTURE(rules_fired(j));
  CHECK(j["run"]["metrics"]["gateway_overhead_p50_ms"].get<double>() == 45.5);
  CHECK(j["run"]["metrics"]["gateway_cache_hits_count"] == j["checks"]["baseline"]["samples"].size());  // every answer a hit
  CHECK(j["checks"]["baseline"]["samples"][0]["headers"]["x-ms-region"] == "West Europe");
  const auto* f = finding(j, "gateway.overhead");
  REQUIRE(f != nullptr);
  CHECK((*f)["impact_ms"].get<double>() == 45.5);
  CHECK((*f)["scope"] == "intermediary");
  CHECK(finding(j, "gateway.cached_answers") != nullptr);
}

}  // namespace infdoctor
