// The client measured against the fake provider over loopback: planted delays must come back as
// measured numbers within tolerance, and faults as failures with their phase.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "api/chat.h"
#include "api/openai.h"
#include "stats/summary.h"
#include "support/fake_process.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

api::Endpoint endpoint_for(const fake::Server& s, bool tls) {
  api::Endpoint ep;
  ep.base_url = s.base_url();
  if (tls) ep.tls.cacert = test::ca_pem();
  ep.timeout = 20s;
  return ep;
}

api::ChatRequest chat(const std::string& model, int max_tokens) {
  api::ChatRequest c;
  c.model = model;
  c.prompt = "say something";
  c.max_tokens = max_tokens;
  return c;
}

const char* kPlanted = R"({"models": {"m": {"overhead_ms": 300, "decode_ms_per_token": 20}}})";

}  // namespace

TEST_CASE("planted TTFT 300 ms and 20 ms per token over 64 tokens come back measured") {
  for (const bool tls : {false, true}) {
    SUBCASE(tls ? "TLS" : "plain") {
      auto server = test::start_fake(kPlanted, tls);
      http::Client client;
      const auto s = api::run_chat(client, endpoint_for(*server, tls), chat("m", 64), /*fresh=*/true);
      REQUIRE_MESSAGE(s.ok, s.error_message);
      REQUIRE(s.ttft_ms.has_value());
      REQUIRE(s.request_sent_ms.has_value());
      // From the request written, the planted 300 ms; before it, the fresh connection's connect
      // and TLS handshake, which a loaded machine stretches.
      CHECK(*s.ttft_ms - *s.request_sent_ms == doctest::Approx(300.0).epsilon(0.05 * test::kTimingSlack));
      CHECK(*s.ttft_ms >= 300.0);
      const auto itl = stats::summarize(s.itl_ms);
      REQUIRE(itl.p50.has_value());
      CHECK(std::abs(*itl.p50 - 20.0) < 2.0);
      CHECK(*s.output_tokens == 64);
      CHECK(s.content_events == 64);
      CHECK(s.itl_ms.size() == 63);
      CHECK(*s.tpot_ms == doctest::Approx(20.0).epsilon(0.05));
      CHECK(*s.total_ms == doctest::Approx(300.0 + 63 * 20.0).epsilon(0.05));
      CHECK(s.request_id.rfind("req-", 0) == 0);
      CHECK(s.remote_ip == "127.0.0.1");
      CHECK(s.http_version == "1.1");
      // The headers and the role-only chunk come at once; the first token does not.
      CHECK(*s.ttfb_ms < 100.0);
      CHECK(*s.first_event_ms < 100.0);
      // The request leaves after connection setup and before the first response byte.
      REQUIRE(s.request_sent_ms.has_value());
      CHECK(*s.request_sent_ms >= *s.connect_ms + s.tls_ms.value_or(0));
      CHECK(*s.request_sent_ms < *s.ttfb_ms);
      if (tls) {
        REQUIRE(s.tls_ms.has_value());
        CHECK(*s.tls_ms > 0.0);
      } else {
        CHECK_FALSE(s.tls_ms.has_value());
      }
    }
  }
}

TEST_CASE("a large upload: TTFB and TTFT count from the request's start, not from the end of the upload") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 50, "parse_ms_per_kb": 1}}})");
  http::Client client;
  auto c = chat("m", 1);
  c.pad_bytes = 512 * 1024;  // the fake spends 1 ms per KB reading it: about 512 ms
  const auto s = api::run_chat(client, endpoint_for(*server, false), c, /*fresh=*/true);
  REQUIRE_MESSAGE(s.ok, s.error_message);
  CHECK(*s.ttfb_ms == doctest::Approx(512).epsilon(0.05));
  CHECK(*s.ttft_ms == doctest::Approx(562).epsilon(0.05));
  // The headers leave first; the body's upload stays inside the server-side time.
  REQUIRE(s.request_sent_ms.has_value());
  CHECK(*s.request_sent_ms < 100.0);
}

TEST_CASE("a second request on the same client reuses the connection") {
  auto server = test::start_fake(R"({"models": {"m": {}}})");
  http::Client client;
  const auto ep = endpoint_for(*server, false);
  const auto a = api::run_chat(client, ep, chat("m", 4));
  const auto b = api::run_chat(client, ep, chat("m", 4));
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  CHECK_FALSE(a.connection_reused);
  CHECK(b.connection_reused);
  CHECK_FALSE(b.connect_ms.has_value());
  const auto c = api::run_chat(client, ep, chat("m", 4), /*fresh=*/true);
  CHECK_FALSE(c.connection_reused);
}

TEST_CASE("parallel streams through one multi handle, over plain HTTP and over HTTPS speaking HTTP/1.1") {
  for (const bool tls : {false, true}) {
    CAPTURE(tls);
    auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 100, "decode_ms_per_token": 10}}})", tls);
    http::Client client;
    std::vector<api::ChatRequest> chats(8, chat("m", 16));
    const auto t0 = core::SteadyClock::now();
    const auto samples = api::run_chats(client, endpoint_for(*server, tls), chats);
    const double wall_ms = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now()));
    REQUIRE(samples.size() == 8);
    for (const auto& s : samples) {
      CHECK(s.ok);
      CHECK(*s.output_tokens == 16);
      CHECK(s.http_version == "1.1");
      REQUIRE(s.ttft_ms.has_value());
      REQUIRE(s.request_sent_ms.has_value());
      // From the request written: over HTTPS the handshakes (and the wait for the first one's
      // ALPN, to learn whether it multiplexes) come before.
      CHECK(*s.ttft_ms - *s.request_sent_ms == doctest::Approx(100.0).epsilon(0.10 * test::kTimingSlack));
      CHECK(*s.request_sent_ms <= *s.ttfb_ms);
    }
    // In parallel the batch takes about one request's time (100 + 15*10 ms), not eight: over
    // HTTP/1.1 each stream has a connection of its own.
    CHECK(wall_ms < 2 * 250.0);
  }
}

TEST_CASE("a batch's schedule: a request no sooner than its start_after, a lane's requests one after another") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 100}}})");
  http::Client client;
  std::vector<api::ChatRequest> chats;
  for (int i = 0; i < 6; ++i) {  // lanes 0 and 1, three requests each
    chats.push_back(chat("m", 1));
    chats.back().lane = i % 2;
  }
  for (const auto after : {50ms, 250ms}) {  // two on no lane, on a schedule
    chats.push_back(chat("m", 1));
    chats.back().start_after = after;
  }
  const auto called = core::SteadyClock::now();
  const auto samples = api::run_chats(client, endpoint_for(*server, false), chats);
  REQUIRE(samples.size() == 8);
  std::map<std::string, core::SteadyTime> arrived;
  for (const auto& r : server->served()) arrived[r.request_id] = r.arrived;
  for (const auto& s : samples) {
    REQUIRE_MESSAGE(s.ok, s.error_message);
    REQUIRE(arrived.count(s.request_id) == 1);
  }
  for (int i = 2; i < 6; ++i) {
    CAPTURE(i);
    // Sent when the lane's last answer ended, not before and not long after; the server saw each
    // arrive a planted 100 ms or more after the one before it.
    const double ended = samples[i - 2].sent_after_ms + *samples[i - 2].total_ms;
    CHECK(samples[i].sent_after_ms >= ended - 1.0);
    CHECK(samples[i].sent_after_ms <= ended + 20.0 * test::kTimingSlack);
    CHECK(core::to_ms(core::elapsed_us(arrived[samples[i - 2].request_id], arrived[samples[i].request_id])) >= 99.0);
  }
  // A planted start is a floor: the request leaves no sooner, and the server sees it arrive no
  // sooner after the call.
  for (const auto& [i, after] : {std::pair{6, 50.0}, std::pair{7, 250.0}}) {
    CAPTURE(i);
    CHECK(samples[i].sent_after_ms >= after);
    CHECK(samples[i].sent_after_ms <= after + 10.0 * test::kTimingSlack);
    CHECK(core::to_ms(core::elapsed_us(called, arrived[samples[i].request_id])) >= after - 0.5);  // kernel stamp to steady clock
  }
}

TEST_CASE("slots=1 serves requests one after another") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 100, "slots": 1}}})");
  http::Client client;
  std::vector<api::ChatRequest> chats(3, chat("m", 1));
  auto samples = api::run_chats(client, endpoint_for(*server, false), chats);
  std::vector<double> ttft;
  for (const auto& s : samples) {
    REQUIRE(s.ok);
    ttft.push_back(*s.ttft_ms);
  }
  std::sort(ttft.begin(), ttft.end());
  CHECK(ttft[0] == doctest::Approx(100).epsilon(0.15));
  CHECK(ttft[1] == doctest::Approx(200).epsilon(0.15));
  CHECK(ttft[2] == doctest::Approx(300).epsilon(0.15));
}

TEST_CASE("stamped tokens: each event carries the fake's arrival and send times, which bracket the client's") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "decode_ms_per_token": 10, "stamp_tokens": true}}})");
  http::Client client;
  api::ChatStream cs;
  std::vector<http::Request> reqs{api::build_chat_request(endpoint_for(*server, false), chat("m", 8), false)};
  reqs[0].sink = &cs;
  const auto t0 = core::SteadyClock::now();
  auto responses = client.perform_all(reqs);
  cs.finish();
  REQUIRE(responses[0].status.ok());
  const auto us = [](core::SteadyTime t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  };
  std::vector<long long> sent;
  long long arrived = 0;
  std::istringstream in(cs.text());
  for (std::string stamp; std::getline(in, stamp, ';');) {
    const auto slash = stamp.find('/');
    REQUIRE(slash != std::string::npos);
    arrived = std::stoll(stamp.substr(0, slash));
    sent.push_back(std::stoll(stamp.substr(slash + 1)));
  }
  REQUIRE(sent.size() == 8);
  REQUIRE(cs.content_event_times().size() == 8);
  CHECK(arrived >= us(t0));  // one clock for both processes
  CHECK((sent[0] - arrived) / 1000.0 == doctest::Approx(30).epsilon(0.2 * test::kTimingSlack));
  std::vector<double> gaps_ms;
  for (std::size_t i = 0; i < sent.size(); ++i) {
    CHECK(us(cs.content_event_times()[i]) >= sent[i]);  // received after it was sent
    if (i > 0) {
      CHECK(sent[i] > sent[i - 1]);
      gaps_ms.push_back((sent[i] - sent[i - 1]) / 1000.0);
    }
  }
  // The fake sends on a fixed schedule, token i at 10 ms x i: a token a loaded machine sends late
  // leaves the next gap short, so the schedule is read from the middle gap and the whole span.
  std::sort(gaps_ms.begin(), gaps_ms.end());
  CHECK(gaps_ms[gaps_ms.size() / 2] == doctest::Approx(10).epsilon(0.3 * test::kTimingSlack));
  CHECK((sent.back() - sent.front()) / 1000.0 / 7 == doctest::Approx(10).epsilon(0.15 * test::kTimingSlack));
}

TEST_CASE("a buffering intermediary: several tokens per event") {
  auto server = test::start_fake(R"({"models": {"m": {"decode_ms_per_token": 5, "tokens_per_event": 4}}})");
  http::Client client;
  const auto s = api::run_chat(client, endpoint_for(*server, false), chat("m", 32));
  REQUIRE(s.ok);
  CHECK(*s.output_tokens == 32);
  CHECK(s.content_events == 8);
  CHECK(*s.events_per_token == doctest::Approx(0.25));
}

TEST_CASE("failures are data, with their phase") {
  SUBCASE("unknown model: 404 with the provider's message") {
    auto server = test::start_fake(kPlanted);
    http::Client client;
    const auto s = api::run_chat(client, endpoint_for(*server, false), chat("nope", 4));
    CHECK_FALSE(s.ok);
    CHECK(s.http_status == 404);
    CHECK(s.error == "http_status");
    CHECK(s.error_message.find("The model `nope` does not exist") != std::string::npos);
  }
  SUBCASE("refused port") {
    std::uint16_t port;
    {
      auto server = test::start_fake(kPlanted);
      port = server->port();
    }
    http::Client client;
    api::Endpoint ep;
    ep.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
    const auto s = api::run_chat(client, ep, chat("m", 4));
    CHECK_FALSE(s.ok);
    CHECK(s.error == "connect_failed");
    CHECK(s.failed_phase == "connect");
  }
  SUBCASE("a stall past the deadline times out in the receive phase, on time") {
    auto server = test::start_fake(
        R"({"models": {"m": {"decode_ms_per_token": 1, "faults": [{"kind": "stall", "every": 1, "after_tokens": 2, "stall_ms": 10000}]}}})");
    http::Client client;
    auto ep = endpoint_for(*server, false);
    ep.timeout = 700ms;
    const auto t0 = core::SteadyClock::now();
    const auto s = api::run_chat(client, ep, chat("m", 8));
    const double took_ms = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now()));
    CHECK_FALSE(s.ok);
    CHECK(s.error == "timeout");
    CHECK(s.failed_phase == "receive");
    CHECK(s.content_events == 2);  // what came before the stall is kept
    CHECK(took_ms < 700 + 500);
  }
  // A stream that breaks after a few tokens: what came before the break is kept.
  struct Broken {
    const char* name;
    const char* fault;
    const char* error;
    std::size_t content_events;
  };
  for (const Broken& b : {Broken{"close mid-stream", "close_mid_stream", "connection_closed", 3},
                          Broken{"error event mid-stream", "error_event", "stream_error", 2}}) {
    SUBCASE(b.name) {
      auto server = test::start_fake(std::string(R"({"models": {"m": {"faults": [{"kind": ")") + b.fault +
                                     R"(", "every": 1, "after_tokens": )" + std::to_string(b.content_events) + "}]}}}");
      http::Client client;
      const auto s = api::run_chat(client, endpoint_for(*server, false), chat("m", 8));
      CHECK_FALSE(s.ok);
      CHECK(s.error == b.error);
      CHECK(s.content_events == b.content_events);
    }
  }
  SUBCASE("429 with Retry-After") {
    auto server = test::start_fake(R"({"models": {"m": {"faults": [{"kind": "429", "first": 1, "retry_after_s": 2}]}}})");
    http::Client client;
    const auto ep = endpoint_for(*server, false);
    const auto a = api::run_chat(client, ep, chat("m", 2));
    CHECK(a.http_status == 429);
    CHECK(a.headers.at("retry-after") == "2");
    const auto b = api::run_chat(client, ep, chat("m", 2));
    CHECK(b.ok);
  }
  SUBCASE("TLS without the CA: verification fails in the TLS phase") {
    auto server = test::start_fake(kPlanted, /*tls=*/true);
    http::Client client;
    api::Endpoint ep;
    ep.base_url = server->base_url();
    const auto s = api::run_chat(client, ep, chat("m", 2));
    CHECK_FALSE(s.ok);
    CHECK(s.error == "tls_failed");
    CHECK(s.failed_phase == "tls");
  }
}

TEST_CASE("non-streamed requests") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 50, "decode_ms_per_token": 5}}})");
  http::Client client;
  auto c = chat("m", 10);
  c.stream = false;
  const auto s = api::run_chat(client, endpoint_for(*server, false), c);
  REQUIRE(s.ok);
  CHECK(*s.output_tokens == 10);
  CHECK_FALSE(s.ttft_ms.has_value());  // no stream, no first token
  CHECK(*s.total_ms == doctest::Approx(50 + 9 * 5).epsilon(0.2));
}

TEST_CASE("the fake's prefix cache: a repeated prompt's whole blocks are free and reported as cached, in both flavours") {
  auto server = test::start_fake(
      R"({"models": {"m": {"overhead_ms": 20, "prefill_ms_per_token": 1, "prefix_cache_block_tokens": 16}}})");
  for (const auto flavour : {api::Flavour::OpenAI, api::Flavour::Anthropic}) {
    api::Endpoint ep = endpoint_for(*server, false);
    ep.flavour = flavour;
    api::ChatRequest c = chat("m", 1);
    // Different from the first word on, so the two flavours share no prefix.
    c.prompt = std::string(flavour == api::Flavour::OpenAI ? "openai " : "anthropic ") + api::synthetic_prompt(200);
    http::Client client;
    const auto first = api::run_chat(client, ep, c);
    const auto again = api::run_chat(client, ep, c);
    REQUIRE(first.ok);
    REQUIRE(again.ok);
    CHECK(*first.prompt_tokens == 201);
    CHECK(*again.prompt_tokens == 201);  // all of the prompt, cached or not
    CHECK(*first.cached_tokens == 0);
    CHECK(*again.cached_tokens == 192);  // 12 whole blocks of 16
    // 192 tokens at 1 ms each are not prefilled again.
    CHECK(*first.ttft_ms - *again.ttft_ms == doctest::Approx(192).epsilon(0.25));
  }
}

}  // namespace infdoctor
