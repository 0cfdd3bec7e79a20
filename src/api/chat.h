#pragma once
// Runs chat-completion requests against one endpoint and turns each into a RequestSample.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "api/openai.h"
#include "api/sample.h"
#include "http/client.h"

namespace infdoctor::api {

struct Endpoint {
  std::string base_url;  // e.g. https://api.example.com/v1
  std::string api_key;   // sent as `auth` says; never printed or saved
  std::string key_env;   // the environment variable it came from (repro.sh reads it there)
  Flavour flavour = Flavour::OpenAI;
  Auth auth = Auth::Bearer;
  std::string query;                 // appended to every URL (Azure's api-version)
  std::vector<std::string> headers;  // sent with every request (anthropic-version)
  http::TlsOptions tls;
  std::optional<std::string> proxy;  // as http::Request::proxy
  std::vector<std::string> resolve;  // CURLOPT_RESOLVE pins
  std::chrono::milliseconds timeout{60000};  // each request's, from its own start
  std::chrono::milliseconds connect_timeout{10000};
  // A batch of requests (http::Request::batch_timeout) ends within this from its start; 0: within
  // one request's timeout.
  std::chrono::milliseconds batch_timeout{0};

  std::string url(const std::string& path) const;  // base_url + path, one slash between, + ?query
  std::string chat_path() const;  // /chat/completions, or /messages for Anthropic
  // The key (in the flavour's header) and the preset's own headers.
  void add_headers(std::vector<std::string>& headers) const;
};

http::Request build_chat_request(const Endpoint& ep, const ChatRequest& chat, bool fresh_connection);

// A W3C Trace Context id (32 lower-case hex digits, never all zero), fresh and random; and the
// traceparent header that starts a sampled trace with it, with a random parent span.
std::string new_trace_id();
std::string traceparent_header(const std::string& trace_id);

// Sends every request in parallel (one at a time when given one) and measures each.
std::vector<RequestSample> run_chats(http::Client& client, const Endpoint& ep, const std::vector<ChatRequest>& chats,
                                     bool fresh_connection = false);
RequestSample run_chat(http::Client& client, const Endpoint& ep, const ChatRequest& chat, bool fresh_connection = false);

}  // namespace infdoctor::api
