#pragma once
// The bytes of the fake's chat answers in each API's own dialect: OpenAI's chat.completion (whole
// or as chunks) and error objects, Anthropic's Messages events and error shape. The server decides
// when each piece goes out; this only spells them.
#include <cstddef>
#include <string>

namespace infdoctor::fake {

// OpenAI's error object: {"error": {"message", "type", "param", "code"}}; an empty code or param is null.
std::string error_body(const std::string& message, const std::string& type, const std::string& code,
                       const std::string& param = "");
// The Messages API's: {"type": "error", "error": {"type", "message"}}, OpenAI's type mapped onto Anthropic's.
std::string anthropic_error_body(const std::string& message, const std::string& type);

// Tokens [from, to) of the answer's text: one word a token, a fixed sentence over and over.
std::string answer_words(int from, int to);

class ChatFormat {
 public:
  struct Answer {
    std::string request_id;
    std::string model;
    bool anthropic = false;
    std::size_t prompt_tokens = 0;
    std::size_t cached_tokens = 0;
    int reasoning_tokens = 0;
    bool stopped = false;   // the model ended before max_tokens
    long long created = 0;  // seconds since the epoch
  };
  explicit ChatFormat(Answer answer);

  // A non-streamed answer's body, `n_out` tokens of text.
  std::string whole(int n_out) const;

  // What opens a stream: Anthropic's message_start, content_block_start and ping; OpenAI's
  // role-only chunk when `role_chunk`, else nothing.
  std::string opening(bool role_chunk) const;
  // The i-th token of visible reasoning (reasoning_content, or Anthropic's thinking_delta).
  std::string reasoning(int i) const;
  std::string content(const std::string& text) const;
  // An error event in mid-stream, in the dialect's error shape.
  std::string error(const std::string& message, const std::string& type, const std::string& code) const;
  // What closes a stream after `sent` answer tokens: the finish reason, the usage (OpenAI's only
  // when asked) and the end marker ([DONE] or message_stop).
  std::string closing(int sent, bool include_usage) const;

 private:
  std::string chunk(const std::string& choice) const;  // an OpenAI chunk event around one choice
  std::string finish_reason() const;

  Answer a_;
  std::string chunk_head_;  // an OpenAI chunk's opening up to its choices
};

}  // namespace infdoctor::fake
