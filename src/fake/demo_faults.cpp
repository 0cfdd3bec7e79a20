#include "fake/demo_faults.h"

#include <algorithm>
#include <cstdio>

namespace infdoctor::fake {
namespace {

// A healthy pair of models; each fault changes what it needs. Magnitudes differ from fault to
// fault and from the rules' thresholds: the diagnosis must follow the physics. Where two causes
// are planted, the expected order is what each adds to the default reference request (1,024
// prompt tokens, 128 output tokens, the concurrency check's highest level: run/workload.h).
std::string scenario(const std::string& target_extra, const std::string& small_extra = "") {
  std::string s = std::string(R"({"models": {")") + kDemoModel + R"(": {"overhead_ms": 60, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 8, "jitter_ms": 2)";
  if (!target_extra.empty()) s += ", " + target_extra;
  s += std::string(R"(}, ")") + kDemoSmallModel + R"(": {"overhead_ms": 30, "prefill_ms_per_token": 0.01, "decode_ms_per_token": 3)";
  if (!small_extra.empty()) s += ", " + small_extra;
  return s + "}}, \"seed\": 11}";
}

}  // namespace

const std::vector<DemoFault>& demo_faults() {
  static const std::vector<DemoFault> kFaults = {
      // Decode beyond 33 ms a token: 27 ms x 127 tokens = 3.4 s on every request; the cold start
      // 1.5 s on the requests after an idle gap.
      {"realistic", {"decode_bound", "cold_start"},
       "the target model decodes at 60 ms per token against 8 for the small one, and goes cold after 2 s idle",
       scenario(R"("overhead_ms": 120, "decode_ms_per_token": 60, "cold_start": {"idle_s": 2, "penalty_ms": 1500})",
                R"("decode_ms_per_token": 8)"),
       ""},
      {"healthy", {}, "fast models, no fault", scenario(""), ""},
      {"cold_start", {"cold_start"}, "the target model goes cold after 2 s idle and pays 2.5 s",
       scenario(R"("cold_start": {"idle_s": 2, "penalty_ms": 2500})"), ""},
      {"prefill_bound", {"prefill_bound"}, "1.2 ms per prompt token: long prompts dominate",
       scenario(R"("prefill_ms_per_token": 1.2)"), ""},
      {"decode_bound", {"decode_bound"}, "both models generate slowly: 70 and 35 ms per token",
       scenario(R"("decode_ms_per_token": 70)", R"("decode_ms_per_token": 35)"), ""},
      {"model_specific", {"model_specific"}, "900 ms before the target model's first token, 30 before the small one's",
       scenario(R"("overhead_ms": 900)"), ""},
      {"provider_wide", {"provider_wide"}, "900 ms before any model starts, for both models",
       scenario(R"("overhead_ms": 900)", R"("overhead_ms": 880)"), ""},
      {"queueing", {"queueing"}, "one request at a time: the rest wait in line",
       scenario(R"("overhead_ms": 150, "slots": 1)"), ""},
      {"serialization", {"serialization"}, "1.5 ms per KB of request body before anything else",
       scenario(R"("parse_ms_per_kb": 1.5)"), ""},
      {"rate_limited", {"rate_limited"}, "every 4th request is answered 429 with Retry-After: 1.5",
       scenario(R"("faults": [{"kind": "429", "every": 4, "retry_after_s": 1.5}])"), ""},
      // One burst the run's 20-odd requests can tell from chance: two short ones in the same
      // requests leave each model's slow requests in as many runs as a random order would.
      {"noisy_neighbour", {"noisy_neighbour"}, "for 6 s of every 16 both models run 4 times slower",
       scenario(R"("slow_every_s": 16, "slow_for_s": 6, "slow_factor": 4)", R"("slow_every_s": 16, "slow_for_s": 6, "slow_factor": 4)"),
       ""},
      {"buffering", {"buffering"}, "a proxy in front of both models holds the stream and releases it every 300 ms",
       scenario(R"("flush_interval_ms": 300)", R"("flush_interval_ms": 300)"), ""},
      {"tls_slow", {"tls_slow"}, "the TLS terminator waits 600 ms before it answers the ClientHello",
       "{\"tls_handshake_delay_ms\": 600, " + scenario("").substr(1), "", true},
      {"dns_slow", {"dns_slow"}, "the resolver answers after 400 ms", scenario(""), "", false, 400},
      {"network_rtt", {"network_rtt"}, "a far endpoint: 70 ms each way on the last link of a namespace lab (root)",
       scenario(""), "", false, -1, 70},
      {"cold_start+queueing", {"cold_start", "queueing"}, "goes cold after 2 s (4 s penalty) and serves one request at a time",
       scenario(R"("overhead_ms": 100, "slots": 1, "cold_start": {"idle_s": 2, "penalty_ms": 4000})"), ""},
      // Prefill beyond 1.5 % of a decode token: 0.88 ms x 1,024 = 0.9 s; one slot at 8 streams
      // of about 0.45 s each: a mean wait of 3.5 requests, about 1.6 s.
      {"prefill+queueing", {"queueing", "prefill_bound"}, "1 ms per prompt token and one request at a time",
       scenario(R"("overhead_ms": 300, "prefill_ms_per_token": 1.0, "slots": 1)"), ""},
      // Decode beyond 33 ms a token: 37 ms x 127 = 4.7 s on every request; the 429s 2.5 s on one in five.
      {"rate_limited+decode", {"decode_bound", "rate_limited"}, "every 5th request 429 (Retry-After: 2.5), slow decode",
       scenario(R"("decode_ms_per_token": 70, "faults": [{"kind": "429", "every": 5, "retry_after_s": 2.5}])",
                R"("decode_ms_per_token": 35)"),
       ""},
      {"model_specific+cold_start", {"cold_start", "model_specific"},
       "700 ms before the target model's first token, and it goes cold after 2 s (5 s penalty)",
       scenario(R"("overhead_ms": 700, "cold_start": {"idle_s": 2, "penalty_ms": 5000})"), ""},
  };
  return kFaults;
}

const DemoFault* find_demo_fault(const std::string& name) {
  for (const auto& f : demo_faults())
    if (f.name == name) return &f;
  return nullptr;
}

std::string causes_text(const std::vector<std::string>& causes) {
  std::string out;
  for (const auto& e : causes) out += (out.empty() ? "" : ", then ") + e;
  return out.empty() ? "no finding above info" : out;
}

std::string expected_text(const DemoFault& f) { return causes_text(f.expect); }

bool diagnosis_matches(const DemoFault& f, const std::vector<std::string>& causes) {
  if (f.expect.empty()) return causes.empty();
  if (causes.empty() || causes[0] != f.expect[0]) return false;
  for (std::size_t k = 1; k < f.expect.size(); ++k)
    if (std::find(causes.begin() + 1, causes.end(), f.expect[k]) == causes.end()) return false;
  return true;
}

std::string demo_fault_table() {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-36s %s\n", "fault", "expected diagnosis", "what is planted");
  out += line;
  for (const auto& f : demo_faults()) {
    std::snprintf(line, sizeof line, "%-28s %-36s %s", f.name.c_str(), expected_text(f).c_str(), f.description.c_str());
    out += line;
    out += (f.unavailable.empty() ? "" : " (not in the demo yet: " + f.unavailable + ")") + "\n";
  }
  return out;
}

}  // namespace infdoctor::fake
