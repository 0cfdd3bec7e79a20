#pragma once
// An inference engine's own Prometheus metrics (vLLM, SGLang, TGI, llama.cpp), scraped from its
// /metrics before the first check and after each: what the engine says it ran, queued and cached
// while infdoctor measured it. The engine is known by its metric names. A scrape that fails or
// does not parse is said once, and the run goes on with what it had.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/ports.h"
#include "prom/exposition.h"

namespace infdoctor::run {

// One scrape, read in the engine's own names.
struct EngineSnapshot {
  std::string engine;  // vLLM, SGLang, TGI, llama.cpp
  std::string after;   // the check it followed ("" before the first)
  std::optional<double> running, waiting, kv_usage_ratio, preemptions;
  // Histograms' _sum (seconds) and _count, counters of prompt tokens looked up and found cached.
  std::optional<double> queue_sum_s, queue_count, ttft_sum_s, ttft_count, prefix_queries, prefix_hits;
  // Speculative decoding's counters: draft tokens proposed, and of them accepted (vLLM).
  std::optional<double> spec_draft_tokens, spec_accepted_tokens;
};

// Nothing when no engine this knows names its metrics there.
std::optional<EngineSnapshot> read_engine(const prom::Exposition& e);

// Whether a --preset is an engine's own server, whose /metrics this reads (vllm, sglang, tgi,
// llama.cpp): a hosted API's /metrics is not the engine's.
bool engine_preset(const std::string& preset);

// The URL of an engine's /metrics beside its API: the base URL's scheme, host and port.
std::string metrics_url_for(const std::string& base_url);

class EngineScraper {
 public:
  EngineScraper(std::string url, const api::Endpoint& endpoint) : url_(std::move(url)), endpoint_(endpoint) {}
  const std::string& url() const { return url_; }
  // Reads /metrics once; `after` names the check just run. Stops after the first failure. The
  // endpoint's key and headers go with it only when /metrics is on the API's own origin.
  void scrape(checks::HttpPort& http, const std::string& after);
  const std::vector<EngineSnapshot>& snapshots() const { return snapshots_; }
  const std::string& failure() const { return failure_; }

 private:
  std::string url_;
  const api::Endpoint& endpoint_;
  std::vector<EngineSnapshot> snapshots_;
  std::string failure_;
};

// run.engine_* from the snapshots: the most waiting and running at any scrape, the largest KV
// cache use, and over the run (and over the concurrency check alone) the counters' growth: the
// engine's mean queue time and time to first token, preemptions, the prefix cache's hit ratio.
std::map<std::string, double> engine_metrics(const std::vector<EngineSnapshot>& snapshots);


}  // namespace infdoctor::run
