#include "api/sample.h"

#include <doctest/doctest.h>

#include <cmath>

namespace infdoctor::api {
namespace {

using namespace std::chrono_literals;

std::string content_event(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"" + text + "\"}}]}\n\n";
}

http::Response ok_response(core::SteadyTime started) {
  http::Response r;
  r.http_status = 200;
  r.started = started;
  r.is_tls = true;
  r.times.namelookup = core::Micros(1000);
  r.times.connect = core::Micros(3000);
  r.times.appconnect = core::Micros(9000);
  r.times.pretransfer = core::Micros(9100);
  r.times.starttransfer = core::Micros(20000);
  r.times.total = core::Micros(400000);
  r.headers = {{"x-request-id", "req-1"}, {"x-queue-time", "5"}};
  return r;
}

}  // namespace

TEST_CASE("a streamed sample: phases, TTFT, TPOT, inter-token gaps") {
  const auto t0 = core::SteadyClock::now();
  http::Response r = ok_response(t0);
  ChatStream cs;
  cs.on_body("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", t0 + 20ms);
  cs.on_body(content_event("a"), t0 + 100ms);
  cs.on_body(content_event("b") + content_event("c"), t0 + 130ms);  // one chunk, two events
  cs.on_body(content_event("d"), t0 + 190ms);
  cs.on_body("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n",
             t0 + 250ms);
  cs.finish();
  const RequestSample s = make_sample(r, &cs, "m");
  CHECK(s.ok);
  CHECK(s.request_id == "req-1");
  CHECK(*s.dns_ms == doctest::Approx(1.0));
  CHECK(*s.connect_ms == doctest::Approx(2.0));
  CHECK(*s.tls_ms == doctest::Approx(6.0));
  CHECK(*s.ttfb_ms == doctest::Approx(20.0));
  CHECK(*s.server_wait_ms == doctest::Approx(10.9));  // without our stamp: from libcurl's pretransfer
  r.request_out_at = core::Micros(12000);  // with it: from the request leaving, on our clock
  const RequestSample stamped = make_sample(r, nullptr, "m");
  CHECK(*stamped.request_sent_ms == doctest::Approx(12.0));
  CHECK(*stamped.server_wait_ms == doctest::Approx(8.0));
  CHECK(*s.first_event_ms == doctest::Approx(20.0));
  CHECK(*s.ttft_ms == doctest::Approx(100.0));   // the role-only chunk is not the first token
  CHECK(*s.total_ms == doctest::Approx(190.0));  // the last content event, not the usage chunk
  CHECK(*s.output_tokens == 7);
  CHECK(s.tokens_from_usage);
  CHECK(*s.prompt_tokens == 11);
  CHECK(*s.events_per_token == doctest::Approx(4.0 / 7.0));
  CHECK(*s.tpot_ms == doctest::Approx(90.0 / 6.0));
  REQUIRE(s.itl_ms.size() == 3);
  CHECK(s.itl_ms[0] == doctest::Approx(30.0));
  CHECK(s.itl_ms[1] == doctest::Approx(0.0));
  CHECK(s.itl_ms[2] == doctest::Approx(60.0));
  const auto j = to_json(s);
  CHECK(j["ttft_ms"] == doctest::Approx(100.0));
  CHECK(j["error"].is_null());
}

TEST_CASE("reused connections report no connect phases, and HTTP errors carry the provider's words") {
  const auto t0 = core::SteadyClock::now();
  http::Response r = ok_response(t0);
  r.connection_reused = true;
  r.http_status = 429;
  r.body = R"({"error":{"message":"Rate limit reached","type":"rate_limit_error"}})";
  r.headers.emplace_back("retry-after", "2");
  ChatStream cs;
  cs.finish();
  const RequestSample s = make_sample(r, &cs, "m");
  CHECK_FALSE(s.ok);
  CHECK(s.error == "http_status");
  CHECK(s.failed_phase == "http");
  CHECK(s.error_message == "HTTP 429: Rate limit reached (retry-after 2)");
  CHECK_FALSE(s.dns_ms.has_value());
  CHECK_FALSE(s.connect_ms.has_value());
  CHECK_FALSE(s.tls_ms.has_value());
  CHECK(to_json(s)["dns_ms"].is_null());
}

TEST_CASE("stream faults fail the sample but keep what was measured") {
  const auto t0 = core::SteadyClock::now();
  SUBCASE("error event") {
    ChatStream cs;
    cs.on_body(content_event("a"), t0 + 50ms);
    cs.on_body("data: {\"error\":{\"message\":\"overloaded\"}}\n\n", t0 + 60ms);
    cs.finish();
    const RequestSample s = make_sample(ok_response(t0), &cs, "m");
    CHECK_FALSE(s.ok);
    CHECK(s.error == "stream_error");
    CHECK(*s.ttft_ms == doctest::Approx(50.0));
  }
  SUBCASE("not an event stream") {
    ChatStream cs;
    cs.on_body("<html>gateway</html>", t0 + 5ms);
    cs.finish();
    const RequestSample s = make_sample(ok_response(t0), &cs, "m");
    CHECK_FALSE(s.ok);
    CHECK(s.error == "malformed_stream");
  }
  SUBCASE("a stream that ends without [DONE] or a finish reason was cut short") {
    ChatStream cs;
    cs.on_body(content_event("a") + content_event("b"), t0 + 50ms);
    cs.finish();
    const RequestSample s = make_sample(ok_response(t0), &cs, "m");
    CHECK_FALSE(s.ok);
    CHECK(s.error == "truncated_stream");
    CHECK(s.error_message.find("without [DONE]") != std::string::npos);
    CHECK(s.content_events == 2);  // what came is kept
  }
  SUBCASE("a finish reason without [DONE] is a whole answer") {
    ChatStream cs;
    cs.on_body(content_event("a") + "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
               t0 + 50ms);
    cs.finish();
    CHECK(make_sample(ok_response(t0), &cs, "m").ok);
  }
  SUBCASE("transport failure") {
    http::Response r = ok_response(t0);
    r.status = core::Error{core::ErrorCode::ConnectionClosed, "connection closed early (receive)", "transfer closed"};
    r.failed_phase = "receive";
    ChatStream cs;
    cs.on_body(content_event("a"), t0 + 50ms);
    cs.finish();
    const RequestSample s = make_sample(r, &cs, "m");
    CHECK_FALSE(s.ok);
    CHECK(s.error == "connection_closed");
    CHECK(s.failed_phase == "receive");
    CHECK(s.content_events == 1);
  }
}

TEST_CASE("a sample read back from its JSON is the same sample, field for field") {
  const auto t0 = core::SteadyClock::now();
  http::Response r = ok_response(t0);
  r.request_out_at = core::Micros(12000);
  r.start_lag = core::Micros(300);
  ChatStream cs;
  cs.on_body(content_event("a"), t0 + 100ms);
  cs.on_body(content_event("b"), t0 + 130ms);
  cs.on_body("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2}}\n\n", t0 + 140ms);
  cs.finish();
  RequestSample s = make_sample(r, &cs, "m");
  s.server_timings = {{"prompt_ms", 3.5}};
  const auto written = to_json(s);
  const auto back = sample_from_json(written);
  REQUIRE(back.ok());
  CHECK(to_json(*back) == written);
  CHECK(back->itl_ms == s.itl_ms);
  CHECK(back->headers == s.headers);
  // A failed one keeps what failed.
  RequestSample failed;
  failed.error = "timeout";
  failed.error_message = "no byte for 30 s";
  failed.failed_phase = "receive";
  const auto failed_back = sample_from_json(to_json(failed));
  REQUIRE(failed_back.ok());
  CHECK(failed_back->error == "timeout");
  CHECK(failed_back->failed_phase == "receive");
  // Wrong types are an error naming the sample, never a throw.
  CHECK_FALSE(sample_from_json({{"model", "m"}, {"ttft_ms", "slow"}}).ok());
  CHECK_FALSE(sample_from_json({{"headers", {{"a", 1}}}}).ok());
  CHECK_FALSE(sample_from_json(nlohmann::json::array()).ok());
  // A count no integer holds (a hand-edited or corrupted file) is refused, not converted.
  for (double huge : {3.9e108, -3.9e108, 9.3e18, std::nan("")}) {
    CHECK_FALSE(sample_from_json({{"bytes_sent", huge}}).ok());
    CHECK_FALSE(sample_from_json({{"output_tokens", huge}}).ok());
  }
  CHECK(sample_from_json({{"output_tokens", 12.0}}).value().output_tokens == 12);
}


TEST_CASE("an answer records what was asked, and answers to the same request are told from others") {
  const ChatRequest asked = synthetic_request("Qwen2.5-7B-Instruct", 32, 32);
  RequestSample s;
  s.model = asked.model;
  record_asked(s, asked);
  CHECK(s.asked_prompt_tokens == 32);
  CHECK(s.asked_max_tokens == 32);
  CHECK(s.asked_stream);
  CHECK(s.asked_accept_encoding == kSdkAcceptEncoding);
  CHECK(s.asked_pad_bytes == 0);
  CHECK(same_request(s, asked));
  // Each thing asked differently is another request.
  std::vector<ChatRequest> others(7, asked);
  others[0].model = "Qwen2.5-72B-Instruct";
  others[1] = synthetic_request(asked.model, 64, 32);
  others[2].max_tokens = 64;
  others[3].stream = false;
  others[4].accept_encoding = "";
  others[5].pad_bytes = 1024;
  others[6].shared_words = 16;  // a prefix shared with other requests: not the same prompt
  for (std::size_t i = 0; i < others.size(); ++i) {
    CAPTURE(i);
    CHECK_FALSE(same_request(s, others[i]));
    CHECK(same_prompt(s, others[i]) == (i == 2));  // another max_tokens is the same prompt
  }
  // A body of the user's own asks its own prompt and max_tokens: none recorded, never the same.
  ChatRequest body = asked;
  body.body = nlohmann::json{{"messages", nlohmann::json::array()}};
  RequestSample b;
  b.model = asked.model;
  record_asked(b, body);
  CHECK(b.asked_prompt_tokens == 0);
  CHECK(b.asked_max_tokens == 0);
  CHECK_FALSE(same_request(b, body));
  CHECK_FALSE(same_prompt(b, body));
  // What was asked survives the JSON.
  const auto back = sample_from_json(to_json(s));
  REQUIRE(back.ok());
  CHECK(same_request(*back, asked));
}

TEST_CASE("Server-Timing headers are read metric by metric, and what has no dur or a broken one is left out") {
  const auto t = parse_server_timing(R"(cache;desc="hit, warm", db;dur=53, app;desc="render";dur=47.2,miss, x;dur=abc, Q;DUR=1e1)");
  CHECK(t.size() == 3);
  CHECK(t.at("db") == doctest::Approx(53));
  CHECK(t.at("app") == doctest::Approx(47.2));
  CHECK(t.at("Q") == doctest::Approx(10));
  CHECK(parse_server_timing("").empty());
  CHECK(parse_server_timing(";;,,;dur=").empty());
}

}  // namespace infdoctor::api

namespace infdoctor::api {

TEST_CASE("clumps: events that share a read are clumps, tokens that share an event are not") {
  // Built by hand: 32 tokens at 10 ms each, from 100 ms on.
  const auto stream = [](int tokens_per_event, int events_per_read) {
    RequestSample s;
    s.ok = true;
    s.output_tokens = 32;
    s.ttfb_ms = 20;
    const int events = 32 / tokens_per_event;
    std::vector<double> at;  // when each event arrived
    for (int e = 0; e < events; ++e) {
      const double made = 100 + 10.0 * ((e + 1) * tokens_per_event - 1);  // its last token's time
      const int read = e / events_per_read;
      const double left = 100 + 10.0 * (std::min(events, (read + 1) * events_per_read) * tokens_per_event - 1);
      at.push_back(events_per_read == 1 ? made : left);
    }
    s.content_events = at.size();
    s.ttft_ms = at.front();
    s.total_ms = at.back();
    s.content_arrivals = 1;
    for (std::size_t i = 1; i < at.size(); ++i) {
      s.itl_ms.push_back(at[i] - at[i - 1]);
      if (at[i] != at[i - 1]) ++s.content_arrivals;
    }
    return s;
  };
  SUBCASE("four tokens an event, each event as it is made: as generated") {
    const auto s = stream(4, 1);
    CHECK(*arrivals_per_event(s) == 1.0);
    CHECK(*arrivals_per_token(s) == 0.25);
    CHECK(arrived_as_generated(s));
    CHECK_FALSE(clumps(s).has_value());
  }
  SUBCASE("one token an event, eight events a read: the first token waits for seven more") {
    const auto s = stream(1, 8);
    CHECK(*arrivals_per_event(s) == doctest::Approx(4.0 / 32));
    CHECK_FALSE(arrived_as_generated(s));
    const auto c = clumps(s);
    REQUIRE(c.has_value());
    CHECK(c->generation_ms_per_token == doctest::Approx(10));
    CHECK(c->first_token_wait_ms == doctest::Approx(70));
  }
  SUBCASE("two tokens an event, four events a read: a clump of eight tokens") {
    const auto c = clumps(stream(2, 4));
    REQUIRE(c.has_value());
    CHECK(c->generation_ms_per_token == doctest::Approx(10));
    CHECK(c->first_token_wait_ms == doctest::Approx(70));
  }
  SUBCASE("held whole: from the headers to the end, an upper bound") {
    const auto s = stream(1, 32);
    CHECK(s.content_arrivals == 1);
    const auto c = clumps(s);
    REQUIRE(c.has_value());
    CHECK(c->generation_ms_per_token == doctest::Approx((410.0 - 20) / 32));
    CHECK(c->first_token_wait_ms == doctest::Approx(31 * (410.0 - 20) / 32));
  }
}

}  // namespace infdoctor::api

namespace infdoctor::api {

TEST_CASE("a 429's quota, from its words or its spent budget header") {
  const auto quota = [](const std::string& body, std::vector<std::pair<std::string, std::string>> headers) {
    http::Response r;
    r.http_status = 429;
    r.body = body;
    r.headers = std::move(headers);
    return make_sample(r, nullptr, "gpt-4.1").quota;
  };
  // OpenAI's, on tokens and on requests; Anthropic's input tokens.
  CHECK(quota(R"({"error":{"message":"Rate limit reached for gpt-4.1 in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 1500.","type":"tokens","code":"rate_limit_exceeded"}})",
              {}) == "tokens");
  CHECK(quota(R"({"error":{"message":"Rate limit reached for gpt-4.1 in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.","type":"requests","code":"rate_limit_exceeded"}})",
              {}) == "requests");
  CHECK(quota(R"({"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit of 40,000 input tokens per minute."}})",
              {}) == "tokens");
  // Words that name neither: the spent budget says which.
  CHECK(quota(R"({"error":{"message":"Too many requests"}})", {{"x-ratelimit-remaining-tokens", "0"}, {"x-ratelimit-remaining-requests", "12"}}) ==
        "tokens");
  CHECK(quota(R"({"error":{"message":"Too many requests"}})", {{"x-ratelimit-remaining-tokens", "800"}, {"x-ratelimit-remaining-requests", "0"}}) ==
        "requests");
  CHECK(quota(R"({"error":{"message":"Too many requests"}})", {}).empty());
}

TEST_CASE("an answer ended by itself: by its finish reason, else by the server's own count, never by an estimate") {
  RequestSample s;
  s.output_tokens = 20;
  s.output_tokens_source = kTokensFromUsage;
  for (const char* reason : {"stop", "end_turn", "stop_sequence"}) {
    s.finish_reason = reason;
    CHECK(ended_by_itself(s, 32));
  }
  s.finish_reason = "length";  // capped, whatever the count says
  CHECK_FALSE(ended_by_itself(s, 32));
  s.finish_reason = "max_tokens";
  CHECK_FALSE(ended_by_itself(s, 32));
  s.finish_reason.clear();
  CHECK(ended_by_itself(s, 32));
  CHECK_FALSE(ended_by_itself(s, 20));
  // A count from the text's bytes can fall a token short of a capped answer: not enough alone.
  s.output_tokens = 31;
  s.output_tokens_source = kTokensCalibrated;
  CHECK_FALSE(ended_by_itself(s, 32));
}

}  // namespace infdoctor::api
