#include "fake/server.h"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <array>
#include <sstream>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "fake/chat_format.h"

namespace infdoctor::fake {
namespace {

namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using nlohmann::json;
using Clock = core::SteadyClock;

constexpr std::size_t kMaxBodyBytes = 64u << 20;
constexpr std::size_t kMaxHeaderBytes = 64u << 10;
constexpr std::size_t kMaxLog = 100000;

Clock::duration from_ms(double ms) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

long long micros_of(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

// The kernel's receive time of a whole request already waiting on a plain TCP socket, on the
// steady clock: SO_TIMESTAMPING stamps a packet when it arrives, before this connection's thread
// is scheduled to read it, so planted delays count from the request's arrival and not from a
// wake-up that 255 other threads compete for. The peek returns the stamp of the last packet it
// looked at, so it counts only when the whole request (headers and Content-Length body) is
// there; otherwise, or without stamps, nothing, and the caller uses the time its read finished.
// `idle` is set when nothing came for a minute (the read's own timeout, SO_RCVTIMEO).
std::optional<Clock::time_point> whole_request_arrival(int fd, bool& idle) {
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, 60000);
  idle = ready == 0;
  if (ready <= 0 || !(p.revents & POLLIN)) return std::nullopt;
  thread_local std::vector<char> peek(64 * 1024);
  alignas(cmsghdr) char control[256];
  iovec iov{peek.data(), peek.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT);
  if (n <= 0) return std::nullopt;
  const std::string_view text(peek.data(), static_cast<std::size_t>(n));
  const auto head_end = text.find("\r\n\r\n");
  if (head_end == std::string_view::npos) return std::nullopt;
  std::string head(text.substr(0, head_end));
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (head.find("\r\ntransfer-encoding:") != std::string::npos) return std::nullopt;
  std::size_t length = 0;
  if (const auto at = head.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::strtoull(head.c_str() + at + 17, nullptr, 10);
  if (head_end + 4 + length > text.size()) return std::nullopt;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING) continue;
    scm_timestamping ts{};
    std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
    const timespec& sw = ts.ts[0];  // software receive stamp, CLOCK_REALTIME
    if (sw.tv_sec == 0 && sw.tv_nsec == 0) return std::nullopt;
    timespec rt{};
    ::clock_gettime(CLOCK_REALTIME, &rt);
    const auto steady_now = Clock::now();
    const long long ago_ns = (static_cast<long long>(rt.tv_sec) - sw.tv_sec) * 1000000000LL + (rt.tv_nsec - sw.tv_nsec);
    if (ago_ns < 0 || ago_ns > 60LL * 1000000000LL) return std::nullopt;  // a clock step: do not trust it
    return steady_now - std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ago_ns));
  }
  return std::nullopt;
}

// What the fake says of itself at GET /metrics, under vLLM's metric names: requests running and
// waiting for a slot, histograms of the time waiting and to the first token (planted, from the
// request's arrival), and the prefix cache's queried and hit prompt tokens.
struct EngineStats {
  static constexpr double kBuckets[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  struct Histogram {
    std::array<std::uint64_t, std::size(kBuckets)> le{};
    std::uint64_t count = 0;
    double sum = 0;
    void add(double s) {
      for (std::size_t i = 0; i < le.size(); ++i) le[i] += s <= kBuckets[i];
      ++count;
      sum += s;
    }
  };
  std::mutex mu;
  int running = 0, waiting = 0;
  Histogram queue, ttft;
  std::uint64_t prefix_queries = 0, prefix_hits = 0;

  std::string exposition(int capacity) {
    std::lock_guard lock(mu);
    std::ostringstream o;
    o << "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      << "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake\"} " << running << "\n"
      << "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
      << "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"fake\"} " << waiting << "\n"
      << "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"fake\"} "
      << static_cast<double>(running) / std::max(1, capacity) << "\n"
      << "# TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{model_name=\"fake\"} 0\n"
      << "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"fake\"} "
      << prefix_queries << "\n"
      << "# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"fake\"} " << prefix_hits
      << "\n";
    const auto histogram = [&](const char* name, const Histogram& h) {
      o << "# TYPE " << name << " histogram\n";
      for (std::size_t i = 0; i < h.le.size(); ++i)
        o << name << "_bucket{model_name=\"fake\",le=\"" << kBuckets[i] << "\"} " << h.le[i] << "\n";
      o << name << "_bucket{model_name=\"fake\",le=\"+Inf\"} " << h.count << "\n"
        << name << "_sum{model_name=\"fake\"} " << h.sum << "\n"
        << name << "_count{model_name=\"fake\"} " << h.count << "\n";
    };
    histogram("vllm:request_queue_time_seconds", queue);
    histogram("vllm:time_to_first_token_seconds", ttft);
    return o.str();
  }
};

// Per-model state shared by the connections: request counter, slots, idleness.
struct ModelState {
  ModelSpec spec;
  std::mutex mu;
  std::condition_variable cv;
  std::uint64_t requests = 0;
  int busy = 0;
  std::deque<std::uint64_t> queue;
  std::uint64_t next_ticket = 0;
  int in_flight = 0;
  Clock::time_point last_done;
  bool ever_served = false;
  // Hashes of every whole-block prefix seen, each with its last use.
  std::unordered_map<std::uint64_t, std::chrono::steady_clock::time_point> cached_prefixes;
  Clock::time_point slow_origin;  // the start of a slow_every_s period
  double bucket_tokens = 0;       // requests left in the token bucket, as of bucket_at
  Clock::time_point bucket_at;
  double quota_tokens = 0;  // tokens left of the per-minute quota, as of quota_at
  Clock::time_point quota_at;
  std::optional<Clock::time_point> loaded_at;  // a load under way (cold_loading_s) ends then
};

// Scale-to-zero with a loading answer: the seconds left of the model's load when a request that
// arrives `now` must be refused while it loads, or nothing when the model serves it.
std::optional<double> loading_left_s(ModelState& st, Clock::time_point now) {
  const ModelSpec& spec = st.spec;
  if (spec.cold_loading_s <= 0) return std::nullopt;
  std::lock_guard lock(st.mu);
  if (!st.loaded_at) {
    const bool cold = !st.ever_served ? spec.cold_at_start
                                      : st.in_flight == 0 && spec.cold_idle_s > 0 &&
                                            now - st.last_done >= std::chrono::duration_cast<Clock::duration>(
                                                                       std::chrono::duration<double>(spec.cold_idle_s));
    if (!cold) return std::nullopt;
    st.loaded_at = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(spec.cold_loading_s));
  }
  if (now >= *st.loaded_at) {  // loaded: served warm from here on
    st.loaded_at.reset();
    st.ever_served = true;
    st.last_done = now;
    return std::nullopt;
  }
  return std::chrono::duration<double>(*st.loaded_at - now).count();
}

// How many times slower than planted a request runs for its own sake: drawn into the tail
// (`tail_draw` uniform in [0, 1)), tail_factor. A neighbour's bursts slow the clock instead (done_at).
double tail_slowdown(const ModelSpec& spec, double tail_draw) { return tail_draw < spec.tail_fraction ? spec.tail_factor : 1.0; }

// The moment `work_ms` of work begun at `from` is done, when inside each periodic slow window
// (slow_for_s of every slow_every_s) work runs slow_factor times slower: a neighbour's burst slows
// every step the model makes while it lasts, whichever request it belongs to, so a request that
// a burst begins or ends in changes speed in mid-stream.
Clock::time_point done_at(const ModelState& st, Clock::time_point from, double work_ms) {
  const ModelSpec& spec = st.spec;
  work_ms = std::max(0.0, work_ms);
  if (!(spec.slow_every_s > 0 && spec.slow_for_s > 0 && spec.slow_factor > 1)) return from + from_ms(work_ms);
  const double every = spec.slow_every_s * 1000.0, during = spec.slow_for_s * 1000.0;
  double since = std::max(0.0, std::chrono::duration<double, std::milli>(from - st.slow_origin).count());
  double elapsed = 0;
  // Each pass ends a window or a stretch between windows, or the work: bounded by the windows the
  // work can span, with a margin.
  for (int pass = 0; pass < 100000 && work_ms > 0; ++pass) {
    const double phase = std::fmod(since, every);
    const bool slow = phase < during;
    const double stretch = slow ? during - phase : every - phase;  // clock time to the next edge
    const double rate = slow ? 1.0 / spec.slow_factor : 1.0;       // work done per clock ms
    if (work_ms <= stretch * rate) {
      elapsed += work_ms / rate;
      work_ms = 0;
      break;
    }
    work_ms -= stretch * rate;
    elapsed += stretch;
    since += stretch;
  }
  return from + from_ms(elapsed + work_ms);
}

// The token bucket: takes one request's token, or says how many seconds until one is back.
std::optional<double> bucket_refusal(ModelState& st, Clock::time_point now) {
  const ModelSpec& spec = st.spec;
  if (spec.bucket_size <= 0) return std::nullopt;
  std::lock_guard lock(st.mu);
  const double dt = std::chrono::duration<double>(now - st.bucket_at).count();
  st.bucket_tokens = std::min(spec.bucket_size, st.bucket_tokens + std::max(0.0, dt) * spec.bucket_per_s);
  st.bucket_at = now;
  if (st.bucket_tokens >= 1) {
    st.bucket_tokens -= 1;
    return std::nullopt;
  }
  return (1 - st.bucket_tokens) / spec.bucket_per_s;
}

// The quota of tokens per minute: takes a request's tokens, or says how many seconds until they
// fit. `left` is what remains after.
std::optional<double> quota_refusal(ModelState& st, Clock::time_point now, double cost, double& left) {
  const ModelSpec& spec = st.spec;
  if (spec.tokens_per_min <= 0) return std::nullopt;
  std::lock_guard lock(st.mu);
  const double per_s = spec.tokens_per_min / 60.0;
  const double dt = std::chrono::duration<double>(now - st.quota_at).count();
  st.quota_tokens = std::min(spec.tokens_per_min, st.quota_tokens + std::max(0.0, dt) * per_s);
  st.quota_at = now;
  if (st.quota_tokens >= cost) {
    st.quota_tokens -= cost;
    left = st.quota_tokens;
    return std::nullopt;
  }
  left = st.quota_tokens;
  return (std::min(cost, spec.tokens_per_min) - st.quota_tokens) / per_s;
}

// The prompt's words (the fake's tokens) across its messages, in order.
std::vector<std::string_view> prompt_words(const json& messages) {
  std::vector<std::string_view> out;
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_string()) continue;
    const std::string& s = m["content"].get_ref<const std::string&>();
    std::size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      const std::size_t start = i;
      while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i > start) out.push_back(std::string_view(s).substr(start, i - start));
    }
  }
  return out;
}

// Prefix caching: how many leading tokens, in whole blocks, an earlier prompt already had (a block
// idle longer than the TTL is gone); then this prompt's block prefixes are remembered, as used now.
// A chained hash per block, as a block cache keys its blocks by everything before them. Bounded:
// the oldest state is dropped wholesale.
std::size_t cached_prefix_tokens(ModelState& st, const std::vector<std::string_view>& words) {
  const int block = st.spec.prefix_cache_block_tokens;
  if (block <= 0) return 0;
  const auto now = std::chrono::steady_clock::now();
  const auto ttl = std::chrono::duration<double>(st.spec.prefix_cache_ttl_s);
  std::lock_guard lock(st.mu);
  if (st.cached_prefixes.size() > 200000) st.cached_prefixes.clear();
  std::uint64_t h = 1469598103934665603ull;
  std::size_t cached = 0;
  bool still_cached = true;
  for (std::size_t i = 0; i < words.size(); ++i) {
    for (char c : words[i]) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0x20u) * 1099511628211ull;
    if ((i + 1) % static_cast<std::size_t>(block) != 0) continue;
    const auto it = st.cached_prefixes.find(h);
    const bool alive = it != st.cached_prefixes.end() && (ttl.count() <= 0 || now - it->second <= ttl);
    if (still_cached && alive) cached = i + 1;
    else still_cached = false;
    st.cached_prefixes[h] = now;
  }
  return cached;
}

ServedRequest served_entry(std::string model, Clock::time_point arrived, int status, std::string rid,
                           std::size_t body_bytes) {
  ServedRequest r;
  r.model = std::move(model);
  r.arrived = arrived;
  r.status = status;
  r.request_id = std::move(rid);
  r.body_bytes = body_bytes;
  return r;
}

// The key, from whichever header carried it (an Authorization header without "Bearer " presents
// itself whole, and so matches no key).
std::pair<std::string, std::string> presented_key(const bhttp::request<bhttp::string_body>& req) {
  const std::string auth(req[bhttp::field::authorization]);
  if (!auth.empty()) return {"authorization", auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : auth};
  for (const char* h : {"x-api-key", "api-key"})
    if (auto it = req.find(h); it != req.end()) return {h, std::string(it->value())};
  return {"", ""};
}

}  // namespace

struct Server::Impl {
  Scenario scenario;
  ServerOptions options;
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::unique_ptr<ssl::context> tls;
  std::thread accept_thread;
  std::uint16_t port = 0;

  std::map<std::string, std::unique_ptr<ModelState>> models;
  EngineStats engine;
  std::mutex rng_mu;
  std::mt19937_64 rng;
  std::atomic<std::uint64_t> request_counter{0};

  std::atomic<bool> stop_flag{false};  // read without `mu` where another lock is held
  mutable std::mutex mu;  // guards everything below
  bool stopping = false;
  std::condition_variable stop_cv;
  std::set<int> open_fds;
  struct Conn {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Conn> conns;
  std::vector<ServedRequest> log;

  void engine_count(int EngineStats::*field, int delta) {
    std::lock_guard lock(engine.mu);
    engine.*field += delta;
  }

  // Waits until `t` or until the server stops; false when stopping.
  bool sleep_until(Clock::time_point t) {
    std::unique_lock lock(mu);
    return !stop_cv.wait_until(lock, t, [&] { return stopping; });
  }

  double jitter(double ms) {
    if (ms <= 0) return 0;
    std::lock_guard lock(rng_mu);
    return std::uniform_real_distribution<double>(-ms, ms)(rng);
  }
  double uniform01() {
    std::lock_guard lock(rng_mu);
    return std::uniform_real_distribution<double>(0, 1)(rng);
  }

  // `body` is the request body as handle_chat parsed it (discarded when it is not JSON).
  void record(ServedRequest r, const bhttp::request<bhttp::string_body>& req, const json& body) {
    r.request_line = std::string(req.method_string()) + " " + std::string(req.target());
    r.key_header = presented_key(req).first;
    if (auto it = req.find("anthropic-version"); it != req.end()) r.anthropic_version = std::string(it->value());
    for (const auto& field : req) {
      const std::string name = core::lower(std::string(field.name_string()));
      if (name != r.key_header) r.headers[name] = std::string(field.value());
    }
    if (body.is_object())
      for (const auto& [k, _] : body.items()) r.body_keys.push_back(k);
    std::lock_guard lock(mu);
    if (log.size() < kMaxLog) log.push_back(std::move(r));
  }

  void do_accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket sock) {
      if (ec) {
        if (ec == net::error::operation_aborted) return;
        do_accept();
        return;
      }
      std::lock_guard lock(mu);
      if (stopping) return;
      // Reap finished connection threads so a long-running server does not accumulate them.
      for (auto it = conns.begin(); it != conns.end();) {
        if (it->done->load()) {
          it->thread.join();
          it = conns.erase(it);
        } else {
          ++it;
        }
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      const int fd = sock.native_handle();
      open_fds.insert(fd);
      conns.push_back(Conn{std::thread([this, s = std::move(sock), done]() mutable {
                             serve_connection(std::move(s));
                             done->store(true);
                           }),
                           done});
      do_accept();
    });
  }

  // The descriptor leaves `open_fds` before it is closed: a connection accepted later may be given
  // the same number, and stop() must find that one there to shut it down.
  void forget(int fd) {
    std::lock_guard lock(mu);
    open_fds.erase(fd);
  }

  void serve_connection(tcp::socket sock) {
    const int fd = sock.native_handle();
    beast::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    timeval tv{60, 0};  // an idle or stuck client frees its thread after a minute
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const int stamping = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;  // whole_request_arrival
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_TIMESTAMPING, &stamping, sizeof stamping);
    ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (tls) {
      ssl::stream<tcp::socket> stream(std::move(sock), *tls);
      if (scenario.tls_handshake_delay_ms <= 0 || sleep_until(Clock::now() + from_ms(scenario.tls_handshake_delay_ms))) {
        stream.handshake(ssl::stream_base::server, ec);
        if (!ec) serve_requests(stream);
      }
      forget(fd);
      beast::get_lowest_layer(stream).close(ec);
    } else {
      serve_requests(sock);
      sock.shutdown(tcp::socket::shutdown_send, ec);
      forget(fd);
      sock.close(ec);
    }
  }

  template <typename Stream>
  void serve_requests(Stream& stream) {
    beast::flat_buffer buf;
    for (;;) {
      bhttp::request_parser<bhttp::string_body> parser;
      parser.body_limit(kMaxBodyBytes);
      parser.header_limit(kMaxHeaderBytes);
      beast::error_code ec;
      std::optional<Clock::time_point> on_wire;  // plain TCP with nothing buffered: the kernel's stamp
      if constexpr (std::is_same_v<Stream, tcp::socket>) {
        bool idle = false;
        if (buf.size() == 0) on_wire = whole_request_arrival(stream.native_handle(), idle);
        if (idle) return;  // an idle client frees its thread after a minute, as a read would
      }
      bhttp::read(stream, buf, parser, ec);
      if (ec) {
        if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit)
          write_simple(stream, 413, error_body("request too large", "invalid_request_error", ""), false, {});
        return;
      }
      const auto read_done = Clock::now();
      const auto arrived = on_wire && *on_wire <= read_done ? *on_wire : read_done;
      const auto& req = parser.get();
      if (!handle(stream, req, arrived)) return;
      if (!req.keep_alive()) return;
      {
        std::lock_guard lock(mu);
        if (stopping) return;
      }
    }
  }

  template <typename Stream>
  bool write_simple(Stream& stream, int status, const std::string& body, bool keep_alive,
                    const std::vector<std::pair<std::string, std::string>>& headers) {
    bhttp::response<bhttp::string_body> res{static_cast<bhttp::status>(status), 11};
    res.set(bhttp::field::server, "infdoctor-fake");
    res.set(bhttp::field::content_type, "application/json");
    for (const auto& [k, v] : headers) res.set(k, v);
    res.keep_alive(keep_alive);
    res.body() = body;
    res.prepare_payload();
    beast::error_code ec;
    bhttp::write(stream, res, ec);
    return !ec && keep_alive;
  }

  template <typename Stream>
  bool handle(Stream& stream, const bhttp::request<bhttp::string_body>& req, Clock::time_point arrived) {
    std::string target(req.target());
    if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
    const std::string rid = make_request_id();
    std::vector<std::pair<std::string, std::string>> base_headers = {{"x-request-id", rid}};
    const bool keep = req.keep_alive();

    if (target == "/health") return write_simple(stream, 200, "{\"status\":\"ok\"}", keep, base_headers);
    if (target == "/metrics") {
      int capacity = 0;
      for (const auto& [_, m] : models) capacity += m->spec.slots > 0 ? m->spec.slots : 256;
      base_headers.emplace_back("content-type", "text/plain; version=0.0.4");
      return write_simple(stream, 200, engine.exposition(capacity), keep, base_headers);
    }
    const bool is_models = target == "/v1/models" || target == "/models";
    const bool is_chat = target == "/v1/chat/completions" || target == "/chat/completions";
    const bool is_messages = target == "/v1/messages" || target == "/messages";
    if (is_messages) base_headers = {{"request-id", rid}};  // Anthropic's name for it
    if (!is_models && !is_chat && !is_messages)
      return write_simple(stream, 404, error_body("no route for " + target, "invalid_request_error", "not_found"), keep,
                          base_headers);
    if (!scenario.api_key.empty()) {
      // Like some real providers, and worse: the key presented is echoed back whole, so tests can
      // show infdoctor scrubs it from whatever it prints or saves. Any of the three usual headers
      // may carry it; tests check which one did.
      const std::string key = presented_key(req).second;
      if (key != scenario.api_key) {
        record(served_entry("", arrived, 401, rid, req.body().size()), req, json());
        return write_simple(stream, 401,
                            is_messages ? anthropic_error_body("invalid x-api-key: " + key, "authentication_error")
                                        : error_body("Incorrect API key provided: " + key, "invalid_request_error",
                                                     "invalid_api_key"),
                            keep, base_headers);
      }
    }
    if (is_models) {
      if (req.method() != bhttp::verb::get)
        return write_simple(stream, 405, error_body("use GET", "invalid_request_error", ""), keep, base_headers);
      json data = json::array();
      for (const auto& [name, _] : scenario.models)
        data.push_back({{"id", name}, {"object", "model"}, {"owned_by", "infdoctor-fake"}});
      return write_simple(stream, 200, json{{"object", "list"}, {"data", data}}.dump(), keep, base_headers);
    }
    if (req.method() != bhttp::verb::post)
      return write_simple(stream, 405, error_body("use POST", "invalid_request_error", ""), keep, base_headers);
    return handle_chat(stream, req, arrived, rid, base_headers, is_messages);
  }

  // A response whose header block never ends: a header line every millisecond, until the client
  // gives up (or 16 MiB went out, or the server stops).
  template <typename Stream>
  bool endless_headers(Stream& stream) {
    beast::error_code ec;
    net::write(stream, net::buffer(std::string_view("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")), ec);
    const std::string filler(100, 'z');
    auto next = Clock::now();
    for (int i = 0; !ec && i < 160000; ++i) {
      const std::string line = "x-filler-" + std::to_string(i) + ": " + filler + "\r\n";
      net::write(stream, net::buffer(line), ec);
      next += std::chrono::milliseconds(1);
      if (!sleep_until(next)) return false;
    }
    return false;
  }

  std::string make_request_id() {
    const std::uint64_t n = ++request_counter;
    std::uint64_t r;
    {
      std::lock_guard lock(rng_mu);
      r = rng();
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "req-%06llu-%08llx", static_cast<unsigned long long>(n),
                  static_cast<unsigned long long>(r & 0xffffffffULL));
    return buf;
  }

  // One chat request as read: where it came from, what it asks, and the headers its answer takes.
  struct ChatCall {
    ChatCall(const bhttp::request<bhttp::string_body>& r, Clock::time_point at, const std::string& id,
             std::vector<std::pair<std::string, std::string>> h, bool anth)
        : req(r), arrived(at), rid(id), headers(std::move(h)), anthropic(anth), keep(r.keep_alive()) {}
    const bhttp::request<bhttp::string_body>& req;
    Clock::time_point arrived;
    const std::string& rid;
    std::vector<std::pair<std::string, std::string>> headers;
    bool anthropic = false;
    bool keep = false;
    json body;
    std::string model;
    ModelState* st = nullptr;
    std::size_t prompt_tokens = 0, cached_tokens = 0;
    int max_tokens = 0, n_out = 0;
    bool stream_mode = false, include_usage = false;
    std::uint64_t nth = 0;  // this model's request number
  };

  std::string err_body(const ChatCall& c, const std::string& msg, const std::string& type, const std::string& code) {
    return c.anthropic ? anthropic_error_body(msg, type) : error_body(msg, type, code);
  }

  // An answer of `status` with a body the client reads whole, recorded as served.
  template <typename Stream>
  bool reply(Stream& stream, ChatCall& c, int status, const std::string& body) {
    record(served_entry(c.model, c.arrived, status, c.rid, c.req.body().size()), c.req, c.body);
    return write_simple(stream, status, body, c.keep, c.headers);
  }
  template <typename Stream>
  bool reply_error(Stream& stream, ChatCall& c, int status, const std::string& msg, const std::string& type,
                   const std::string& code) {
    return reply(stream, c, status, err_body(c, msg, type, code));
  }

  // Reads the request as the API does: its size, its JSON, the model, the messages, the
  // parameters a model refuses, max_tokens against the context. A refusal is answered here (its
  // outcome returned); nothing when the request stands.
  template <typename Stream>
  std::optional<bool> read_chat(Stream& stream, ChatCall& c) {
    const auto& req = c.req;
    c.body = json::parse(req.body(), nullptr, false);
    if (scenario.max_body_bytes > 0 && static_cast<double>(req.body().size()) > scenario.max_body_bytes)
      return reply_error(stream, c, 413, "request entity too large", "invalid_request_error", "payload_too_large");
    if (c.body.is_discarded() || !c.body.is_object())
      return reply_error(stream, c, 400, "request body is not a JSON object", "invalid_request_error", "invalid_json");
    c.model = c.body.value("model", std::string());
    auto mit = models.find(c.model);
    if (mit == models.end())
      return reply_error(stream, c, 404, "The model `" + c.model + "` does not exist", "invalid_request_error",
                         "model_not_found");
    c.st = mit->second.get();
    const ModelSpec& spec = c.st->spec;
    const json& body = c.body;
    if (auto msgs = body.find("messages"); msgs != body.end() && msgs->is_array()) {
      const auto words = prompt_words(*msgs);
      // A tokenizer that splits some words, and the chat template's own tokens around the messages.
      const auto tokens = [&](std::size_t n) {
        return static_cast<std::size_t>(std::llround(static_cast<double>(n) * spec.prompt_tokens_per_word));
      };
      c.prompt_tokens = tokens(words.size()) + static_cast<std::size_t>(spec.template_tokens);
      c.cached_tokens = tokens(cached_prefix_tokens(*c.st, words));
    } else {
      return reply_error(stream, c, 400, "`messages` must be an array", "invalid_request_error", "invalid_messages");
    }
    if (c.anthropic && !body.contains("max_tokens"))
      return reply_error(stream, c, 400, "max_tokens: Field required", "invalid_request_error", "");
    // A reasoning model's refusals, word for word as OpenAI's.
    for (const auto& p : spec.rejects) {
      if (c.anthropic) break;
      std::string said, code;
      if (p == "max_tokens" && body.contains("max_tokens")) {
        said = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
        code = "unsupported_parameter";
      } else if (p == "temperature" && body.contains("temperature") && body["temperature"] != 1) {
        said = "Unsupported value: 'temperature' does not support " + body["temperature"].dump() +
               " with this model. Only the default (1) value is supported.";
        code = "unsupported_value";
      }
      if (said.empty()) continue;
      return reply(stream, c, 400, error_body(said, "invalid_request_error", code, p));
    }
    if (c.anthropic && body.contains("stream_options"))  // the Messages API refuses what it does not know
      return reply_error(stream, c, 400, "stream_options: Extra inputs are not permitted", "invalid_request_error", "");
    c.max_tokens = scenario.default_max_tokens;
    for (const char* key : {"max_tokens", "max_completion_tokens"})
      if (auto it = body.find(key); it != body.end() && it->is_number_integer()) c.max_tokens = it->get<int>();
    if (c.max_tokens < 1 || c.max_tokens > 1000000)
      return reply_error(stream, c, 400, "max_tokens must lie in [1, 1000000]", "invalid_request_error", "invalid_max_tokens");
    if (spec.context_tokens > 0 &&
        c.prompt_tokens + static_cast<std::size_t>(c.max_tokens) > static_cast<std::size_t>(spec.context_tokens))
      return reply_error(stream, c, 400,
                         "This model's maximum context length is " + std::to_string(spec.context_tokens) +
                             " tokens. However, you requested " + std::to_string(c.prompt_tokens + c.max_tokens) +
                             " tokens. Please reduce the length of the messages or completion.",
                         "invalid_request_error", "context_length_exceeded");
    c.stream_mode = body.value("stream", false);
    if (auto so = body.find("stream_options"); so != body.end() && so->is_object())
      c.include_usage = so->value("include_usage", false) && spec.stream_usage;
    if (spec.close_connections) c.keep = false;
    c.n_out = spec.output_tokens ? std::min(*spec.output_tokens, c.max_tokens) : c.max_tokens;
    {
      std::lock_guard lock(c.st->mu);
      c.nth = ++c.st->requests;
    }
    return std::nullopt;
  }

  // What the provider answers instead of generating: the request bucket's and the token quota's
  // 429s, a model still loading, and the planted faults that answer at once. A refusal is
  // answered here (its outcome returned); a fault that strikes mid-stream is left in `mid_fault`.
  template <typename Stream>
  std::optional<bool> refuse(Stream& stream, ChatCall& c, const FaultRule*& mid_fault) {
    ModelState& st = *c.st;
    const ModelSpec& spec = st.spec;
    auto& headers = c.headers;
    if (const auto wait_s = bucket_refusal(st, c.arrived)) {
      headers.emplace_back("retry-after", std::to_string(static_cast<long long>(std::ceil(*wait_s))));
      headers.emplace_back("retry-after-ms", std::to_string(static_cast<long long>(std::ceil(*wait_s * 1000))));
      return reply_error(stream, c, 429, "Rate limit reached for requests", "rate_limit_error", "rate_limit_exceeded");
    }
    if (spec.tokens_per_min > 0) {
      const double cost = static_cast<double>(c.prompt_tokens) + c.max_tokens;
      double left = 0;
      const auto wait_s = quota_refusal(st, c.arrived, cost, left);
      headers.emplace_back("x-ratelimit-limit-tokens", std::to_string(static_cast<long long>(spec.tokens_per_min)));
      headers.emplace_back("x-ratelimit-remaining-tokens", std::to_string(static_cast<long long>(left)));
      if (wait_s) {
        char said[256];
        std::snprintf(said, sizeof said,
                      "Rate limit reached for %s in organization org-fake on tokens per min (TPM): Limit %.0f, Used %.0f, "
                      "Requested %.0f. Please try again in %.3fs.",
                      c.model.c_str(), spec.tokens_per_min, spec.tokens_per_min - left, cost, *wait_s);
        headers.emplace_back("retry-after", std::to_string(static_cast<long long>(std::ceil(*wait_s))));
        headers.emplace_back("retry-after-ms", std::to_string(static_cast<long long>(std::ceil(*wait_s * 1000))));
        return reply_error(stream, c, 429, said, "tokens", "rate_limit_exceeded");
      }
    }
    if (const auto left_s = loading_left_s(st, c.arrived)) {
      char estimate[32];
      std::snprintf(estimate, sizeof estimate, "%.1f", *left_s);
      return reply(stream, c, 503,
                   "{\"error\":" + json("Model " + c.model + " is currently loading").dump() + ",\"estimated_time\":" + estimate + "}");
    }
    for (const auto& f : spec.faults) {
      const bool hit = (f.every > 0 && c.nth % static_cast<std::uint64_t>(f.every) == 0) ||
                       (f.first > 0 && c.nth <= static_cast<std::uint64_t>(f.first));
      if (!hit) continue;
      if (f.kind == "429" || f.kind == "503" || f.kind == "529") {
        if (f.retry_after_s >= 0) {
          std::ostringstream ra;
          ra << f.retry_after_s;
          headers.emplace_back("retry-after", ra.str());
        }
        if (f.kind == "529")  // Anthropic's: the API is overloaded, in its own error shape
          return reply(stream, c, 529, R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
        if (f.kind == "429")
          return reply_error(stream, c, 429, "Rate limit reached for requests", "rate_limit_error", "rate_limit_exceeded");
        return reply_error(stream, c, 503, "The server is overloaded, try again later", "server_error", "overloaded");
      }
      if (f.kind == "html_502") {  // a proxy in front whose upstream failed: its own HTML page
        headers.emplace_back("content-type", "text/html");
        return reply(stream, c, 502,
                     "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad "
                     "Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n");
      }
      if (f.kind == "endless_headers") {
        record(served_entry(c.model, c.arrived, 200, c.rid, c.req.body().size()), c.req, c.body);
        return endless_headers(stream);
      }
      if (!mid_fault) mid_fault = &f;
    }
    return std::nullopt;
  }

  // A slot of the model's, held while one request generates. With a limit on slots, admission is
  // first come first served; without one, nobody waits (and nobody wakes 255 waiting threads to
  // find out, as a shared queue would make them). `held` is false when the server stopped first.
  class Slot {
   public:
    Slot(Impl& im, ModelState& st) : im_(im), st_(st) {
      const ModelSpec& spec = st.spec;
      {
        std::unique_lock lock(st.mu);
        if (spec.slots > 0) {
          const std::uint64_t ticket = st.next_ticket++;
          st.queue.push_back(ticket);
          const auto admissible = [&] {
            return im.stop_flag.load() || (st.queue.front() == ticket && st.busy < spec.slots);
          };
          waited = !admissible();
          if (waited) im.engine_count(&EngineStats::waiting, +1);
          st.cv.wait(lock, admissible);
          if (waited) im.engine_count(&EngineStats::waiting, -1);
          if (im.stop_flag.load()) return;
          st.queue.pop_front();
        }
        ++st.busy;
        batch = spec.slots > 0 ? st.busy : 1;
        const auto now = Clock::now();
        if (spec.cold_idle_s > 0 || spec.cold_at_start) {
          if (!st.ever_served)
            cold = spec.cold_at_start;
          else if (st.in_flight == 0 && spec.cold_idle_s > 0)
            cold = now - st.last_done >= from_ms(spec.cold_idle_s * 1000.0);
        }
        st.ever_served = true;
        ++st.in_flight;
        if (spec.slots > 0) st.cv.notify_all();  // the next in line may be admitted too
      }
      held = true;
      im.engine_count(&EngineStats::running, +1);
    }
    ~Slot() {
      if (!held) return;
      im_.engine_count(&EngineStats::running, -1);
      std::lock_guard lock(st_.mu);
      --st_.busy;
      --st_.in_flight;
      st_.last_done = Clock::now();
      if (st_.spec.slots > 0) st_.cv.notify_all();
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

    bool held = false;
    bool waited = false;  // another request held the last slot when this one came
    bool cold = false;    // the model was unloaded: this request pays its cold start
    int batch = 1;        // sequences decoding together, this one included

   private:
    Impl& im_;
    ModelState& st_;
  };

  // When each of a request's tokens is due, planted from its arrival: the body's parse, the wait
  // for a slot, the cold start, prefill at the neighbour's pace, then decode a token at a time.
  struct Timeline {
    const ModelState* st = nullptr;
    Clock::time_point arrived, parsed_at, admitted, first_at;
    double per_token_ms = 0;
    double growth_ms = 0;     // each token's extra cost per token generated before it
    Clock::duration shift{};  // a planted stall pushes every later token back
    double parse_ms() const { return std::chrono::duration<double, std::milli>(parsed_at - arrived).count(); }
    double queue_ms() const { return std::chrono::duration<double, std::milli>(admitted - parsed_at).count(); }
    // Token i follows i tokens after the first, the k-th of them k x growth_ms slower.
    Clock::time_point token_at(int i) const {
      return done_at(*st, first_at, per_token_ms * i + growth_ms * i * (i + 1) / 2.0) + shift;
    }
  };

  // The planted parse: reading the body costs time in proportion to its size.
  Clock::time_point parsed_at(const ChatCall& c) const {
    const double body_kb = static_cast<double>(c.req.body().size()) / 1024.0;
    return c.arrived + from_ms(c.st->spec.parse_ms_per_kb * body_kb);
  }

  // The request's timeline once it holds a slot; where nobody waited it does not move with this
  // thread's own lateness. The replica that serves it (one may be slow) names itself in a header.
  Timeline plan(ChatCall& c, const Slot& slot, Clock::time_point parsed) {
    const ModelSpec& spec = c.st->spec;
    Timeline t;
    t.st = c.st;
    t.arrived = c.arrived;
    t.parsed_at = parsed;
    t.admitted = slot.waited ? Clock::now() : parsed;
    double slow = tail_slowdown(spec, spec.tail_fraction > 0 ? uniform01() : 1.0);
    if (spec.replicas > 0) {
      const int replica = std::min(spec.replicas - 1, static_cast<int>(uniform01() * spec.replicas));
      if (replica == 0) slow *= spec.slow_replica_factor;
      if (!spec.replica_header.empty())
        c.headers.emplace_back(spec.replica_header, "replica-" + std::to_string(replica + 1));
    }
    const double prompt = static_cast<double>(c.prompt_tokens);
    const double batching = 1 + spec.batch_decode_penalty * (slot.batch - 1);
    t.per_token_ms = slow * (spec.decode_ms_per_token + spec.decode_ms_per_1k_context * prompt / 1000.0) * batching;
    t.growth_ms = slow * spec.decode_ms_per_1k_output / 1000.0 * batching;
    const double fresh = static_cast<double>(c.prompt_tokens - c.cached_tokens);
    // The cold start first, then the model's work to the first token at the neighbour's pace.
    const double first_work_ms =
        slow * (spec.overhead_ms +
                (spec.prefill_ms_per_token + spec.prefill_growth_ms_per_1k_tokens * fresh / 1000.0) * fresh +
                jitter(spec.jitter_ms)) +
        t.per_token_ms * spec.reasoning_tokens;
    t.first_at = done_at(*c.st, t.admitted + from_ms(slot.cold ? spec.cold_penalty_ms : 0.0), first_work_ms);
    std::lock_guard lock(engine.mu);
    engine.queue.add(t.queue_ms() / 1000.0);
    engine.ttft.add(std::chrono::duration<double>(t.first_at - c.arrived).count());
    engine.prefix_queries += c.prompt_tokens;
    engine.prefix_hits += c.cached_tokens;
    return t;
  }

  // The answer's headers (the model's own, and its timings when it tells them), and the request
  // recorded as served.
  void announce(ChatCall& c, const Timeline& t) {
    const ModelSpec& spec = c.st->spec;
    c.headers.insert(c.headers.end(), spec.headers.begin(), spec.headers.end());
    if (spec.timing_headers) {
      std::ostringstream st_hdr;
      st_hdr.setf(std::ios::fixed);
      st_hdr.precision(1);
      st_hdr << "parse;dur=" << t.parse_ms() << ", queue;dur=" << t.queue_ms();
      c.headers.emplace_back("server-timing", st_hdr.str());
      c.headers.emplace_back("x-queue-time", std::to_string(static_cast<long long>(t.queue_ms())));
    }
    record(served_entry(c.model, c.arrived, 200, c.rid, c.req.body().size()), c.req, c.body);
  }

  template <typename Stream>
  bool handle_chat(Stream& stream, const bhttp::request<bhttp::string_body>& req, Clock::time_point arrived,
                   const std::string& rid, std::vector<std::pair<std::string, std::string>> headers_in,
                   bool anthropic) {
    ChatCall c(req, arrived, rid, std::move(headers_in), anthropic);
    if (auto refused = read_chat(stream, c)) return *refused;
    const FaultRule* mid_fault = nullptr;
    if (auto refused = refuse(stream, c, mid_fault)) return *refused;
    const auto parsed = parsed_at(c);
    if (!sleep_until(parsed)) return false;
    const Slot slot(*this, *c.st);
    if (!slot.held) return false;
    Timeline t = plan(c, slot, parsed);
    announce(c, t);
    const ChatFormat format({c.rid, c.model, c.anthropic, c.prompt_tokens, c.cached_tokens,
                            c.st->spec.reasoning_tokens, c.n_out < c.max_tokens,
                            std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()});
    if (!c.stream_mode) return answer_whole(stream, c, format, t);
    return answer_stream(stream, c, format, t, mid_fault);
  }

  template <typename Stream>
  bool answer_whole(Stream& stream, ChatCall& c, const ChatFormat& format, const Timeline& t) {
    if (!sleep_until(t.token_at(c.n_out - 1))) return false;
    if (c.st->spec.timing_headers) {
      const double proc = std::chrono::duration<double, std::milli>(Clock::now() - c.arrived).count();
      c.headers.emplace_back("openai-processing-ms", std::to_string(static_cast<long long>(proc)));
    }
    return write_simple(stream, 200, format.whole(c.n_out), c.keep, c.headers);
  }

  // A streamed answer's transport: the header block, then each piece as one chunk, written when due.
  template <typename Stream>
  struct EventSink {
    Impl& im;
    Stream& stream;
    bool keep;
    beast::error_code ec;
    // SSE comment lines (": keep-alive"), one each interval from the headers on, whatever the
    // events are doing, as gateways send them to keep idle connections open; 0: none.
    double comment_every_ms = 0;
    Clock::time_point next_comment{};

    bool begin(const std::vector<std::pair<std::string, std::string>>& headers) {
      bhttp::response<bhttp::empty_body> res{bhttp::status::ok, 11};
      res.set(bhttp::field::server, "infdoctor-fake");
      res.set(bhttp::field::content_type, "text/event-stream");
      res.set(bhttp::field::cache_control, "no-cache");
      for (const auto& [k, v] : headers) res.set(k, v);
      res.keep_alive(keep);
      res.chunked(true);
      bhttp::response_serializer<bhttp::empty_body> sr{res};
      bhttp::write_header(stream, sr, ec);
      return !ec;
    }
    bool send(const std::string& payload) {
      if (payload.empty()) return true;
      net::write(stream, bhttp::make_chunk(net::buffer(payload)), ec);
      return !ec;
    }
    bool send_at(Clock::time_point at, const std::string& payload) {
      for (; comment_every_ms > 0 && next_comment < at; next_comment += from_ms(comment_every_ms))
        if (!im.sleep_until(next_comment) || !send(": keep-alive\n\n")) return false;
      return im.sleep_until(at) && send(payload);
    }
    // The last chunk: the response ends cleanly, and the connection serves again when kept.
    bool end() {
      net::write(stream, bhttp::make_chunk_last(), ec);
      return !ec && keep;
    }
  };

  // A buffering intermediary: what is produced between two ticks of a grid that starts at the
  // first token goes out together at the later tick. Without a grid, each event goes out when due.
  struct Release {
    double interval_ms = 0;
    Clock::time_point first_at;
    std::string held;
    Clock::time_point pending{};

    Clock::time_point time_for(Clock::time_point produced) const {
      if (interval_ms <= 0) return produced;
      const auto grid = from_ms(interval_ms);
      const auto k = std::max<Clock::rep>(0, (produced - first_at) / grid) + 1;
      return first_at + grid * k;
    }
    template <typename Sink>
    bool put(Sink& sink, std::string ev, Clock::time_point produced) {
      const auto release = time_for(produced);
      if (!held.empty() && release != pending && !flush(sink)) return false;
      if (interval_ms <= 0) return sink.send_at(release, ev);
      held += ev;
      pending = release;
      return true;
    }
    template <typename Sink>
    bool flush(Sink& sink) {
      if (held.empty()) return true;
      const bool ok = sink.send_at(pending, held);
      held.clear();
      return ok;
    }
    // The stream ended upstream at `ended`: a proxy forwards what it holds then, not at its next tick.
    template <typename Sink>
    bool flush_at_end(Sink& sink, Clock::time_point ended) {
      if (held.empty()) return true;
      const bool ok = sink.send_at(std::min(pending, ended), held);
      held.clear();
      return ok;
    }
  };

  // Headers (and the opening events) at once, visible reasoning, then the answer's tokens on their
  // schedule, a planted fault where it strikes, and the closing events.
  template <typename Stream>
  bool answer_stream(Stream& stream, ChatCall& c, const ChatFormat& format, Timeline& t, const FaultRule* fault) {
    const ModelSpec& spec = c.st->spec;
    EventSink<Stream> sink{*this, stream, c.keep, {}};
    // What the server says it spent before the headers, as OpenAI's openai-processing-ms does on a
    // stream: the request's parse and its queue, not the generation that follows.
    if (spec.timing_headers)
      c.headers.emplace_back("openai-processing-ms",
                             std::to_string(static_cast<long long>(std::chrono::duration<double, std::milli>(Clock::now() - c.arrived).count())));
    if (!sink.begin(c.headers) || !sink.send(format.opening(spec.role_chunk))) return false;
    sink.comment_every_ms = spec.comment_every_ms;
    sink.next_comment = Clock::now() + from_ms(spec.comment_every_ms);
    // Visible reasoning streams before the answer, a token at a time at the decode speed, the
    // last one a token's time before the answer's first.
    const int reasoning = spec.reasoning_visible ? spec.reasoning_tokens : 0;
    for (int i = 0; i < reasoning; ++i)
      if (!sink.send_at(t.first_at - from_ms(t.per_token_ms * (reasoning - i)), format.reasoning(i))) return false;

    Release release{spec.flush_interval_ms, t.first_at, {}, {}};
    int sent = 0;
    while (sent < c.n_out) {
      const int k = std::min(spec.tokens_per_event, c.n_out - sent);
      const auto produced = t.token_at(sent + k - 1);
      if (fault && sent + k > fault->after_tokens && sent <= fault->after_tokens) {
        if (!release.flush(sink)) return false;
        bool finish_now = false;
        if (auto outcome = strike(sink, format, *fault, t, sent, finish_now)) return *outcome;
        if (finish_now) break;
      }
      const std::string text = answer_words(sent, sent + k);
      sent += k;
      if (spec.stamp_tokens) {  // the stamp is taken after the wait, just before the write
        if (!sleep_until(release.time_for(produced))) return false;
        if (!sink.send(format.content(std::to_string(micros_of(c.arrived)) + "/" +
                                      std::to_string(micros_of(Clock::now())) + ";")))
          return false;
        continue;
      }
      if (!release.put(sink, format.content(text), produced)) return false;
    }
    if (!release.flush_at_end(sink, t.token_at(std::max(0, sent - 1))) || !sink.send(format.closing(sent, c.include_usage)))
      return false;
    return sink.end();
  }

  // A fault planted in mid-stream, struck before token `sent`: the connection closed or reset, the
  // response cut short or filled with garbage (each an outcome returned), or a broken event, a huge
  // one, an error event (after which the stream closes: `finish_now`), or a stall that pushes every
  // later token back.
  template <typename Sink>
  std::optional<bool> strike(Sink& sink, const ChatFormat& format, const FaultRule& f, Timeline& t, int sent,
                             bool& finish_now) {
    auto& sock = beast::get_lowest_layer(sink.stream);
    if (f.kind == "close_mid_stream") {
      sock.close(sink.ec);
      return false;
    }
    if (f.kind == "reset") {
      const linger hard{1, 0};  // close() then sends RST instead of FIN
      ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      sock.close(sink.ec);
      return false;
    }
    // A proxy that times out, or a server that gives up: the HTTP response ends cleanly, with no
    // [DONE] (message_stop), no finish_reason and no usage.
    if (f.kind == "cut_stream") return sink.end();
    if (f.kind == "garbage") {
      std::string junk(static_cast<std::size_t>(f.bytes), '\0');
      std::uint32_t x = 2463534242u;
      for (char& ch : junk) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        ch = static_cast<char>(x & 0xff);
      }
      for (std::size_t i = 0; i < junk.size(); i += 16384)
        if (!sink.send(junk.substr(i, 16384))) return false;
      return sink.end();
    }
    if (f.kind == "invalid_json" && !sink.send("data: {\"choices\":[{\"delta\":{\"content\":\" cut\n\n")) return false;
    if (f.kind == "huge_event" && !sink.send(format.content(std::string(static_cast<std::size_t>(f.bytes), 'x'))))
      return false;
    if (f.kind == "error_event") {
      if (!sink.send(format.error("internal error while generating", "server_error", "internal_error"))) return false;
      finish_now = true;
    }
    if (f.kind == "stall") {
      const auto stall = from_ms(f.stall_ms);
      if (!sleep_until(std::max(Clock::now(), t.token_at(sent)) + stall)) return false;
      t.shift += stall;
    }
    return std::nullopt;
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() { stop(); }

core::Result<std::unique_ptr<Server>> Server::start(Scenario scenario, ServerOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->rng.seed(scenario.seed);
  for (const auto& [name, spec] : scenario.models) {
    auto st = std::make_unique<ModelState>();
    st->spec = spec;
    st->last_done = Clock::now();
    st->slow_origin = st->last_done - from_ms(spec.slow_every_s > 0 ? impl->uniform01() * spec.slow_every_s * 1000.0 : 0.0);
    st->bucket_tokens = spec.bucket_size;
    st->quota_tokens = spec.tokens_per_min;
    st->quota_at = st->last_done;
    st->bucket_at = st->last_done;
    impl->models[name] = std::move(st);
  }
  impl->scenario = std::move(scenario);
  impl->options = options;
  try {
    if (!options.tls_cert.empty() || !options.tls_key.empty()) {
      impl->tls = std::make_unique<ssl::context>(ssl::context::tls_server);
      impl->tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3);
      impl->tls->use_certificate_chain_file(options.tls_cert);
      impl->tls->use_private_key_file(options.tls_key, ssl::context::pem);
    }
    const auto addr = net::ip::make_address(options.host);
    tcp::endpoint ep(addr, options.port);
    impl->acceptor.open(ep.protocol());
    impl->acceptor.set_option(net::socket_base::reuse_address(true));
    impl->acceptor.bind(ep);
    impl->acceptor.listen(net::socket_base::max_listen_connections);
    impl->port = impl->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return core::make_error(core::ErrorCode::InvalidArgument,
                            "cannot listen on " + options.host + ":" + std::to_string(options.port), e.what());
  }
  Impl* raw = impl.get();
  raw->do_accept();
  raw->accept_thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

std::uint16_t Server::port() const { return impl_->port; }
const std::string& Server::host() const { return impl_->options.host; }

std::string Server::base_url() const {
  const bool ipv6 = impl_->options.host.find(':') != std::string::npos;
  const std::string host = ipv6 ? "[" + impl_->options.host + "]" : impl_->options.host;
  return std::string(impl_->tls ? "https" : "http") + "://" + host + ":" + std::to_string(impl_->port) + "/v1";
}

std::vector<ServedRequest> Server::served() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}

void Server::stop() {
  Impl& im = *impl_;
  {
    std::lock_guard lock(im.mu);
    if (im.stopping) return;
    im.stopping = true;
    im.stop_flag = true;
    for (int fd : im.open_fds) ::shutdown(fd, SHUT_RDWR);
  }
  im.stop_cv.notify_all();
  for (auto& [_, st] : im.models) {
    std::lock_guard lock(st->mu);
    st->cv.notify_all();
  }
  net::post(im.io, [&im] {
    beast::error_code ec;
    im.acceptor.close(ec);
  });
  if (im.accept_thread.joinable()) im.accept_thread.join();
  std::list<Impl::Conn> conns;
  {
    std::lock_guard lock(im.mu);
    conns.swap(im.conns);
  }
  for (auto& c : conns) c.thread.join();
}

}  // namespace infdoctor::fake
