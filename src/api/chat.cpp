#include "api/chat.h"

#include <memory>

namespace infdoctor::api {

std::string Endpoint::url(const std::string& path) const {
  std::string b = base_url;
  while (!b.empty() && b.back() == '/') b.pop_back();
  if (path.empty() || path.front() == '/') return b + path;
  return b + "/" + path;
}

http::Request build_chat_request(const Endpoint& ep, const ChatRequest& chat, bool fresh_connection) {
  http::Request req;
  req.method = "POST";
  req.url = ep.url("/chat/completions");
  req.headers.push_back("Content-Type: application/json");
  req.headers.push_back(chat.stream ? "Accept: text/event-stream" : "Accept: application/json");
  if (!ep.api_key.empty()) req.headers.push_back("Authorization: Bearer " + ep.api_key);
  req.body = build_chat_body(chat);
  req.resolve = ep.resolve;
  req.tls = ep.tls;
  req.fresh_connection = fresh_connection;
  req.timeout = ep.timeout;
  req.connect_timeout = ep.connect_timeout;
  return req;
}

std::vector<RequestSample> run_chats(http::Client& client, const Endpoint& ep, const std::vector<ChatRequest>& chats,
                                     bool fresh_connection) {
  std::vector<std::unique_ptr<ChatStream>> streams;
  std::vector<http::Request> reqs;
  reqs.reserve(chats.size());
  for (const auto& c : chats) {
    reqs.push_back(build_chat_request(ep, c, fresh_connection));
    streams.push_back(c.stream ? std::make_unique<ChatStream>() : nullptr);
    reqs.back().sink = streams.back().get();
  }
  auto responses = client.perform_all(reqs);
  std::vector<RequestSample> out;
  out.reserve(chats.size());
  for (std::size_t i = 0; i < chats.size(); ++i) {
    if (streams[i]) streams[i]->finish();
    out.push_back(make_sample(responses[i], streams[i].get(), chats[i].model));
  }
  return out;
}

RequestSample run_chat(http::Client& client, const Endpoint& ep, const ChatRequest& chat, bool fresh_connection) {
  return std::move(run_chats(client, ep, {chat}, fresh_connection).front());
}

}  // namespace infdoctor::api
