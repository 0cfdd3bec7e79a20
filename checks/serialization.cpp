// checks/serialization.cpp. Measures, on the target model:
//  - upload and parse cost: the same prompt and tokens with the request body padded by JSON
//    whitespace (insignificant, RFC 8259 section 2) to rising sizes (serialization.sizes_kb),
//    max_tokens=1; TTFT (without connection setup) fitted against body megabytes (Theil-Sen).
//  - streamed against non-streamed: the same request both ways, end-to-end; and the bytes the
//    stream spends per output token (framing and JSON overhead).
//  - compression: the same stream with the SDKs' Accept-Encoding (gzip, deflate) and without
//    any; whether the answer came compressed, and when its first token and its clumps arrived.
//    A compressing proxy that waits for its buffer to fill holds the first token back.
// Cannot tell: upload bandwidth from server-side parsing (both are in the slope); which of
// several hops compressed (the headers name the last).
// Emits: serialization.{upload_parse_ms_per_mb (or upload_parse_noise_ms_per_mb),upload_parse_overhead_ms,upload_parse_fit_r2_ratio,
// stream_total_p50_ms,nonstream_total_p50_ms,stream_overhead_ms,stream_token_bytes,compressed_ratio,
// compressed_ttft_p50_ms,identity_ttft_p50_ms,compression_held_ms,...}.
#include <algorithm>

#include "checks/check.h"
#include "checks/registry.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kInfo{
    "serialization",
    "Serialization",
    "Cost of request body size (upload and parse) and of streaming against a single response.",
    {{"serialization.upload_parse_ms_per_mb", "ms", "fitted TTFT slope per megabyte of request body",
      {.layer = "serialization (per MB of request)", .per = "per MB sent"}},
     {"serialization.upload_parse_noise_ms_per_mb", "ms",
      "instead of the slope when it is within the points' scatter: the smallest cost per MB that would show"},
     {"serialization.upload_parse_overhead_ms", "ms", "fitted TTFT at an empty body"},
     {"serialization.upload_parse_fit_r2_ratio", "ratio", "how well a line explains TTFT against body size"},
     {"serialization.largest_body_bytes", "bytes", "largest request body answered"},
     {"serialization.body_limit_bytes", "bytes",
      "smallest request body the endpoint refused as too large (413): a limit, not a failure; larger sizes are not sent"},
     {"serialization.ttft_at_largest_body_ms", "ms", "median TTFT at the largest body"},
     {"serialization.stream_total_p50_ms", "ms", "streamed: median end-to-end"},
     {"serialization.nonstream_total_p50_ms", "ms", "not streamed: median end-to-end"},
     {"serialization.stream_overhead_ms", "ms", "streamed minus non-streamed end-to-end, the fastest of each"},
     {"serialization.stream_token_bytes", "bytes", "response bytes per streamed output token"},
     {"serialization.compressed_ratio", "ratio",
      "streams asked for with the SDKs' Accept-Encoding (gzip, deflate) that came compressed (Content-Encoding)"},
     {"serialization.compressed_ttft_p50_ms", "ms", "streamed with the SDKs' Accept-Encoding: median time to first token"},
     {"serialization.identity_ttft_p50_ms", "ms", "the same stream without Accept-Encoding: median time to first token"},
     {"serialization.identity_tpot_p50_ms", "ms", "without Accept-Encoding: median time per output token"},
     {"serialization.compressed_arrivals_per_token_ratio", "ratio",
      "with the SDKs' Accept-Encoding: distinct moments content arrived, per output token"},
     {"serialization.identity_arrivals_per_token_ratio", "ratio",
      "without Accept-Encoding: distinct moments content arrived, per output token"},
     {"serialization.compression_held_ms", "ms",
      "how much later the first token came with the SDKs' Accept-Encoding than without (medians)"},
     {"serialization.samples_count", "count", "padded requests that succeeded"},
     {"serialization.failures_count", "count", "failed requests"}},
    {{"upload_parse_ms_per_mb",
      "body {upload_parse_ms_per_mb}, stream vs whole {stream_overhead_ms}, {stream_token_bytes} per token"},
     {"upload_parse_noise_ms_per_mb", "body cost not measurable (under {upload_parse_noise_ms_per_mb}), stream vs whole "
                                      "{stream_overhead_ms}, {stream_token_bytes} per token"},
     {nullptr, "body -, stream vs whole {stream_overhead_ms}, {stream_token_bytes} per token"}}};

// The streams of one Accept-Encoding: when their first token came, how they arrived, and how many
// answers named a Content-Encoding.
struct Encoded {
  std::vector<double> ttft, tpot, arrivals_per_token;
  int count = 0, encoded = 0;

  void add(const api::RequestSample& s) {
    ++count;
    if (auto it = s.headers.find("content-encoding"); it != s.headers.end() && it->second != "identity") ++encoded;
    if (auto t = server_ttft_ms(s)) ttft.push_back(*t);
    if (s.tpot_ms) tpot.push_back(*s.tpot_ms);
    if (auto a = api::arrivals_per_token(s)) arrivals_per_token.push_back(*a);
  }
  void emit(CheckResult& out, const std::string& prefix) const {
    if (auto v = stats::median(ttft)) out.set(prefix + "_ttft_p50_ms", *v);
    if (auto v = stats::median(arrivals_per_token)) out.set(prefix + "_arrivals_per_token_ratio", *v);
  }
};

class SerializationCheck final : public Check {
 public:
  explicit SerializationCheck(const Options& o)
      : sizes_kb_(o.get_number_list(kInfo.id, "sizes_kb", "1,64,1024,4096", 0, 65536)),
        repeats_(o.get_int(kInfo.id, "repeats", 2, 1, 100)),
        max_tokens_(o.get_int(kInfo.id, "max_tokens", 32, 2, 100000)),
        prompt_tokens_(o.get_int(kInfo.id, "prompt_tokens", 16, 1, 100000)) {}
  const CheckInfo& info() const override { return kInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps;
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

  CheckResult run(CheckContext& ctx) override {
    CheckResult out = CheckResult::start(kInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    RequestLoop loop(ctx, out);

    api::ChatRequest base;
    base.model = ctx.models().target;
    base.prompt = api::synthetic_prompt(prompt_tokens_);
    base.max_tokens = 1;
    const std::size_t plain_bytes = api::build_chat_body(base).size();
    std::vector<double> x, y, at_largest;
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
          out.set("body_limit_bytes", body_bytes);
          refused = true;
          break;
        }
        if (auto t = server_ttft_ms(*s)) {
          x.push_back(body_bytes / (1024.0 * 1024.0));
          y.push_back(*t);
          here.push_back(*t);
        }
      }
      if (!here.empty()) {
        largest = body_bytes;
        at_largest = here;
      }
    }
    out.set("samples_count", static_cast<double>(x.size()));
    if (largest > 0) {
      out.set("largest_body_bytes", largest);
      out.set("ttft_at_largest_body_ms", *stats::median(at_largest));
    }
    if (auto f = stats::theil_sen(x, y)) {
      // A cost per megabyte within the scatter of the points (or below zero) is not a
      // measurement: its noise is reported instead, and no rule reads a slope that is not there.
      if (f->slope > f->slope_noise) out.set("upload_parse_ms_per_mb", f->slope);
      else out.set("upload_parse_noise_ms_per_mb", f->slope_noise);
      out.set("upload_parse_overhead_ms", f->intercept);
      out.set("upload_parse_fit_r2_ratio", f->r2);
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
    if (compressed.count > 0) out.set("compressed_ratio", static_cast<double>(compressed.encoded) / compressed.count);
    compressed.emit(out, "compressed");
    identity.emit(out, "identity");
    // Time per token only where the stream came as generated: a held one's is its clumps'.
    if (auto v = stats::median(identity.tpot)) out.set("identity_tpot_p50_ms", *v);
    if (auto c = stats::median(compressed.ttft), i = stats::median(identity.ttft); c && i)
      out.set("compression_held_ms", *c - *i);
    const auto sm = stats::median(streamed), wm = stats::median(whole);
    if (sm) out.set("stream_total_p50_ms", *sm);
    if (wm) out.set("nonstream_total_p50_ms", *wm);
    // The overhead from the fastest of each: a slow request (a heavy tail, a slow window) only
    // adds, and with two repeats a median is the mean of whatever they met.
    if (sm && wm)
      out.set("stream_overhead_ms", *std::min_element(streamed.begin(), streamed.end()) -
                                        *std::min_element(whole.begin(), whole.end()));
    if (auto b = stats::median(bytes_per_token)) out.set("stream_token_bytes", *b);
    out.set("failures_count", loop.failures());
    if (out.status == CheckStatus::Ok && x.empty() && streamed.empty())
      return out.fail(core::make_error(core::ErrorCode::StreamError, "no serialization request succeeded"));
    return out;
  }

 private:
  std::vector<double> sizes_kb_;
  int repeats_, max_tokens_, prompt_tokens_;
};

}  // namespace

std::unique_ptr<Check> make_serialization_check(const Options& o) {
  return std::make_unique<SerializationCheck>(o);
}

}  // namespace infdoctor::checks
