#include <doctest/doctest.h>

#include "run/pacer.h"
#include "support/checks_support.h"
#include "support/fake_process.h"

namespace infdoctor {

TEST_CASE("serialization: a planted parse cost of 2 ms per KB is 2048 ms per MB") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "parse_ms_per_kb": 2, "decode_ms_per_token": 2}}})");
  const auto c = test::run_check("serialization", {server->base_url(),
                                                   {{"serialization.sizes_kb", "1,128,512,1024"},
                                                    {"serialization.repeats", "1"}, {"serialization.max_tokens", "8"}},
                                                   "",
                                                   {"m", ""}});
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "upload_parse_ms_per_mb") == doctest::Approx(2048).epsilon(0.15));
  CHECK(test::metric(c, "largest_body_bytes") == 1024 * 1024);
  CHECK(test::metric(c, "stream_token_bytes") > 50);  // SSE framing and JSON around every token
  // One streamed and one whole request are one sample each: no comparison of them is made.
  CHECK(c.metrics.count("stream_overhead_ms") == 0);
}

TEST_CASE("serialization: no parse cost, a flat line") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20}}})");
  const auto c = test::run_check("serialization", {server->base_url(),
                                                   {{"serialization.sizes_kb", "1,256,1024"}, {"serialization.repeats", "1"}},
                                                   "",
                                                   {"m", ""}});
  REQUIRE(c.status == checks::CheckStatus::Ok);
  // A few ms per MB on loopback, measured, or within the scatter and reported as its noise: one or
  // the other, never a slope below its own noise printed as a cost.
  const bool measured = c.metrics.count("upload_parse_ms_per_mb") > 0;
  CHECK(measured != (c.metrics.count("upload_parse_noise_ms_per_mb") > 0));
  CHECK(test::metric(c, measured ? "upload_parse_ms_per_mb" : "upload_parse_noise_ms_per_mb") < 100);
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("serialization: a body limit (413) is recorded and stayed under, and no request counts as failed") {
  auto server = test::start_fake(R"({"max_body_bytes": 200000, "models": {"m": {"overhead_ms": 20}}})");
  run::Pacer* pacer = nullptr;
  const auto c = test::run_check("serialization", {server->base_url(),
                                                   {{"serialization.sizes_kb", "1,64,256,1024"}, {"serialization.repeats", "1"}},
                                                   "",
                                                   {"m", ""}},
                                 &pacer);
  REQUIRE_MESSAGE(c.status == checks::CheckStatus::Ok, c.reason);
  CHECK(test::metric(c, "body_limit_bytes") > 200000);
  CHECK(test::metric(c, "body_limit_bytes") < 300000);  // the 256 KB body, the first refused
  CHECK(test::metric(c, "largest_body_bytes") < 200000);
  CHECK(test::metric(c, "failures_count") == 0);
  CHECK(pacer->tally().failures.empty());
  std::size_t at_one_mb = 0;
  for (const auto& s : server->served()) at_one_mb += s.body_bytes > 1000000;
  CHECK(at_one_mb == 0);  // nothing larger than the limit was sent after it
}

}  // namespace infdoctor
