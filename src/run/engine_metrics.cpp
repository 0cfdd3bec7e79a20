#include "run/engine_metrics.h"

#include <algorithm>

#include "checks/registry.h"
#include "core/strings.h"
#include "results/run_metrics.h"

namespace infdoctor::run {

namespace rm = results::run_metric;

namespace {

// Each engine's names for the same quantities; "" where it has none.
struct EngineNames {
  const char* engine;
  const char* preset;  // the --preset of the engine's own server (api/flavour.cpp)
  const char* prefix;  // every metric of the engine starts with it
  const char* running;
  const char* waiting;
  std::vector<const char*> kv_usage;  // the first present is read (names changed across versions)
  const char* preemptions;
  const char* queue_histogram;  // seconds
  const char* ttft_histogram;   // seconds
  const char* prefix_queries;
  const char* prefix_hits;
  // Speculative decoding: draft tokens proposed and accepted (counters).
  const char* spec_draft_tokens = "";
  const char* spec_accepted_tokens = "";
};

const std::vector<EngineNames>& engines() {
  static const std::vector<EngineNames> k = {
      {"vLLM", "vllm", "vllm:", "vllm:num_requests_running", "vllm:num_requests_waiting",
       {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, "vllm:num_preemptions_total",
       "vllm:request_queue_time_seconds", "vllm:time_to_first_token_seconds", "vllm:prefix_cache_queries_total",
       "vllm:prefix_cache_hits_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total"},
      {"SGLang", "sglang", "sglang:", "sglang:num_running_reqs", "sglang:num_queue_reqs", {"sglang:token_usage"}, "",
       "sglang:queue_time_seconds", "sglang:time_to_first_token_seconds", "", ""},
      {"TGI", "tgi", "tgi_", "tgi_batch_current_size", "tgi_queue_size", {}, "", "tgi_request_queue_duration", "", "", ""},
      {"llama.cpp", "llama.cpp", "llamacpp:", "llamacpp:requests_processing", "llamacpp:requests_deferred",
       {"llamacpp:kv_cache_usage_ratio"}, "", "", "", "", ""},
  };
  return k;
}

std::optional<double> named(const prom::Exposition& e, const char* name) {
  if (!name || !*name) return std::nullopt;
  return prom::sum(e, name);
}

std::optional<double> delta(const std::optional<double>& a, const std::optional<double>& b) {
  if (!a || !b || *b < *a) return std::nullopt;  // a counter that went back: the engine restarted
  return *b - *a;
}

// The mean in milliseconds of what a histogram observed between two snapshots.
std::optional<double> mean_ms(const std::optional<double>& sum0, const std::optional<double>& count0,
                              const std::optional<double>& sum1, const std::optional<double>& count1) {
  const auto n = delta(count0, count1), s = delta(sum0, sum1);
  if (!n || !s || *n <= 0) return std::nullopt;
  return *s / *n * 1000.0;
}

}  // namespace

std::optional<EngineSnapshot> read_engine(const prom::Exposition& e) {
  for (const auto& n : engines()) {
    const bool present = std::any_of(e.samples.begin(), e.samples.end(),
                                     [&](const prom::Sample& s) { return s.name.rfind(n.prefix, 0) == 0; });
    if (!present) continue;
    EngineSnapshot s;
    s.engine = n.engine;
    s.running = named(e, n.running);
    s.waiting = named(e, n.waiting);
    for (const char* k : n.kv_usage)
      if (!s.kv_usage_ratio) s.kv_usage_ratio = named(e, k);
    s.preemptions = named(e, n.preemptions);
    if (*n.queue_histogram) {
      s.queue_sum_s = prom::sum(e, std::string(n.queue_histogram) + "_sum");
      s.queue_count = prom::sum(e, std::string(n.queue_histogram) + "_count");
    }
    if (*n.ttft_histogram) {
      s.ttft_sum_s = prom::sum(e, std::string(n.ttft_histogram) + "_sum");
      s.ttft_count = prom::sum(e, std::string(n.ttft_histogram) + "_count");
    }
    s.prefix_queries = named(e, n.prefix_queries);
    s.prefix_hits = named(e, n.prefix_hits);
    s.spec_draft_tokens = named(e, n.spec_draft_tokens);
    s.spec_accepted_tokens = named(e, n.spec_accepted_tokens);
    return s;
  }
  return std::nullopt;
}

bool engine_preset(const std::string& preset) {
  return std::any_of(engines().begin(), engines().end(), [&](const EngineNames& n) { return preset == n.preset; });
}

std::string metrics_url_for(const std::string& base_url) {
  const auto scheme = base_url.find("://");
  const auto path = base_url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return (path == std::string::npos ? base_url : base_url.substr(0, path)) + "/metrics";
}

void EngineScraper::scrape(checks::HttpPort& http, const std::string& after) {
  if (!failure_.empty()) return;
  http::Request req;
  req.url = url_;
  // llama.cpp's server started with --api-key guards /metrics too; the key goes only where the API is.
  if (metrics_url_for(url_) == metrics_url_for(endpoint_.base_url)) endpoint_.add_headers(req.headers);
  req.resolve = endpoint_.resolve;
  req.tls = endpoint_.tls;
  req.proxy = endpoint_.proxy;
  req.timeout = std::chrono::milliseconds(5000);
  req.connect_timeout = std::chrono::milliseconds(3000);
  req.max_body_bytes = 8u << 20;
  const http::Response r = http.perform(req);
  if (!r.status.ok()) {
    failure_ = r.failed_phase + ": " + r.status.error().message;
  } else if (r.http_status != 200) {
    failure_ = "HTTP " + std::to_string(r.http_status);
  } else if (auto e = prom::parse_exposition(r.body); !e.ok()) {
    failure_ = e.error().message;
  } else if (auto s = read_engine(e.value()); !s) {
    failure_ = "no vLLM, SGLang, TGI or llama.cpp metric in it";
  } else {
    s->after = after;
    snapshots_.push_back(std::move(*s));
  }
}

std::map<std::string, double> engine_metrics(const std::vector<EngineSnapshot>& snaps) {
  std::map<std::string, double> m;
  if (snaps.empty()) return m;
  m[rm::engine_scrapes_count] = static_cast<double>(snaps.size());
  auto most = [&](std::optional<double> EngineSnapshot::*field, const char* name) {
    std::optional<double> best;
    for (const auto& s : snaps)
      if (s.*field) best = std::max(best.value_or(*(s.*field)), *(s.*field));
    if (best) m[name] = *best;
  };
  most(&EngineSnapshot::waiting, rm::engine_waiting_max_count);
  most(&EngineSnapshot::running, rm::engine_running_max_count);
  most(&EngineSnapshot::kv_usage_ratio, rm::engine_kv_cache_usage_max_ratio);
  const EngineSnapshot &first = snaps.front(), &last = snaps.back();
  if (auto d = delta(first.preemptions, last.preemptions)) m[rm::engine_preemptions_count] = *d;
  if (auto v = mean_ms(first.queue_sum_s, first.queue_count, last.queue_sum_s, last.queue_count))
    m[rm::engine_queue_time_mean_ms] = *v;
  if (auto v = mean_ms(first.ttft_sum_s, first.ttft_count, last.ttft_sum_s, last.ttft_count))
    m[rm::engine_ttft_mean_ms] = *v;
  if (auto q = delta(first.prefix_queries, last.prefix_queries), h = delta(first.prefix_hits, last.prefix_hits); q && h && *q > 0)
    m[rm::engine_prefix_cache_hit_ratio] = *h / *q;
  if (auto d = delta(first.spec_draft_tokens, last.spec_draft_tokens),
      a = delta(first.spec_accepted_tokens, last.spec_accepted_tokens);
      d && a && *d > 0) {
    m[rm::engine_spec_draft_tokens_count] = *d;
    m[rm::engine_spec_acceptance_ratio] = *a / *d;
  }
  // The check that sends parallel streams level by level alone: from the scrape before it to the
  // scrape after it.
  for (std::size_t i = 1; i < snaps.size(); ++i) {
    if (!checks::sends_stream_levels(snaps[i].after)) continue;
    const EngineSnapshot &a = snaps[i - 1], &b = snaps[i];
    if (auto n = delta(a.queue_count, b.queue_count)) m[rm::engine_concurrency_requests_count] = *n;
    if (auto v = mean_ms(a.queue_sum_s, a.queue_count, b.queue_sum_s, b.queue_count))
      m[rm::engine_concurrency_queue_time_mean_ms] = *v;
  }
  return m;
}

}  // namespace infdoctor::run
