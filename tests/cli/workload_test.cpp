// The reference request (--workload) priced from a run's measurements, against the same request
// sent for real: the sum of the measured terms is what a request of that shape takes.
#include <doctest/doctest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "http/client.h"
#include "net/subprocess.h"
#include "support/fake_process.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

}  // namespace

TEST_CASE("--workload: the priced reference request takes what the same request takes for real (random engines)") {
  std::mt19937 rng(20261204);
  for (int draw = 0; draw < 3; ++draw) {
    const auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    const double overhead = uniform(30, 120), prefill = uniform(0.05, 0.4), decode = uniform(3, 12),
                 growth = uniform(0, 4);
    const int prompt = static_cast<int>(uniform(500, 3000)), output = static_cast<int>(uniform(32, 128));
    char scenario[256];
    std::snprintf(scenario, sizeof scenario,
                  R"({"models": {"m": {"overhead_ms": %.1f, "prefill_ms_per_token": %.3f, "decode_ms_per_token": %.2f, "decode_ms_per_1k_context": %.2f}}})",
                  overhead, prefill, decode, growth);
    CAPTURE(scenario);
    CAPTURE(prompt);
    CAPTURE(output);
    auto server = test::start_fake(scenario);
    const std::string shape = "prompt=" + std::to_string(prompt) + ",output=" + std::to_string(output);
    auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m",
                               "--checks", "baseline,sweep", "--quick", "--workload", shape, "--json", "-"},
                              120s);
    REQUIRE(r.ok());
    const auto j = nlohmann::json::parse(r->out);
    const auto& m = j["run"]["metrics"];
    CHECK(m["workload_prompt_tokens_count"] == prompt);
    CHECK(m["workload_output_tokens_count"] == output);
    REQUIRE(m.contains("workload_total_ms"));

    // The same shape, sent once for real.
    api::Endpoint ep;
    ep.base_url = server->base_url();
    ep.timeout = 30s;
    api::ChatRequest c;
    c.model = "m";
    c.prompt = api::synthetic_prompt(prompt);
    c.max_tokens = output;
    http::Client client;
    const auto real = api::run_chat(client, ep, c);
    REQUIRE(real.ok);
    CAPTURE(*real.total_ms);
    MESSAGE("priced " << m["workload_total_ms"].get<double>() << " ms, sent " << *real.total_ms << " ms (" << prompt
                      << " prompt, " << output << " output tokens)");
    CHECK(m["workload_total_ms"].get<double>() == doctest::Approx(*real.total_ms).epsilon(0.1 * test::kTimingSlack));
    CHECK(m["workload_prefill_ms"].get<double>() ==
          doctest::Approx(prefill * *real.prompt_tokens).epsilon(0.15 * test::kTimingSlack));
    CHECK(m["workload_tpot_ms_per_token"].get<double>() == doctest::Approx(*real.tpot_ms).epsilon(0.1 * test::kTimingSlack));
  }
}

TEST_CASE("the report says which request it priced, and what it could not judge for want of samples") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 40, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 5}}})");
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--checks",
                             "baseline,sweep", "--quick", "--workload", "prompt=2000,output=64"},
                            120s);
  REQUIRE(r.ok());
  CAPTURE(r->out);
  CHECK(r->exit_code == 0);
  // No concurrency check ran: one stream, and no queue term.
  CHECK(r->out.find("Priced on a reference request of 2000 prompt and 64 output tokens at 1 stream: ") != std::string::npos);
  CHECK(r->out.find("waiting for a slot") == std::string::npos);
  CHECK(r->out.find("ms alone (--workload changes it).") != std::string::npos);
  // --quick sends too few requests for the time series.
  CHECK(r->out.find("Slowdowns over time not judged: the time series has ") != std::string::npos);
  CHECK(r->out.find("20 are needed") != std::string::npos);

  const auto before = server->served().size();
  const auto bad = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m",
                                     "--workload", "prompt=lots"},
                                    30s);
  REQUIRE(bad.ok());
  CHECK(bad->exit_code == 64);
  CHECK(bad->err.find("--workload: prompt must be a whole number") != std::string::npos);
  CHECK(server->served().size() == before);  // refused before anything is sent
}

}  // namespace infdoctor
