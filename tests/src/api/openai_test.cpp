#include "api/openai.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace infdoctor::api {
namespace {

using nlohmann::json;

std::string read_stream(const std::string& name) {
  std::ifstream in(std::string(INFDOCTOR_FIXTURES "/streams/") + name, std::ios::binary);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Feeds a recorded stream split at `split`, each half stamped with its own arrival time.
ChatStream feed(const std::string& s, std::size_t split, core::SteadyTime t0) {
  ChatStream cs;
  CHECK(cs.on_body(std::string_view(s).substr(0, split), t0));
  CHECK(cs.on_body(std::string_view(s).substr(split), t0 + std::chrono::milliseconds(10)));
  cs.finish();
  return cs;
}

}  // namespace

TEST_CASE("chat request body") {
  ChatRequest r;
  r.model = "m1";
  r.prompt = "hi \"there\"";
  r.max_tokens = 7;
  const json j = json::parse(build_chat_body(r));
  CHECK(j["model"] == "m1");
  CHECK(j["messages"][0]["role"] == "user");
  CHECK(j["messages"][0]["content"] == "hi \"there\"");
  CHECK(j["max_tokens"] == 7);
  CHECK(j["stream"] == true);
  CHECK(j["stream_options"]["include_usage"] == true);
  CHECK(j["temperature"] == 0.0);

  SUBCASE("non-streamed requests ask for no stream options") {
    r.stream = false;
    const json k = json::parse(build_chat_body(r));
    CHECK(k["stream"] == false);
    CHECK_FALSE(k.contains("stream_options"));
  }
  SUBCASE("padding grows the body but not what it says") {
    const std::string plain = build_chat_body(r);
    r.pad_bytes = 10000;
    const std::string padded = build_chat_body(r);
    CHECK(padded.size() == plain.size() + 10000);
    CHECK(json::parse(padded) == json::parse(plain));
  }
}

TEST_CASE("synthetic prompt has the asked number of words") {
  for (int n : {0, 1, 5, 64, 1000}) {
    const std::string p = synthetic_prompt(n);
    std::istringstream in(p);
    int words = 0;
    for (std::string w; in >> w;) ++words;
    CHECK(words == n);
  }
}

TEST_CASE("synthetic prompt: no phrase repeats, a shorter prompt is a prefix of a longer one") {
  // The old prompt cycled 16 words: every 4-word phrase came back every 16 words, text an n-gram
  // speculator (prompt lookup) predicts at once. Of 2,000 words' 4-word phrases, almost none may
  // repeat: drawn at random from the vocabulary, a repeat has a chance of about 1,999 / 253^4 / 2.
  const std::string p = synthetic_prompt(2000);
  std::vector<std::string> w;
  std::istringstream in(p);
  for (std::string x; in >> x;) w.push_back(x);
  REQUIRE(w.size() == 2000);
  std::set<std::string> phrases;
  int repeats = 0;
  for (std::size_t i = 0; i + 4 <= w.size(); ++i) repeats += !phrases.insert(w[i] + " " + w[i + 1] + " " + w[i + 2] + " " + w[i + 3]).second;
  CHECK(repeats == 0);
  std::set<std::string> distinct(w.begin(), w.end());
  CHECK(distinct.size() >= 0.9 * static_cast<double>(prompt_words().size()));  // the whole vocabulary in use
  CHECK(p.rfind(synthetic_prompt(700), 0) == 0);
}

TEST_CASE("synthetic prompt: every word is one token of the test engine's vocabulary") {
  // tests/engine/make_gguf.py's WORDS: a word outside them would be spelled byte by byte there and
  // the engine's prompts would be longer than the run asked.
  std::ifstream in(std::string(INFDOCTOR_SOURCE_DIR) + "/tests/engine/make_gguf.py");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto from = text.find("WORDS = ("), to = text.find(").split()", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  std::set<std::string> vocabulary;
  std::istringstream words(text.substr(from, to - from));
  for (std::string x; words >> x;) {
    x.erase(std::remove(x.begin(), x.end(), '"'), x.end());
    vocabulary.insert(x);
  }
  for (const auto w : prompt_words()) {
    CAPTURE(w);
    CHECK(vocabulary.count(std::string(w)));
  }
}

TEST_CASE("an error body as one short line: the API's message, an HTML page's title or text, folded and cut") {
  CHECK(error_body_line(R"({"error":{"message":"Rate limit reached","type":"rate_limit_error"}})") == "Rate limit reached");
  CHECK(error_body_line("<!DOCTYPE html>\n<html><head><title>501 Not Implemented</title></head>\n<body><h1>Not "
                        "Implemented</h1><p>The server does not support the action requested.</p></body></html>") ==
        "501 Not Implemented");
  CHECK(error_body_line("<html><body>\n  <h1>Bad   gateway</h1>\r\n</body></html>") == "Bad gateway");
  CHECK(error_body_line("upstream connect error\nor disconnect") == "upstream connect error or disconnect");
  const std::string long_text(1000, 'x');
  CHECK(error_body_line(long_text, 40) == long_text.substr(0, 40) + "...");
  CHECK(error_body_line("") == "");
}

TEST_CASE("error bodies of the common servers") {
  struct Case {
    const char* name;
    const char* body;
    const char* message;
  };
  const Case cases[] = {
      {"openai", R"({"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}})",
       "Rate limit reached"},
      {"vllm", R"({"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404})",
       "The model `x` does not exist."},
      {"tgi", R"({"error":"Input validation error: `max_new_tokens` must be > 0","error_type":"validation"})",
       "Input validation error: `max_new_tokens` must be > 0"},
  };
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      auto e = parse_error_body(c.body);
      REQUIRE(e.has_value());
      CHECK(e->message == c.message);
    }
  }
  CHECK_FALSE(parse_error_body("<html>Bad Gateway</html>").has_value());
  CHECK_FALSE(parse_error_body("").has_value());
  CHECK_FALSE(parse_error_body(R"({"choices":[]})").has_value());
  auto openai = parse_error_body(cases[0].body);
  CHECK(openai->type == "rate_limit_error");
  CHECK(openai->code == "rate_limit_exceeded");
  CHECK(openai->param.empty());
}

TEST_CASE("refused_parameter: a reasoning model's refusals, by param or by message, and nothing else") {
  const auto refused = [](const char* body) { return refused_parameter(*parse_error_body(body)); };
  CHECK(refused(R"({"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}})") ==
        "max_tokens");
  CHECK(refused(R"({"error":{"message":"Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.","type":"invalid_request_error","param":"temperature","code":"unsupported_value"}})") ==
        "temperature");
  // A gateway that passes the message on without param.
  CHECK(refused(R"({"error":{"message":"temperature is not supported for this model"}})") == "temperature");
  CHECK(refused(R"({"error":"Unsupported parameter: max_tokens"})") == "max_tokens");
  // Other parameters, and other 400s, are not the run's to adapt to.
  CHECK(refused(R"({"error":{"message":"Unsupported parameter: 'top_p'","param":"top_p","code":"unsupported_parameter"}})").empty());
  CHECK(refused(R"({"error":{"message":"max_tokens must be at least 1","param":"max_tokens","code":"invalid_value"}})").empty());
  CHECK(refused(R"({"error":{"message":"This model's maximum context length is 4096 tokens"}})").empty());
}

TEST_CASE("build_chat_body: max_completion_tokens instead of max_tokens, and no temperature, when asked") {
  ChatRequest r;
  r.model = "o";
  r.prompt = "hi";
  r.max_tokens = 7;
  auto j = nlohmann::json::parse(build_chat_body(r));
  CHECK(j["max_tokens"] == 7);
  CHECK(j["temperature"] == 0);
  r.max_completion_tokens = true;
  r.temperature.reset();
  j = nlohmann::json::parse(build_chat_body(r));
  CHECK(j["max_completion_tokens"] == 7);
  CHECK_FALSE(j.contains("max_tokens"));
  CHECK_FALSE(j.contains("temperature"));
  // The Messages API has one name only.
  CHECK(nlohmann::json::parse(build_chat_body(r, Flavour::Anthropic))["max_tokens"] == 7);
}

TEST_CASE("non-streamed response") {
  auto r = parse_chat_response(
      R"({"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})");
  REQUIRE(r.ok());
  CHECK(r->content == "Hi");
  CHECK(r->finish_reason == "stop");
  CHECK(r->usage.prompt_tokens == 3);
  CHECK(r->usage.completion_tokens == 1);
  CHECK_FALSE(parse_chat_response("not json").ok());
  CHECK_FALSE(parse_chat_response(R"({"choices":[]})").ok());
  auto err = parse_chat_response(R"({"error":{"message":"boom"}})");
  REQUIRE_FALSE(err.ok());
  CHECK(err.error().code == core::ErrorCode::StreamError);
}

TEST_CASE("streamed responses: content events, usage, the end") {
  const auto t0 = core::SteadyClock::now();
  struct Case {
    const char* file;
    std::size_t content_events;
    std::optional<std::int64_t> completion_tokens;
    bool done;
    bool error;
    const char* finish;
  };
  const Case cases[] = {
      {"openai.sse", 5, 5, true, false, "stop"},      // the role-only first chunk is not a token
      {"vllm.sse", 6, 6, true, false, "length"},      // reasoning counts, the empty final content does not
      {"llamacpp.sse", 3, 3, true, false, "stop"},
      {"proxy_crlf.sse", 3, std::nullopt, true, false, "tool_calls"},  // tool-call deltas are content
      {"error_mid.sse", 2, std::nullopt, false, true, ""},
  };
  for (const auto& c : cases) {
    SUBCASE(c.file) {
      const std::string s = read_stream(c.file);
      for (std::size_t split = 0; split <= s.size(); split += 3) {
        CAPTURE(split);
        ChatStream cs = feed(s, split, t0);
        CHECK(cs.content_event_times().size() == c.content_events);
        CHECK(cs.usage().completion_tokens == c.completion_tokens);
        CHECK(cs.done_seen() == c.done);
        CHECK(cs.stream_error().has_value() == c.error);
        CHECK(cs.finish_reason() == c.finish);
        CHECK(cs.malformed_count() == 0);
        CHECK_FALSE(cs.truncated());
      }
    }
  }
}

TEST_CASE("content events are stamped with their arrival, not with parse time") {
  const std::string s = read_stream("openai.sse");
  const auto t0 = core::SteadyClock::now();
  const std::size_t second_content = s.find("data:", s.find("Hello"));  // start of " there"
  ChatStream cs = feed(s, second_content, t0);
  REQUIRE(cs.content_event_times().size() == 5);
  CHECK(cs.content_event_times()[0] == t0);
  CHECK(cs.content_event_times()[1] == t0 + std::chrono::milliseconds(10));
  CHECK(*cs.first_event_at() == t0);  // the role chunk: first event, not first token
  CHECK(cs.text() == "Hello there, café 你好!");
}

TEST_CASE("a reasoning stream: the first reasoning and the first answer event apart, and usage's reasoning tokens") {
  const std::string think = R"(data: {"choices":[{"index":0,"delta":{"reasoning_content":" hmm"}}]})" "\n\n";
  const std::string answer = R"(data: {"choices":[{"index":0,"delta":{"content":" Yes"}}]})" "\n\n";
  const std::string usage =
      R"(data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":2}}})"
      "\n\ndata: [DONE]\n\n";
  const auto t0 = core::SteadyClock::now();
  SUBCASE("streamed reasoning") {
    ChatStream cs = feed(think + think + answer + usage, 2 * think.size(), t0);
    CHECK(*cs.first_reasoning_at() == t0);
    CHECK(*cs.first_answer_at() == t0 + std::chrono::milliseconds(10));
    CHECK(cs.content_event_times().size() == 3);
    CHECK(cs.usage().reasoning_tokens == 2);
    CHECK(cs.usage().completion_tokens == 3);
  }
  SUBCASE("hidden reasoning: only the answer arrives") {
    ChatStream cs = feed(answer + usage, answer.size(), t0);
    CHECK_FALSE(cs.first_reasoning_at().has_value());
    CHECK(*cs.first_answer_at() == t0);
    CHECK(cs.usage().reasoning_tokens == 2);
  }
  SUBCASE("Anthropic's thinking_delta is reasoning, text_delta the answer") {
    ChatStream a(Flavour::Anthropic);
    CHECK(a.on_body("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n", t0));
    CHECK(a.on_body("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Yes\"}}\n\n",
                    t0 + std::chrono::milliseconds(5)));
    CHECK(*a.first_reasoning_at() == t0);
    CHECK(*a.first_answer_at() == t0 + std::chrono::milliseconds(5));
  }
}

TEST_CASE("llama.cpp timings and error details are kept") {
  ChatStream ll = feed(read_stream("llamacpp.sse"), 0, core::SteadyClock::now());
  CHECK(ll.server_timings()["predicted_per_token_ms"] == doctest::Approx(20.3));
  ChatStream em = feed(read_stream("error_mid.sse"), 0, core::SteadyClock::now());
  REQUIRE(em.stream_error().has_value());
  CHECK(em.stream_error()->message == "upstream overloaded");
}

TEST_CASE("malformed streams are counted, never thrown") {
  ChatStream cs;
  const auto t = core::SteadyClock::now();
  cs.on_body("data: {not json}\n\ndata: [1,2]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n", t);
  cs.on_body("data: {\"choices\":[{\"delta\":{\"content\":\"cut", t);
  cs.finish();
  CHECK(cs.malformed_count() == 3);  // two bad events and the truncated one
  CHECK(cs.truncated());
  CHECK(cs.content_event_times().size() == 1);
  ChatStream odd;
  odd.on_body("data: {\"choices\":[null, 3, {\"delta\":null}, {\"delta\":{\"content\":7}}],\"usage\":{\"completion_tokens\":-4}}\n\n", t);
  odd.finish();
  CHECK(odd.content_event_times().empty());
  CHECK_FALSE(odd.usage().completion_tokens.has_value());
}

TEST_CASE("Anthropic Messages: the body, the stream's named events, usage from both ends") {
  ChatRequest r;
  r.model = "claude";
  r.prompt = "hi";
  r.max_tokens = 4;
  const auto body = nlohmann::json::parse(build_chat_body(r, Flavour::Anthropic));
  CHECK(body["max_tokens"] == 4);
  CHECK(body["stream"] == true);
  CHECK_FALSE(body.contains("stream_options"));  // the Messages API refuses it

  ChatStream cs(Flavour::Anthropic);
  const auto t0 = core::SteadyClock::now();
  using namespace std::chrono_literals;
  cs.on_body("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":"
             "{\"input_tokens\":12,\"output_tokens\":1}}}\n\n"
             "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
             "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n",
             t0);
  cs.on_body("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
             "{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
             t0 + 50ms);
  cs.on_body("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
             "{\"type\":\"text_delta\",\"text\":\" world\"}}\n\n",
             t0 + 70ms);
  CHECK_FALSE(cs.done_seen());
  cs.on_body("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
             "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
             "\"usage\":{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
             t0 + 80ms);
  cs.finish();
  CHECK(cs.done_seen());
  CHECK(cs.response_id() == "msg_1");
  CHECK(cs.text() == "Hello world");
  REQUIRE(cs.content_event_times().size() == 2);
  CHECK(cs.content_event_times()[0] == t0 + 50ms);  // the first token, not message_start
  CHECK(*cs.usage().prompt_tokens == 12);
  CHECK(*cs.usage().completion_tokens == 2);
  CHECK(cs.finish_reason() == "end_turn");
  CHECK(cs.malformed_count() == 0);

  ChatStream err(Flavour::Anthropic);
  err.on_body("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
              t0);
  REQUIRE(err.stream_error().has_value());
  CHECK(err.stream_error()->message == "Overloaded");
  CHECK(err.stream_error()->type == "overloaded_error");

  const auto msg = parse_chat_response(
      R"({"id":"msg_2","type":"message","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}})",
      Flavour::Anthropic);
  REQUIRE(msg.ok());
  CHECK(msg->content == "Hi");
  CHECK(*msg->usage.completion_tokens == 1);
  CHECK(*msg->usage.prompt_tokens == 3);
}

}  // namespace infdoctor::api
