#include "api/openai.h"

#include <array>
#include <cctype>
#include <cmath>

#include "core/digest.h"
#include "core/strings.h"

namespace infdoctor::api {
namespace {

using nlohmann::json;

std::string str_or_empty(const json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  if (it == j.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number()) return it->dump();
  return {};
}

std::optional<std::int64_t> int_or_none(const json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (v < 0 || v > 1e12) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

Usage parse_usage(const json& j) {
  Usage u;
  u.prompt_tokens = int_or_none(j, "prompt_tokens");
  u.completion_tokens = int_or_none(j, "completion_tokens");
  if (auto d = j.find("prompt_tokens_details"); d != j.end() && d->is_object()) u.cached_tokens = int_or_none(*d, "cached_tokens");
  if (auto d = j.find("completion_tokens_details"); d != j.end() && d->is_object())
    u.reasoning_tokens = int_or_none(*d, "reasoning_tokens");
  return u;
}

// The Messages API counts cache reads and writes apart from input_tokens; the prompt is all three.
Usage parse_anthropic_usage(const json& j) {
  Usage u;
  u.completion_tokens = int_or_none(j, "output_tokens");
  u.cached_tokens = int_or_none(j, "cache_read_input_tokens");
  if (auto in = int_or_none(j, "input_tokens"))
    u.prompt_tokens = *in + u.cached_tokens.value_or(0) + int_or_none(j, "cache_creation_input_tokens").value_or(0);
  return u;
}

// Fields a later usage object carries replace the earlier ones.
void merge_usage(Usage& into, const Usage& from) {
  if (from.prompt_tokens) into.prompt_tokens = from.prompt_tokens;
  if (from.completion_tokens) into.completion_tokens = from.completion_tokens;
  if (from.cached_tokens) into.cached_tokens = from.cached_tokens;
  if (from.reasoning_tokens) into.reasoning_tokens = from.reasoning_tokens;
}

bool nonempty_string(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

std::optional<ApiError> error_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("error");
  if (it != j.end()) {
    ApiError e;
    if (it->is_object()) {
      e.message = str_or_empty(*it, "message");
      e.type = str_or_empty(*it, "type");
      e.code = str_or_empty(*it, "code");
      e.param = str_or_empty(*it, "param");
    } else if (it->is_string()) {
      e.message = it->get<std::string>();
    } else {
      return std::nullopt;
    }
    if (e.type.empty()) e.type = str_or_empty(j, "error_type");  // TGI
    return e;
  }
  if (j.contains("message") && !j.contains("choices")) return ApiError{str_or_empty(j, "message"), {}, {}, {}};
  return std::nullopt;
}

}  // namespace

std::string refused_parameter(const ApiError& e) {
  const std::string said = core::lower(e.message + " " + e.code);
  if (said.find("unsupported") == std::string::npos && said.find("not supported") == std::string::npos &&
      said.find("does not support") == std::string::npos)
    return {};
  for (const char* p : {"max_tokens", "temperature"})
    if (e.param == p) return p;
  if (!e.param.empty()) return {};
  if (said.find("max_tokens") != std::string::npos) return "max_tokens";
  if (said.find("temperature") != std::string::npos) return "temperature";
  return {};
}

std::string adaptation_for(const std::string& parameter) {
  return parameter == "max_tokens" ? "renamed to max_completion_tokens" : "left out: the model takes only its default";
}

void adapt_request(ChatRequest& r, const std::string& parameter) {
  if (parameter == "max_tokens") r.max_completion_tokens = true;
  if (parameter == "temperature") r.temperature.reset();
}

std::optional<double> loading_estimate_s(std::string_view body) {
  const json j = json::parse(body, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  auto it = j.find("estimated_time");
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > 86400) return std::nullopt;
  return v;
}

std::string build_chat_body(const ChatRequest& r, Flavour f) {
  if (r.body) {
    json body = *r.body;
    if (!r.model.empty()) body["model"] = r.model;
    body["stream"] = true;
    if (f == Flavour::OpenAI) body["stream_options"] = {{"include_usage", true}};
    return body.dump();
  }
  const bool renamed = f == Flavour::OpenAI && r.max_completion_tokens;
  json body = {
      {"model", r.model},
      {"messages", json::array({{{"role", "user"}, {"content", r.prompt}}})},
      {renamed ? "max_completion_tokens" : "max_tokens", r.max_tokens},
      {"stream", r.stream},
  };
  if (f == Flavour::OpenAI && r.stream && r.include_usage) body["stream_options"] = {{"include_usage", true}};
  if (r.temperature) body["temperature"] = *r.temperature;
  std::string out = body.dump();
  if (r.pad_bytes > 0) {
    // Whitespace between tokens is insignificant JSON (RFC 8259, section 2): the server must parse
    // it, but the prompt and the tokens do not change.
    out.insert(out.size() - 1, r.pad_bytes, ' ');
  }
  return out;
}

namespace {

// Common English words, each one token with its leading space in the tokenizers providers serve
// (GPT-4o's o200k, Llama 3's, Qwen's, SentencePiece's) and in the test engine's vocabulary
// (tests/engine/make_gguf.py).
constexpr std::array<std::string_view, 253> kPromptWords = {
    "the", "of", "and", "to", "in", "is", "it", "you", "that", "he", "was", "for", "on", "are", "with",
    "as", "his", "they", "be", "at", "one", "have", "this", "from", "or", "had", "by", "word", "but",
    "what", "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "your", "how",
    "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way", "about", "many",
    "then", "them", "write", "would", "like", "so", "these", "her", "long", "make", "thing", "see", "him",
    "two", "has", "look", "more", "day", "could", "go", "come", "did", "number", "sound", "no", "most",
    "people", "my", "over", "know", "water", "than", "call", "first", "who", "may", "down", "side", "been",
    "now", "find", "any", "new", "work", "part", "take", "get", "place", "made", "live", "where", "after",
    "back", "little", "only", "round", "man", "year", "came", "show", "every", "good", "me", "give", "our",
    "under", "name", "very", "through", "just", "form", "sentence", "great", "think", "say", "help", "low",
    "line", "differ", "turn", "cause", "much", "mean", "before", "move", "right", "boy", "old", "too",
    "same", "tell", "does", "set", "three", "want", "air", "well", "also", "play", "small", "end", "put",
    "home", "read", "hand", "port", "large", "spell", "add", "even", "land", "here", "must", "big", "high",
    "such", "follow", "act", "why", "ask", "men", "change", "went", "light", "kind", "off", "need", "house",
    "picture", "try", "us", "again", "animal", "point", "mother", "world", "near", "build", "self", "earth",
    "father", "head", "stand", "own", "page", "should", "country", "found", "answer", "school", "grow",
    "study", "still", "learn", "plant", "cover", "food", "sun", "four", "between", "state", "keep", "eye",
    "never", "last", "let", "thought", "city", "tree", "cross", "farm", "hard", "start", "might", "story",
    "saw", "far", "sea", "draw", "left", "late", "run", "while", "press", "close", "night", "real", "life",
    "few", "north", "cat", "sat", "mat", "dog", "ran", "red", "door"};

}  // namespace

std::span<const std::string_view> prompt_words() { return kPromptWords; }

ChatRequest synthetic_request(const std::string& model, int prompt_tokens, int max_tokens) {
  ChatRequest r;
  r.model = model;
  r.prompt = synthetic_prompt(prompt_tokens);
  r.prompt_tokens_wanted = prompt_tokens;
  r.max_tokens = max_tokens;
  return r;
}

std::string synthetic_prompt(int tokens) {
  std::string out;
  if (tokens <= 0) return out;
  out.reserve(static_cast<std::size_t>(tokens) * 6);
  for (int i = 0; i < tokens; ++i) {
    // Word i is drawn by a hash of i (splitmix64): the text repeats no phrase, as real prompts do
    // not, so an engine's n-gram or draft-model speculation gets no easier text than traffic's;
    // and a shorter prompt is still a prefix of a longer one.
    const std::uint64_t z = core::mix64(core::kGoldenGamma * (static_cast<std::uint64_t>(i) + 1));
    if (i > 0) out.push_back(' ');
    out.append(kPromptWords[z % kPromptWords.size()]);
  }
  return out;
}

std::optional<ApiError> parse_error_body(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return error_from_json(j);
}

core::Result<ChatResponse> parse_chat_response(std::string_view body, Flavour f) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return core::make_error(core::ErrorCode::MalformedStream, "response body is not a JSON object");
  if (auto e = error_from_json(j))
    return core::make_error(core::ErrorCode::StreamError, "server returned an error: " + e->message);
  if (f == Flavour::Anthropic) {
    auto content = j.find("content");
    if (content == j.end() || !content->is_array())
      return core::make_error(core::ErrorCode::MalformedStream, "response has no content blocks");
    ChatResponse out;
    out.id = str_or_empty(j, "id");
    for (const auto& b : *content)
      if (b.is_object() && str_or_empty(b, "type") == "text") out.content += str_or_empty(b, "text");
    out.finish_reason = str_or_empty(j, "stop_reason");
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) out.usage = parse_anthropic_usage(*u);
    return out;
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty() || !choices->front().is_object())
    return core::make_error(core::ErrorCode::MalformedStream, "response has no choices");
  ChatResponse out;
  out.id = str_or_empty(j, "id");
  const json& c0 = choices->front();
  if (auto m = c0.find("message"); m != c0.end() && m->is_object()) out.content = str_or_empty(*m, "content");
  out.finish_reason = str_or_empty(c0, "finish_reason");
  if (auto u = j.find("usage"); u != j.end()) out.usage = parse_usage(*u);
  return out;
}

bool ChatStream::on_body(std::string_view bytes, core::SteadyTime arrived) {
  body_bytes_ += static_cast<std::int64_t>(bytes.size());
  const auto t0 = core::SteadyClock::now();
  parser_.feed(bytes, pending_);
  for (const auto& ev : pending_) on_event(ev, arrived);
  pending_.clear();
  parse_time_ += core::elapsed_us(t0, core::SteadyClock::now());
  return true;
}

void ChatStream::finish() {
  if (parser_.has_partial()) {
    truncated_ = true;
    ++malformed_;
  }
}

void ChatStream::on_event(const http::SseEvent& ev, core::SteadyTime arrived) {
  ++events_;
  if (!first_event_) first_event_ = arrived;
  if (ev.data == "[DONE]") {
    done_ = true;
    return;
  }
  json j = json::parse(ev.data, nullptr, false);
  if (ev.event == "error") {
    ApiError e = j.is_discarded() ? ApiError{ev.data.substr(0, 512), {}, {}, {}}
                                  : error_from_json(j).value_or(ApiError{ev.data.substr(0, 512), {}, {}, {}});
    if (!error_) error_ = e;
    return;
  }
  if (j.is_discarded() || !j.is_object()) {
    ++malformed_;
    return;
  }
  if (j.contains("error")) {
    if (!error_) error_ = error_from_json(j);
    return;
  }
  if (flavour_ == Flavour::Anthropic) {
    on_content(on_anthropic_event(j), arrived);
    return;
  }
  if (id_.empty()) id_ = str_or_empty(j, "id");
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) merge_usage(usage_, parse_usage(*u));
  if (auto t = j.find("timings"); t != j.end() && t->is_object()) timings_ = *t;
  bool answer = false, reasoning = false;
  if (auto choices = j.find("choices"); choices != j.end() && choices->is_array()) {
    for (const auto& c : *choices) {
      if (!c.is_object()) continue;
      if (std::string fr = str_or_empty(c, "finish_reason"); !fr.empty()) finish_reason_ = fr;
      if (nonempty_string(c, "text")) {  // legacy completions
        answer = true;
        text_bytes_ += c["text"].get_ref<const std::string&>().size();
        continue;
      }
      auto d = c.find("delta");
      if (d == c.end() || !d->is_object()) continue;
      if (nonempty_string(*d, "content")) {
        add_text((*d)["content"].get_ref<const std::string&>());
        answer = true;
      }
      if (nonempty_string(*d, "reasoning_content") || nonempty_string(*d, "reasoning")) reasoning = true;
      if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array() && !tc->empty()) answer = true;
    }
  }
  on_content(answer ? Carried::Answer : reasoning ? Carried::Reasoning : Carried::Nothing, arrived);
}

void ChatStream::on_content(Carried what, core::SteadyTime arrived) {
  if (what == Carried::Nothing) return;
  content_times_.push_back(arrived);
  auto& first = what == Carried::Answer ? first_answer_ : first_reasoning_;
  if (!first) first = arrived;
}

void ChatStream::add_text(const std::string& s) {
  text_bytes_ += s.size();
  if (text_.size() < kMaxKeptText) text_.append(s.substr(0, kMaxKeptText - text_.size()));
}

ChatStream::Carried ChatStream::on_anthropic_event(const json& j) {
  const std::string type = str_or_empty(j, "type");
  if (type == "message_start") {
    if (auto m = j.find("message"); m != j.end() && m->is_object()) {
      if (id_.empty()) id_ = str_or_empty(*m, "id");
      if (auto u = m->find("usage"); u != m->end() && u->is_object()) {
        Usage start = parse_anthropic_usage(*u);
        start.completion_tokens.reset();  // message_start's output_tokens is a placeholder
        merge_usage(usage_, start);
      }
    }
    return Carried::Nothing;
  }
  if (type == "message_delta") {
    if (auto d = j.find("delta"); d != j.end() && d->is_object())
      if (std::string sr = str_or_empty(*d, "stop_reason"); !sr.empty()) finish_reason_ = sr;
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) merge_usage(usage_, parse_anthropic_usage(*u));
    return Carried::Nothing;
  }
  if (type == "message_stop") {
    done_ = true;
    return Carried::Nothing;
  }
  if (type != "content_block_delta") return Carried::Nothing;  // ping, content_block_start/stop
  auto d = j.find("delta");
  if (d == j.end() || !d->is_object()) return Carried::Nothing;
  const std::string dt = str_or_empty(*d, "type");
  if (dt == "text_delta" && nonempty_string(*d, "text")) {
    add_text((*d)["text"].get_ref<const std::string&>());
    return Carried::Answer;
  }
  if (dt == "thinking_delta" && nonempty_string(*d, "thinking")) return Carried::Reasoning;
  return dt == "input_json_delta" && nonempty_string(*d, "partial_json") ? Carried::Answer : Carried::Nothing;
}

std::string error_body_line(std::string_view body, std::size_t max_chars) {
  const auto api_error = parse_error_body(body);
  std::string text = api_error && !api_error->message.empty() ? api_error->message : std::string(body);
  const std::string lower = core::lower(text);
  if (lower.find("<html") != std::string::npos || lower.find("<!doctype") != std::string::npos) {
    const auto open = lower.find("<title>"), close = lower.find("</title>");
    if (open != std::string::npos && close != std::string::npos && close > open) {
      text = text.substr(open + 7, close - open - 7);
    } else {  // the text between the tags, in order
      std::string plain;
      bool in_tag = false;
      for (const char c : text) {
        if (c == '<') in_tag = true;
        else if (c == '>') in_tag = false, plain += ' ';
        else if (!in_tag) plain += c;
      }
      text = plain;
    }
  }
  std::string out;  // whitespace folded, control characters dropped
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isspace(u)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else if (u >= 0x20) {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "...";
  return out;
}

}  // namespace infdoctor::api
