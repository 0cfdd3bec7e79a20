#include "api/chat.h"

#include <memory>
#include <random>

#include "api/endpoint_spec.h"

namespace infdoctor::api {

std::string Endpoint::url(const std::string& path) const {
  std::string b = base_url;
  while (!b.empty() && b.back() == '/') b.pop_back();
  std::string u = path.empty() || path.front() == '/' ? b + path : b + "/" + path;
  if (!query.empty()) u += (u.find('?') == std::string::npos ? "?" : "&") + query;
  return u;
}

std::string Endpoint::chat_path() const { return api::chat_path(flavour); }

void Endpoint::add_headers(std::vector<std::string>& out) const {
  if (!api_key.empty()) out.push_back(key_header(auth, api_key));
  out.insert(out.end(), headers.begin(), headers.end());
}

http::Request build_chat_request(const Endpoint& ep, const ChatRequest& chat, bool fresh_connection) {
  http::Request req;
  req.method = "POST";
  req.url = ep.url(ep.chat_path());
  req.headers.push_back("Content-Type: application/json");
  req.headers.push_back(chat.stream ? "Accept: text/event-stream" : "Accept: application/json");
  ep.add_headers(req.headers);
  req.body = build_chat_body(chat, ep.flavour);
  req.resolve = ep.resolve;
  req.tls = ep.tls;
  req.proxy = ep.proxy;
  req.fresh_connection = fresh_connection || chat.own_connection;
  req.accept_encoding = chat.accept_encoding;
  req.timeout = ep.timeout;
  req.connect_timeout = ep.connect_timeout;
  req.start_after = chat.start_after;
  req.lane = chat.lane;
  return req;
}

namespace {
std::string random_hex(std::size_t digits) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  do {  // all zeros is an invalid id: draw again
    out.clear();
    while (out.size() < digits) {
      const std::uint64_t v = rng();
      for (int i = 0; i < 16 && out.size() < digits; ++i) out += kHex[(v >> (4 * i)) & 0xf];
    }
  } while (out.find_first_not_of('0') == std::string::npos);
  return out;
}
}  // namespace

std::string new_trace_id() { return random_hex(32); }

std::string traceparent_header(const std::string& trace_id) {
  return "traceparent: 00-" + trace_id + "-" + random_hex(16) + "-01";
}

std::vector<RequestSample> run_chats(http::Client& client, const Endpoint& ep, const std::vector<ChatRequest>& chats,
                                     bool fresh_connection) {
  std::vector<std::unique_ptr<ChatStream>> streams;
  std::vector<http::Request> reqs;
  std::vector<std::string> trace_ids;
  reqs.reserve(chats.size());
  for (const auto& c : chats) {
    reqs.push_back(build_chat_request(ep, c, fresh_connection));
    // Each request starts a trace of its own: a provider that traces finds this very request.
    trace_ids.push_back(new_trace_id());
    reqs.back().headers.push_back(traceparent_header(trace_ids.back()));
    streams.push_back(c.stream ? std::make_unique<ChatStream>(ep.flavour) : nullptr);
    reqs.back().sink = streams.back().get();
  }
  auto responses = client.perform_all(reqs);
  const auto proxy = proxy_route(ep);
  std::vector<RequestSample> out;
  out.reserve(chats.size());
  for (std::size_t i = 0; i < chats.size(); ++i) {
    if (streams[i]) streams[i]->finish();
    out.push_back(make_sample(responses[i], streams[i].get(), chats[i].model, ep.flavour));
    out.back().trace_id = trace_ids[i];
    if (proxy) out.back().proxy = proxy->url;
  }
  return out;
}

RequestSample run_chat(http::Client& client, const Endpoint& ep, const ChatRequest& chat, bool fresh_connection) {
  return std::move(run_chats(client, ep, {chat}, fresh_connection).front());
}

}  // namespace infdoctor::api
