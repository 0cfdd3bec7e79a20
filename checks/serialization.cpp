// checks/serialization.cpp. Measures, on the target model:
//  - upload and parse cost: the same prompt and tokens with the request body padded by JSON
//    whitespace (insignificant, RFC 8259 section 2) to rising sizes (serialization.sizes_kb),
//    max_tokens=1; TTFT (without connection setup) fitted against body megabytes (Theil-Sen).
//  - streamed against non-streamed: the same request both ways, end-to-end; and the bytes the
//    stream spends per output token (framing and JSON overhead).
//  - compression: the same stream with the SDKs' Accept-Encoding (gzip, deflate) and without
//    any; whether the answer came compressed, and when its first token and its clumps arrived.
//    A compressing proxy that waits for its buffer to fill holds the first token back.
//  - the path's share of it: a body larger than the sender's congestion window needs more round
//    trips while the window doubles (slow start, RFC 5681), from the initial ten segments on a
//    new connection (RFC 6928: 14,600 bytes); each byte acknowledged in slow start widens the
//    window by a byte, so on a kept-alive connection a body goes out on the window the bodies
//    before it opened. The round trip is the smallest of three TCP connects to the API port;
//    through a proxy, the transport check's round trip through the tunnel (none is sent). Each
//    TTFT less the round trips slow start adds to its body, the fastest of each size (a repeat
//    goes out on the window its first send opened), is fitted again: what remains is upload
//    bandwidth and the server's parsing.
// Cannot tell: upload bandwidth from server-side parsing (both are in the net slope); which of
// several hops compressed (the headers name the last); a window already open on a busy
// connection (then slow start costs less than netted, and the net slope errs low).
// Emits: serialization.{upload_parse_ms_per_mb (or upload_parse_noise_ms_per_mb),upload_parse_overhead_ms,upload_parse_fit_r2_ratio,
// stream_total_p50_ms,nonstream_total_p50_ms,stream_overhead_ms,stream_token_bytes,compressed_ratio,
// compressed_ttft_p50_ms,identity_ttft_p50_ms,compression_held_ms,...}.
#include <algorithm>

#include "api/endpoint_spec.h"
#include "checks/check.h"
#include "checks/serialization.h"
#include "checks/registry.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kSerializationInfo{
    "serialization",
    "Serialization",
    "Cost of request body size (upload and parse) and of streaming against a single response.",
    {{serialization_metric::upload_parse_ms_per_mb.name, "ms", "fitted TTFT slope per megabyte of request body",
      {.layer = "serialization (per MB of request)", .per = "per MB sent"}},
     {serialization_metric::upload_parse_noise_ms_per_mb.name, "ms",
      "instead of the slope when it is within the points' scatter: the smallest cost per MB that would show"},
     {serialization_metric::upload_parse_overhead_ms.name, "ms", "fitted TTFT at an empty body"},
     {serialization_metric::path_rtt_ms.name, "ms", "the round trip slow start multiplies: the smallest of three TCP connects to the API port; through a proxy, the transport check's first byte over an open tunnel"},
     {serialization_metric::slow_start_ms_per_mb.name, "ms",
      "what TCP slow start explains of the slope: the slope less the net slope"},
     {serialization_metric::net_ms_per_mb.name, "ms",
      "the slope of the fastest TTFT of each body size, each less the round trips slow start adds to it: upload bandwidth and the server's parsing (0 within the points' scatter)",
      {.layer = "serialization (per MB of request, net of slow start)", .per = "per MB sent"}},
     {serialization_metric::upload_parse_fit_r2_ratio.name, "ratio", "how well a line explains TTFT against body size"},
     {serialization_metric::largest_body_bytes.name, "bytes", "largest request body answered"},
     {serialization_metric::body_limit_bytes.name, "bytes",
      "smallest request body the endpoint refused as too large (413): a limit, not a failure; larger sizes are not sent"},
     {serialization_metric::ttft_at_largest_body_ms.name, "ms", "median TTFT at the largest body"},
     {serialization_metric::stream_total_p50_ms.name, "ms", "streamed: median end-to-end"},
     {serialization_metric::nonstream_total_p50_ms.name, "ms", "not streamed: median end-to-end"},
     {serialization_metric::stream_overhead_ms.name, "ms", "streamed minus non-streamed end-to-end, the fastest of each"},
     {serialization_metric::stream_token_bytes.name, "bytes", "response bytes per streamed output token"},
     {serialization_metric::compressed_ratio.name, "ratio",
      "streams asked for with the SDKs' Accept-Encoding (gzip, deflate) that came compressed (Content-Encoding)"},
     {serialization_metric::compressed_ttft_p50_ms.name, "ms", "streamed with the SDKs' Accept-Encoding: median time to first token"},
     {serialization_metric::identity_ttft_p50_ms.name, "ms", "the same stream without Accept-Encoding: median time to first token"},
     {serialization_metric::identity_tpot_p50_ms.name, "ms", "without Accept-Encoding: median time per output token"},
     {serialization_metric::compressed_arrivals_per_event_ratio.name, "ratio",
      "with the SDKs' Accept-Encoding: distinct moments content arrived, per content event"},
     {serialization_metric::identity_arrivals_per_event_ratio.name, "ratio",
      "without Accept-Encoding: distinct moments content arrived, per content event"},
     {serialization_metric::compression_held_ms.name, "ms",
      "how much later the first token came with the SDKs' Accept-Encoding than without (medians)"},
     {serialization_metric::samples_count.name, "count", "padded requests that succeeded"},
     {serialization_metric::failures_count.name, "count", "failed requests"}},
    {{&serialization_metric::upload_parse_ms_per_mb,
      "body {upload_parse_ms_per_mb}, stream vs whole {stream_overhead_ms}, {stream_token_bytes} per token"},
     {&serialization_metric::upload_parse_noise_ms_per_mb, "body cost not measurable (under {upload_parse_noise_ms_per_mb}), stream vs whole "
                                      "{stream_overhead_ms}, {stream_token_bytes} per token"},
     {nullptr, "body -, stream vs whole {stream_overhead_ms}, {stream_token_bytes} per token"}},
    {serialization_setting::sizes_kb, serialization_setting::repeats, serialization_setting::max_tokens,
     serialization_setting::prompt_tokens}};

// The streams of one Accept-Encoding: when their first token came, how they arrived, and how many
// answers named a Content-Encoding.
struct Encoded {
  std::vector<double> ttft, tpot, arrivals_per_event;
  int count = 0, encoded = 0;

  void add(const api::RequestSample& s) {
    ++count;
    if (auto it = s.headers.find("content-encoding"); it != s.headers.end() && it->second != "identity") ++encoded;
    if (auto t = server_ttft_ms(s)) ttft.push_back(*t);
    if (s.tpot_ms) tpot.push_back(*s.tpot_ms);
    if (auto a = api::arrivals_per_event(s)) arrivals_per_event.push_back(*a);
  }
  void emit(CheckResult& out, const MetricKey& ttft_p50, const MetricKey& arrivals_per_event_ratio) const {
    if (auto v = stats::median(ttft)) out.set(ttft_p50, *v);
    if (auto v = stats::median(arrivals_per_event)) out.set(arrivals_per_event_ratio, *v);
  }
};

// RFC 6928's initial window: ten segments of a 1,460-byte MSS.
constexpr double kInitialWindowBytes = 14600;

// The sender's congestion window on the check's connection, followed request by request as slow
// start grows it (RFC 5681, section 3.1): a new connection starts from the initial window, and
// every byte acknowledged widens it by a byte. No loss is assumed, so it errs wide: what it nets
// out is a lower bound of what slow start cost.
class SlowStart {
 public:
  // Round trips beyond the first that `bytes` need on the window as it stands, the window doubling
  // each round trip; the window then grows by the bytes sent.
  int send(double bytes, bool new_connection) {
    if (new_connection) window_ = kInitialWindowBytes;
    int extra = 0;
    for (double round = window_, delivered = window_; delivered < bytes && extra < 64; ++extra) {
      round *= 2;
      delivered += round;
    }
    window_ += bytes;
    return extra;
  }

 private:
  double window_ = kInitialWindowBytes;
};

// The round trip slow start multiplies, and where it was read. Direct: the smallest of three TCP
// connects to the address the requests use, the first the path check did not find silent (the
// smallest is the path's own, without queueing). Through a proxy the body crosses the tunnel's far
// side under that connection's slow start, where the client cannot connect: the run's round trip
// through the tunnel (endpoint_round_trip_ms), nothing sent. Nothing without either.
struct RoundTrip {
  double ms;
  const char* source;
};
std::optional<RoundTrip> slow_start_round_trip(CheckContext& ctx) {
  if (api::proxy_route(ctx.endpoint())) {
    if (const auto rtt = endpoint_round_trip_ms(ctx.earlier_checks()))
      return RoundTrip{*rtt, "through the proxy: the transport check's first byte over an open tunnel, an upper bound"};
    return std::nullopt;
  }
  const auto& addrs = ctx.addresses();
  const auto to = std::find_if(addrs.begin(), addrs.end(), [&](const std::string& ip) { return !ctx.silent(ip); });
  if (to == addrs.end() || ctx.target().port <= 0) return std::nullopt;
  std::optional<double> best;
  for (int i = 0; i < 3 && ctx.before_deadline(); ++i) {
    const auto p = ctx.probes().tcp_connect(*to, ctx.target().port, std::chrono::milliseconds(3000));
    if (p.rtt) best = std::min(best.value_or(1e18), core::to_ms(*p.rtt));
  }
  if (!best) return std::nullopt;
  return RoundTrip{*best, "the smallest of three TCP connects to the API port"};
}

class SerializationCheck final : public Check {
 public:
  explicit SerializationCheck(const Options& o)
      : sizes_kb_(o.numbers(serialization_setting::sizes_kb)),
        repeats_(o.whole(serialization_setting::repeats)),
        max_tokens_(o.whole(serialization_setting::max_tokens)),
        prompt_tokens_(o.whole(serialization_setting::prompt_tokens)) {}
  const CheckInfo& info() const override { return kSerializationInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps = {{"3 TCP connects to the API port (none through a proxy): the round trip slow start multiplies", 0}};
    for (double kb : sizes_kb_) {
      steps.push_back({"request body padded to " + std::to_string(static_cast<long long>(kb)) + " KB", repeats_,
                       "target", prompt_tokens_, 1});
    }
    steps.push_back({"streamed response", repeats_, "target", prompt_tokens_, max_tokens_});
    steps.push_back({"the same streamed without Accept-Encoding", repeats_, "target", prompt_tokens_, max_tokens_});
    Step whole{"the same, not streamed", repeats_, "target", prompt_tokens_, max_tokens_};
    whole.stream = false;
    steps.push_back(whole);
    return steps;
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kSerializationInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    RequestLoop loop(ctx, out);

    api::ChatRequest base;
    base.model = ctx.models().target;
    base.prompt = api::synthetic_prompt(prompt_tokens_);
    base.max_tokens = 1;
    const std::size_t plain_bytes = api::build_chat_body(base).size();
    ctx.progress("serialization: the path's round trip");
    const auto round_trip = slow_start_round_trip(ctx);
    const double rtt_ms = round_trip ? round_trip->ms : 0.0;  // without one, only the repeats' window is netted
    std::vector<double> x, y, at_largest;
    SlowStart window;
    std::map<double, double> net_fastest;  // body megabytes -> the fastest TTFT less slow start
    double largest = 0;
    bool refused = false;  // the endpoint said a body this large is too large: larger ones are not sent
    for (const double kb : sizes_kb_) {
      if (refused) break;
      const auto target = static_cast<std::size_t>(kb * 1024);
      api::ChatRequest req = base;
      req.pad_bytes = target > plain_bytes ? target - plain_bytes : 0;
      const double body_bytes = static_cast<double>(plain_bytes + req.pad_bytes);
      std::vector<double> here;
      for (int rep = 0; rep < repeats_; ++rep) {
        ctx.progress("serialization: request body of " + std::to_string(static_cast<long long>(body_bytes)) + " bytes");
        auto s = loop.send(req, {{"body_bytes", body_bytes}});
        if (!s) break;
        if (s->limit == "body_size") {
          out.set(serialization_metric::body_limit_bytes, body_bytes);
          refused = true;
          break;
        }
        const int extra_round_trips = window.send(static_cast<double>(s->bytes_sent), !s->connection_reused);
        if (auto t = server_ttft_ms(*s)) {
          const double mb = body_bytes / (1024.0 * 1024.0);
          x.push_back(mb);
          y.push_back(*t);
          const double net = *t - rtt_ms * extra_round_trips;
          auto [it, first] = net_fastest.emplace(mb, net);
          if (!first) it->second = std::min(it->second, net);
          here.push_back(*t);
        }
      }
      if (!here.empty()) {
        largest = body_bytes;
        at_largest = here;
      }
    }
    out.set(serialization_metric::samples_count, static_cast<double>(x.size()));
    if (largest > 0) {
      out.set(serialization_metric::largest_body_bytes, largest);
      out.set(serialization_metric::ttft_at_largest_body_ms, *stats::median(at_largest));
    }
    const auto raw = stats::theil_sen(x, y);
    if (const auto& f = raw) {
      // A cost per megabyte within the scatter of the points (or below zero) is not a
      // measurement: its noise is reported instead, and no rule reads a slope that is not there.
      if (f->slope > f->slope_noise) out.set(serialization_metric::upload_parse_ms_per_mb, f->slope);
      else out.set(serialization_metric::upload_parse_noise_ms_per_mb, f->slope_noise);
      out.set(serialization_metric::upload_parse_overhead_ms, f->intercept);
      out.set(serialization_metric::upload_parse_fit_r2_ratio, f->r2);
    }
    // The same fit net of slow start, on the fastest of each size: without a round trip only the
    // repeats' window is netted (said in the details).
    if (round_trip) {
      out.set(serialization_metric::path_rtt_ms, round_trip->ms);
      out.details["round_trip"] = round_trip->source;
    } else {
      out.details["slow_start"] = api::proxy_route(ctx.endpoint())
                                      ? "no round trip through the proxy (the transport check did not measure one): only the fastest of each size is fitted"
                                      : "no round trip measured (no address answered a connect): only the fastest of each size is fitted";
    }
    std::vector<double> nx, ny;
    for (const auto& [mb, t] : net_fastest) {
      nx.push_back(mb);
      ny.push_back(t);
    }
    if (auto f = stats::theil_sen(nx, ny)) {
      const double net = f->slope > f->slope_noise ? f->slope : 0.0;
      out.set(serialization_metric::net_ms_per_mb, net);
      if (raw) out.set(serialization_metric::slow_start_ms_per_mb, std::max(0.0, raw->slope - net));
    }

    // The same output streamed and not, and streamed without Accept-Encoding, alternating.
    struct Variant {
      const char* what;
      bool stream;
      const char* accept_encoding;
    };
    const Variant variants[] = {{"streamed", true, api::kSdkAcceptEncoding},
                                {"non-streamed", false, api::kSdkAcceptEncoding},
                                {"streamed without Accept-Encoding", true, ""}};
    std::vector<double> streamed, whole, bytes_per_token;
    Encoded compressed, identity;
    for (int rep = 0; rep < repeats_; ++rep) {
      for (const Variant& v : variants) {
        ctx.progress(std::string("serialization: ") + v.what + " response");
        api::ChatRequest req = base;
        req.max_tokens = max_tokens_;
        req.stream = v.stream;
        req.accept_encoding = v.accept_encoding;
        auto s = loop.send(req, {{"stream", v.stream}, {"accept_encoding", v.accept_encoding}});
        if (!s || !s->ok) continue;
        if (v.stream) (*v.accept_encoding ? compressed : identity).add(*s);
        if (!*v.accept_encoding) continue;
        if (auto t = server_total_ms(*s)) (v.stream ? streamed : whole).push_back(*t);
        if (v.stream && s->output_tokens && *s->output_tokens > 0)
          bytes_per_token.push_back(static_cast<double>(s->bytes_received) / static_cast<double>(*s->output_tokens));
      }
    }
    if (compressed.count > 0) out.set(serialization_metric::compressed_ratio, static_cast<double>(compressed.encoded) / compressed.count);
    compressed.emit(out, serialization_metric::compressed_ttft_p50_ms, serialization_metric::compressed_arrivals_per_event_ratio);
    identity.emit(out, serialization_metric::identity_ttft_p50_ms, serialization_metric::identity_arrivals_per_event_ratio);
    // Time per token only where the stream came as generated: a held one's is its clumps'.
    if (auto v = stats::median(identity.tpot)) out.set(serialization_metric::identity_tpot_p50_ms, *v);
    if (auto c = stats::median(compressed.ttft), i = stats::median(identity.ttft); c && i)
      out.set(serialization_metric::compression_held_ms, *c - *i);
    const auto sm = stats::median(streamed), wm = stats::median(whole);
    if (sm) out.set(serialization_metric::stream_total_p50_ms, *sm);
    if (wm) out.set(serialization_metric::nonstream_total_p50_ms, *wm);
    // The overhead from the fastest of each: a slow request (a heavy tail, a slow window) only
    // adds, and with two repeats a median is the mean of whatever they met. One request each is
    // one sample of each: no comparison rests on it.
    if (streamed.size() >= 2 && whole.size() >= 2)
      out.set(serialization_metric::stream_overhead_ms, *std::min_element(streamed.begin(), streamed.end()) -
                                        *std::min_element(whole.begin(), whole.end()));
    if (auto b = stats::median(bytes_per_token)) out.set(serialization_metric::stream_token_bytes, *b);
    out.set(serialization_metric::failures_count, loop.failures());
    if (out.status == CheckStatus::Ok && x.empty() && streamed.empty())
      return out.fail(core::make_error(core::ErrorCode::StreamError, "no serialization request succeeded"));
    return out;
  }

 private:
  std::vector<double> sizes_kb_;
  int repeats_, max_tokens_, prompt_tokens_;
};

}  // namespace

CheckEntry serialization_entry() { return entry_of<SerializationCheck>(kSerializationInfo); }

}  // namespace infdoctor::checks
