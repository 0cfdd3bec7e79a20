#include "fake/chat_format.h"

#include <iterator>

#include <nlohmann/json.hpp>

namespace infdoctor::fake {
namespace {

using nlohmann::json;

const char* kWords[] = {" the", " quick", " brown", " fox", " jumps", " over", " a", " lazy", " dog", " and",
                        " then", " it", " rests", " in", " warm", " sun"};

std::string event(const std::string& data) { return "data: " + data + "\n\n"; }

// Anthropic's stream names each event.
std::string named(const char* name, const std::string& data) {
  return std::string("event: ") + name + "\ndata: " + data + "\n\n";
}

}  // namespace

std::string error_body(const std::string& message, const std::string& type, const std::string& code,
                       const std::string& param) {
  json j = {{"error",
             {{"message", message},
              {"type", type},
              {"param", param.empty() ? json(nullptr) : json(param)},
              {"code", code.empty() ? json(nullptr) : json(code)}}}};
  return j.dump();
}

std::string anthropic_error_body(const std::string& message, const std::string& type) {
  const std::string t = type == "rate_limit_error"        ? "rate_limit_error"
                        : type == "server_error"          ? "overloaded_error"
                        : type == "invalid_request_error" ? "invalid_request_error"
                                                          : "api_error";
  return json{{"type", "error"}, {"error", {{"type", t}, {"message", message}}}}.dump();
}

std::string answer_words(int from, int to) {
  std::string text;
  for (int i = from; i < to; ++i) text += kWords[i % std::size(kWords)];
  return text;
}

ChatFormat::ChatFormat(Answer answer) : a_(std::move(answer)) {
  chunk_head_ = "{\"id\":\"chatcmpl-" + a_.request_id + "\",\"object\":\"chat.completion.chunk\",\"created\":" +
                std::to_string(a_.created) + ",\"model\":" + json(a_.model).dump() + ",\"choices\":[";
}

std::string ChatFormat::finish_reason() const {
  if (a_.anthropic) return a_.stopped ? "end_turn" : "max_tokens";
  return a_.stopped ? "stop" : "length";
}

std::string ChatFormat::chunk(const std::string& choice) const { return event(chunk_head_ + choice + "]}"); }

std::string ChatFormat::whole(int n_out) const {
  const std::string text = answer_words(0, n_out);
  const int completion = n_out + a_.reasoning_tokens;
  if (a_.anthropic) {
    return json{{"id", "msg_" + a_.request_id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", a_.model},
                {"content", json::array({{{"type", "text"}, {"text", text}}})},
                {"stop_reason", finish_reason()},
                {"usage",
                 {{"input_tokens", a_.prompt_tokens - a_.cached_tokens},
                  {"cache_read_input_tokens", a_.cached_tokens},
                  {"output_tokens", completion}}}}
        .dump();
  }
  return json{{"id", "chatcmpl-" + a_.request_id},
              {"object", "chat.completion"},
              {"created", a_.created},
              {"model", a_.model},
              {"choices", json::array({{{"index", 0},
                                        {"message", {{"role", "assistant"}, {"content", text}}},
                                        {"finish_reason", finish_reason()}}})},
              {"usage",
               {{"prompt_tokens", a_.prompt_tokens},
                {"prompt_tokens_details", {{"cached_tokens", a_.cached_tokens}}},
                {"completion_tokens", completion},
                {"completion_tokens_details", {{"reasoning_tokens", a_.reasoning_tokens}}},
                {"total_tokens", a_.prompt_tokens + static_cast<std::size_t>(completion)}}}}
      .dump();
}

std::string ChatFormat::opening(bool role_chunk) const {
  if (a_.anthropic) {
    const json start = {{"type", "message_start"},
                        {"message",
                         {{"id", "msg_" + a_.request_id},
                          {"type", "message"},
                          {"role", "assistant"},
                          {"model", a_.model},
                          {"content", json::array()},
                          {"stop_reason", nullptr},
                          {"usage",
                           {{"input_tokens", a_.prompt_tokens - a_.cached_tokens},
                            {"cache_read_input_tokens", a_.cached_tokens},
                            {"output_tokens", 1}}}}}};
    return named("message_start", start.dump()) +
           named("content_block_start",
                 R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})") +
           named("ping", R"({"type":"ping"})");
  }
  if (!role_chunk) return "";
  return chunk("{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}");
}

std::string ChatFormat::reasoning(int i) const {
  const std::string word = kWords[(i + 3) % std::size(kWords)];
  if (a_.anthropic)
    return named("content_block_delta",
                 R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":")" + word +
                     "\"}}");
  return chunk("{\"index\":0,\"delta\":{\"reasoning_content\":\"" + word + "\"},\"finish_reason\":null}");
}

std::string ChatFormat::content(const std::string& text) const {
  if (a_.anthropic)
    return named("content_block_delta",
                 "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + text +
                     "\"}}");
  return chunk("{\"index\":0,\"delta\":{\"content\":\"" + text + "\"},\"finish_reason\":null}");
}

std::string ChatFormat::error(const std::string& message, const std::string& type, const std::string& code) const {
  if (a_.anthropic) return named("error", anthropic_error_body(message, type));
  return event(error_body(message, type, code));
}

std::string ChatFormat::closing(int sent, bool include_usage) const {
  const int completion = sent + a_.reasoning_tokens;
  if (a_.anthropic) {
    return named("content_block_stop", R"({"type":"content_block_stop","index":0})") +
           named("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" + finish_reason() +
                                      "\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":" +
                                      std::to_string(completion) + "}}") +
           named("message_stop", R"({"type":"message_stop"})");
  }
  std::string tail = chunk("{\"index\":0,\"delta\":{},\"finish_reason\":\"" + finish_reason() + "\"}");
  if (include_usage) {
    tail += event(chunk_head_ + "],\"usage\":{\"prompt_tokens\":" + std::to_string(a_.prompt_tokens) +
                  ",\"prompt_tokens_details\":{\"cached_tokens\":" + std::to_string(a_.cached_tokens) + "}" +
                  ",\"completion_tokens\":" + std::to_string(completion) +
                  ",\"completion_tokens_details\":{\"reasoning_tokens\":" + std::to_string(a_.reasoning_tokens) +
                  "}" + ",\"total_tokens\":" +
                  std::to_string(a_.prompt_tokens + static_cast<std::size_t>(completion)) + "}}");
  }
  return tail + "data: [DONE]\n\n";
}

}  // namespace infdoctor::fake
