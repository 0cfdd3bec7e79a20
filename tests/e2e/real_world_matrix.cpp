// The real-world matrix: the whole default checklist of the real binary against the fake provider
// playing a realistic healthy engine, first alone (it must give nothing above info) and then with
// each cause planted on it at magnitudes drawn at random from stated ranges. The background is
// drawn per row as deployments are met, not as the rules were written:
//   - a model pair named as providers serve them (sizes in the names, mixtures of experts, names
//     without sizes), per-token speeds drawn within what their sizes allow;
//   - a round trip of 10-80 ms on the namespace lab's wire (TCP slow start, delayed ACKs, real
//     retransmissions), a share of rows with 0.1-0.5 % loss;
//   - engine traits: 1-4 tokens an event, answers that stop early;
//   - 10 % jitter and a 2 % heavy tail, prefix caching, continuous batching, decode slowing a
//     little with the context, no server-timing headers.
// Every draw is seeded: a row names its seed, its models and what it drew, so it reproduces.
//
//   real_world_matrix [--seeds N] [--draws N] [--causes a,b,...] [--jobs N] [--traits a,b] [--against BIN]
//                     [--run-args "ARGS"] [--list]
//
// --run-args gives every run more arguments (split at spaces), after the row's own: e.g.
// --run-args "--checks +load" runs the load ramp too.
//
// --against BIN runs each row on another infdoctor first (a build of an earlier commit), then on
// this one, and prints per row the seconds each took to its diagnosis and whether the diagnosis
// stayed (the same first cause, its impact within 15 %), with the medians; the table goes to
// build/tests/artifacts/real_world_against.txt.
//
// --traits puts traits of production servers and gateways under every row, besides the cause:
// `no_usage` (no usage in the stream however asked, two tokens an event, ': keep-alive' comment
// lines every 300 ms from the headers on, a role-only first event, timing headers as OpenAI sends
// them) and `proxy` (every request through squid, given in $https_proxy; on the lab the client's
// own route to the server closed, so only the proxy's tunnels reach it).
//
// --seeds: healthy backgrounds (default 5); --draws: draws per cause (default 3); --causes: only
// these rows ("healthy" is the background alone). Without root the lab is missing: the round trip
// is loopback's and the rows that need the lab are skipped, said so in the table. Prints one row
// per run and "N passed, N failed"; writes the table to build/tests/artifacts/real_world_matrix.txt
// and each run's results.json to build/tests/artifacts/real_world/CAUSE-SEED.json; exits non-zero
// on a failure.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "fake/demo_env.h"
#include "fake/demo_faults.h"
#include "fake/lab.h"
#include "net/subprocess.h"

namespace {

// The binaries it drives: this build's, or INFDOCTOR_TEST_BIN's and INFDOCTOR_TEST_FAKE_BIN's (a
// copy of a build, so that the build tree can change while a long matrix runs).
std::string driven(const char* variable, const char* built) {
  const char* other = std::getenv(variable);
  return other && *other ? other : built;
}

using namespace infdoctor;
using nlohmann::json;

double uniform(std::mt19937_64& rng, double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// Model pairs as providers serve them: the target, the small model, and the range of the target's
// time per token over the small one's that their sizes allow (memory-bound decode reads every
// active weight once a token; a larger model is often spread over more GPUs, so less than its size).
struct ModelPair {
  const char* target;
  const char* small;
  double tpot_ratio_lo, tpot_ratio_hi;
};
const ModelPair kPairs[] = {
    {"Llama-3.1-70B-Instruct", "Llama-3.1-8B-Instruct", 3, 6},
    {"Qwen2.5-72B-Instruct", "Qwen2.5-7B-Instruct", 3, 7},
    {"Llama-3.1-405B-Instruct", "Llama-3.1-8B-Instruct", 4, 9},
    {"Mixtral-8x7B-Instruct-v0.1", "Mistral-7B-Instruct-v0.3", 1.3, 2.2},  // 13B active
    {"DeepSeek-V3", "Qwen2.5-7B-Instruct", 2, 4},                            // 37B active
    {"gpt-oss-120b", "gpt-oss-20b", 1.2, 2},                                  // 5.1B and 3.6B active
    {"gpt-4o", "gpt-4o-mini", 2, 4},
    {"claude-sonnet-4-5", "claude-haiku-4-5", 1.5, 3},
};

// The healthy background, drawn from `rng`. `target` and `small` are the two models' specs, edited
// by a cause before the scenario is written.
struct Background {
  std::string target_name, small_name;
  json target, small;
  double rtt_ms = 0;  // on the lab; 0 = loopback
  double loss = 0;    // on the lab's wire, each direction
  std::string summary;
};

Background healthy(std::mt19937_64& rng, bool lab) {
  Background b;
  const ModelPair& pair = kPairs[std::uniform_int_distribution<std::size_t>(0, std::size(kPairs) - 1)(rng)];
  b.target_name = pair.target;
  b.small_name = pair.small;
  // A healthy interactive target decodes at 30-80 tokens a second; the small model as much faster
  // as the pair's sizes allow, never under 2 ms a token.
  const double target_decode = uniform(rng, 12.5, 33);
  const double ratio = uniform(rng, pair.tpot_ratio_lo, pair.tpot_ratio_hi);
  const double small_decode = std::max(2.0, target_decode / ratio);
  const double overhead = uniform(rng, 60, 120);
  const int per_event = std::uniform_int_distribution<int>(1, 4)(rng);
  const bool stops_early = uniform(rng, 0, 1) < 0.3;
  const auto engine = [&](double decode, double over, double prefill) {
    json e = {{"overhead_ms", over},
              {"prefill_ms_per_token", prefill},
              {"decode_ms_per_token", decode},
              {"decode_ms_per_1k_context", 0.02 * decode},
              {"jitter_ms", 0.1 * over},
              {"tail_fraction", 0.02},
              {"tail_factor", uniform(rng, 2.5, 4)},
              {"prefix_cache_block_tokens", 16},
              {"slots", 64},
              {"batch_decode_penalty", uniform(rng, 0.02, 0.06)},
              {"tokens_per_event", per_event}};
    if (stops_early) e["output_tokens"] = std::uniform_int_distribution<int>(40, 120)(rng);
    return e;
  };
  b.target = engine(target_decode, overhead, uniform(rng, 0.05, 0.1));
  b.small = engine(small_decode, 0.6 * overhead, uniform(rng, 0.01, 0.03));
  if (lab) {
    b.rtt_ms = uniform(rng, 10, 80);
    if (uniform(rng, 0, 1) < 0.3) b.loss = uniform(rng, 0.001, 0.005);
  }
  char buf[400];
  std::snprintf(buf, sizeof buf, "%s / %s, rtt %.0f ms%s, decode %.1f/%.1f ms, overhead %.0f ms, %d token%s an event%s",
                pair.target, pair.small, b.rtt_ms, b.loss > 0 ? fmt(", loss %.2f %%", 100 * b.loss).c_str() : "",
                b.target["decode_ms_per_token"].get<double>(), small_decode, overhead, per_event, per_event == 1 ? "" : "s",
                stops_early ? ", answers stop early" : "");
  b.summary = buf;
  return b;
}

// One cause: what it plants on the background (from its own draw) and what must be found first.
struct Planted {
  std::string description;
  fake::DemoFault fault;           // scenario filled in by the caller; tls, dns, lab delay here
  std::vector<std::string> extra;  // arguments for `infdoctor run`
};
struct Cause {
  std::string name;
  std::string expect;  // the cause that must rank first; "" = nothing above info
  bool needs_lab = false;
  std::function<Planted(std::mt19937_64&, Background&)> plant;
};

const std::vector<Cause>& causes() {
  static const std::vector<Cause> k = {
      {"healthy", "", false, [](std::mt19937_64&, Background&) { return Planted{"the background alone", {}, {}}; }},
      {"cold_start", "cold_start", false,
       [](std::mt19937_64& rng, Background& b) {
         const double idle = uniform(rng, 1, 8), penalty = uniform(rng, 1500, 8000);
         b.target["cold_start"] = {{"idle_s", idle}, {"penalty_ms", penalty}};
         return Planted{"cold after " + fmt("%.1f", idle) + " s idle, " + fmt("%.0f", penalty) + " ms", {}, {}};
       }},
      {"scale_to_zero", "cold_start", false,
       [](std::mt19937_64& rng, Background& b) {
         const double penalty = uniform(rng, 8000, 30000);
         b.target["cold_start"] = {{"idle_s", 60}, {"penalty_ms", penalty}};
         return Planted{"scales to zero after 60 s idle, " + fmt("%.0f", penalty) + " ms to come back", {},
                        {"--idle-gaps", "0,5,20,70"}};
       }},
      {"model_loading", "cold_start", false,
       [](std::mt19937_64& rng, Background& b) {
         const double s = uniform(rng, 2, 20);
         b.target["cold_start"] = {{"at_start", true}, {"loading_s", s}};
         return Planted{"503 \"loading\" for " + fmt("%.1f", s) + " s from the run's first request", {}, {}};
       }},
      {"prefill_bound", "prefill_bound", false,
       [](std::mt19937_64& rng, Background& b) {
         const double v = uniform(rng, 0.6, 2.0);
         b.target["prefill_ms_per_token"] = v;
         return Planted{fmt("%.2f", v) + " ms per prompt token", {}, {}};
       }},
      {"decode_bound", "decode_bound", false,
       [](std::mt19937_64& rng, Background& b) {
         const double t = uniform(rng, 45, 90), s = uniform(rng, 35, 60);
         b.target["decode_ms_per_token"] = t;
         b.small["decode_ms_per_token"] = s;
         return Planted{"both models slow: " + fmt("%.0f", t) + " and " + fmt("%.0f", s) + " ms per token", {}, {}};
       }},
      {"decode_target", "decode_bound", false,
       [](std::mt19937_64& rng, Background& b) {
         const double t = uniform(rng, 45, 100);  // under 22 tokens a second; the small model keeps its speed
         b.target["decode_ms_per_token"] = t;
         return Planted{"the target alone decodes at " + fmt("%.0f", t) + " ms per token", {}, {}};
       }},
      {"decode_context", "decode_bound", false,
       [](std::mt19937_64& rng, Background& b) {
         const double share = uniform(rng, 0.1, 0.3);
         const double v = share * b.target["decode_ms_per_token"].get<double>();
         b.target["decode_ms_per_1k_context"] = v;
         return Planted{"decode slows by " + fmt("%.0f", share * 100) + " % (" + fmt("%.1f", v) +
                            " ms) a token per 1,000 tokens of context",
                        {}, {}};
       }},
      {"model_specific", "model_specific", false,
       [](std::mt19937_64& rng, Background& b) {
         const double extra = uniform(rng, 400, 1500);
         b.target["overhead_ms"] = b.target["overhead_ms"].get<double>() + extra;
         return Planted{fmt("%.0f", extra) + " ms before the target's first token only", {}, {}};
       }},
      {"provider_wide", "provider_wide", false,
       [](std::mt19937_64& rng, Background& b) {
         const double extra = uniform(rng, 500, 1500);
         for (json* m : {&b.target, &b.small}) (*m)["overhead_ms"] = (*m)["overhead_ms"].get<double>() + extra;
         return Planted{fmt("%.0f", extra) + " ms before either model's first token", {}, {}};
       }},
      {"queueing", "queueing", false,
       [](std::mt19937_64& rng, Background& b) {
         const int k = std::uniform_int_distribution<int>(2, 4)(rng);
         b.target["slots"] = k;
         return Planted{std::to_string(k) + " sequences per replica", {}, {}};
       }},
      {"serialization", "serialization", false,
       [](std::mt19937_64& rng, Background& b) {
         const double v = uniform(rng, 0.3, 2.0);
         for (json* m : {&b.target, &b.small}) (*m)["parse_ms_per_kb"] = v;
         return Planted{fmt("%.2f", v) + " ms per KB of request body", {}, {}};
       }},
      {"rate_limited", "rate_limited", false,
       [](std::mt19937_64& rng, Background& b) {
         const double size = std::round(uniform(rng, 3, 6)), per_s = uniform(rng, 1, 3);
         b.target["bucket_size"] = size;
         b.target["bucket_per_s"] = per_s;
         return Planted{"a bucket of " + fmt("%.0f", size) + " requests refilled at " + fmt("%.1f", per_s) + "/s",
                        {}, {}};
       }},
      {"overloaded", "overloaded", false,
       [](std::mt19937_64& rng, Background& b) {
         const int every = std::uniform_int_distribution<int>(3, 8)(rng);
         const bool anthropic = uniform(rng, 0, 1) < 0.5;
         b.target["faults"] = json::array({{{"kind", anthropic ? "529" : "503"}, {"every", every}}});
         return Planted{"one request of the target's in " + std::to_string(every) + " refused with " +
                            (anthropic ? "529 overloaded_error" : "503 overloaded"),
                        {}, {}};
       }},
      {"token_quota", "rate_limited", false,
       [](std::mt19937_64& rng, Background& b) {
         const double tpm = uniform(rng, 10000, 16000);  // under two of the sweep's 8,192-token prompts
         b.target["tokens_per_min"] = tpm;
         return Planted{"a quota of " + fmt("%.0f", tpm) + " tokens a minute (TPM)", {}, {}};
       }},
      {"long_context", "prefill_bound", false,
       [](std::mt19937_64& rng, Background& b) {
         const double growth = uniform(rng, 0.02, 0.06);
         b.target["prefill_growth_ms_per_1k_tokens"] = growth;
         return Planted{"prefill grows " + fmt("%.3f", growth) + " ms a token per 1,000 tokens; workload prompt 12,000", {},
                        {"--workload", "prompt=12000"}};
       }},
      {"noisy_neighbour", "noisy_neighbour", false,
       [](std::mt19937_64& rng, Background& b) {
         // Bursts as other tenants' jobs make them, ten seconds and more, recurring within the run's
         // measured minute: each holds two or more of a model's requests, slow ones included (up to
         // 16 s each here). Shorter ones make runs of one slow request, as chance does, and read as a
         // slow replica (rules/README.md, replica.slow_replica).
         const double every = uniform(rng, 20, 45), duty = uniform(rng, 0.45, 0.6), factor = uniform(rng, 2.5, 5);
         for (json* m : {&b.target, &b.small}) {
           (*m)["slow_every_s"] = every;
           (*m)["slow_for_s"] = duty * every;
           (*m)["slow_factor"] = factor;
         }
         return Planted{fmt("%.1f", factor) + "x slower for " + fmt("%.1f", duty * every) + " s of every " +
                            fmt("%.1f", every) + " s",
                        {}, {}};
       }},
      {"slow_replica", "slow_replica", false,
       [](std::mt19937_64& rng, Background& b) {
         const int k = std::uniform_int_distribution<int>(2, 5)(rng);
         const double factor = uniform(rng, 2.5, 4);
         const bool named = uniform(rng, 0, 1) < 0.5;
         for (json* m : {&b.target, &b.small}) {
           (*m)["replicas"] = {{"count", k}, {"slow_factor", factor}};
           if (named) (*m)["replicas"]["header"] = "x-served-by";
         }
         return Planted{"one replica of " + std::to_string(k) + " " + fmt("%.1f", factor) + "x slower" +
                            (named ? ", named in x-served-by" : ""),
                        {}, {}};
       }},
      {"buffering", "buffering", false,
       [](std::mt19937_64& rng, Background& b) {
         const double v = uniform(rng, 200, 600);
         for (json* m : {&b.target, &b.small}) (*m)["flush_interval_ms"] = v;
         return Planted{"a proxy releases the stream every " + fmt("%.0f", v) + " ms", {}, {}};
       }},
      {"tls_slow", "tls_slow", false,
       [](std::mt19937_64& rng, Background&) {
         const double v = uniform(rng, 400, 1200);
         Planted p{"the TLS terminator waits " + fmt("%.0f", v) + " ms", {}, {}};
         p.fault.tls = true;
         p.fault.scenario = std::to_string(v);  // read back by the caller: the scenario's top-level key
         return p;
       }},
      {"dns_slow", "dns_slow", false,
       [](std::mt19937_64& rng, Background&) {
         const double v = uniform(rng, 200, 800);
         Planted p{"the resolver answers after " + fmt("%.0f", v) + " ms", {}, {}};
         p.fault.dns_delay_ms = v;
         return p;
       }},
      {"network_rtt", "network_rtt", true,
       [](std::mt19937_64& rng, Background& b) {
         b.rtt_ms = uniform(rng, 150, 300);
         return Planted{"a far region: " + fmt("%.0f", b.rtt_ms) + " ms round trip", {}, {}};
       }},
      {"lossy_path", "network_loss", true,
       [](std::mt19937_64& rng, Background& b) {
         if (b.rtt_ms <= 0) b.rtt_ms = uniform(rng, 10, 80);
         b.loss = uniform(rng, 0.01, 0.03);
         return Planted{fmt("%.1f", b.loss * 100) + " % loss each way over a " + fmt("%.0f", b.rtt_ms) + " ms round trip",
                        {}, {}};
       }},
      // Traits of production servers and gateways that are no fault: each must stay healthy.
      {"no_usage", "", false,
       [](std::mt19937_64& rng, Background& b) {
         const double every = uniform(rng, 150, 600);
         for (json* m : {&b.target, &b.small}) {
           (*m)["stream_usage"] = false;
           (*m)["comment_every_ms"] = every;
           (*m)["role_chunk"] = true;
         }
         return Planted{"no usage in the stream, ': keep-alive' every " + fmt("%.0f", every) + " ms, a role-only first event", {}, {}};
       }},
      {"proxy_env", "", true,
       [](std::mt19937_64&, Background&) {
         Planted p{"squid on the router in $https_proxy, the client's direct route closed", {}, {}};
         p.fault.via_proxy = true;
         p.fault.lab_direct_closed = true;
         return p;
       }},
      {"tunnel_per_request", "", true,
       [](std::mt19937_64&, Background& b) {
         for (json* m : {&b.target, &b.small}) (*m)["close_connections"] = true;
         Planted p{"squid in $https_proxy, direct route closed; the server closes every connection: a tunnel a request", {}, {}};
         p.fault.via_proxy = true;
         p.fault.lab_direct_closed = true;
         return p;
       }},
      {"slow_tunnel", "network_rtt", true,
       [](std::mt19937_64& rng, Background& b) {
         const double hold = uniform(rng, 250, 600);
         for (json* m : {&b.target, &b.small}) (*m)["close_connections"] = true;
         Planted p{"the proxy takes " + fmt("%.0f", hold) + " ms to open each tunnel, a tunnel a request", {}, {}};
         p.fault.via_proxy = true;
         p.fault.lab_direct_closed = true;
         p.fault.proxy_tunnel_delay_ms = hold;
         return p;
       }},
  };
  return k;
}

struct Row {
  std::string cause, draw, planted, background, expected, got, top_ms, explained, note;
  bool pass = false, skipped = false;
  std::string first;        // the first cause above info, "" when none
  double top = 0;           // its impact, ms
  double seconds = 0;       // the run's own wall time, start to its diagnosis
};

struct Traits {
  bool no_usage = false, proxy = false;
};

// `binary`: the infdoctor that runs the row; `tag`: added to the kept results' name.
Row run_one(const Cause& c, std::uint64_t seed, bool lab, const Traits& traits, const std::vector<std::string>& run_args,
            const std::string& binary, const std::string& tag = "") {
  Row row;
  row.cause = c.name;
  row.draw = std::to_string(seed);
  row.expected = c.expect.empty() ? "(healthy)" : c.expect;
  if (c.needs_lab && !lab) {
    row.skipped = true;
    row.note = "skipped: " + fake::Lab::unavailable_reason().value_or("no lab");
    return row;
  }
  // Behind a proxy the client neither resolves the API host nor holds the connections the server's
  // path loses segments on: those causes are the proxy's to see, not the run's.
  if (traits.proxy && (c.name == "dns_slow" || c.name == "lossy_path")) {
    row.skipped = true;
    row.note = "not through a proxy: the proxy resolves the API host and holds the connections to it";
    return row;
  }
  std::mt19937_64 rng(seed);
  Background b = healthy(rng, lab);
  if (traits.no_usage)
    for (json* m : {&b.target, &b.small}) {
      (*m)["stream_usage"] = false;
      (*m)["tokens_per_event"] = 2;
      (*m)["comment_every_ms"] = 300;
      (*m)["role_chunk"] = true;
      (*m)["timing_headers"] = true;
    }
  Planted p = c.plant(rng, b);
  if (traits.proxy) {
    p.fault.via_proxy = true;
    p.fault.lab_direct_closed = true;
  }
  row.planted = p.description;
  row.background = b.summary;
  json scenario = {{"models", {{b.target_name, b.target}, {b.small_name, b.small}}}, {"seed", seed}};
  fake::DemoFault f = p.fault;
  if (f.tls && !f.scenario.empty()) scenario["tls_handshake_delay_ms"] = std::stod(f.scenario);
  f.name = c.name;
  f.scenario = scenario.dump();
  // Through a proxy the requests go in tunnels: HTTPS, on the lab (by the server's address) or on
  // loopback alike.
  if (f.via_proxy) f.tls = true;
  // The lab serves plain HTTP by IP: a TLS terminator or a slow resolver is planted on loopback.
  if ((f.tls && !f.via_proxy) || f.dns_delay_ms >= 0) {
    b.rtt_ms = 0;
    row.background += " (on loopback)";
  }
  if (b.rtt_ms > 0) {
    f.lab_delay_ms = b.rtt_ms / 2;
    f.lab_loss_ratio = b.loss;
  }
  auto env = fake::DemoEnvironment::start(f, driven("INFDOCTOR_TEST_FAKE_BIN", INFDOCTOR_FAKE_BIN));
  if (!env.ok()) {
    row.got = "could not start: " + env.error().message;
    return row;
  }
  // The proxy is given as users are given it, in the environment; the machine's own is left out.
  std::vector<std::string> argv = {"/usr/bin/env", "-u", "no_proxy", "-u", "NO_PROXY", "-u", "https_proxy", "-u",
                                   "HTTPS_PROXY", "-u", "http_proxy", "-u", "all_proxy", "-u", "ALL_PROXY"};
  if (!(*env)->proxy_url().empty()) argv.push_back("https_proxy=" + (*env)->proxy_url());
  argv.insert(argv.end(), {binary, "run", "--base-url", (*env)->base_url(), "--model", b.target_name,
                                   "--small-model", b.small_name, "--api-key-env", "INFDOCTOR_MATRIX_NO_KEY",
                                   "--json", "-", "-s"});
  if (!(*env)->cacert().empty()) argv.insert(argv.end(), {"--cacert", (*env)->cacert()});
  if (!(*env)->resolver().empty()) argv.insert(argv.end(), {"--resolver", (*env)->resolver(), "--no-system-resolvers"});
  argv.insert(argv.end(), p.extra.begin(), p.extra.end());
  argv.insert(argv.end(), run_args.begin(), run_args.end());
  std::string out;
  int exit_code = -1;
  const auto started = std::chrono::steady_clock::now();
  (*env)->run_client([&] {
    auto r = net::run_command(argv, std::chrono::seconds(900));
    if (r.ok() && !r->timed_out) {
      out = r->out;
      exit_code = r->exit_code;
    }
    return 0;
  });
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto j = json::parse(out, nullptr, false);
  const auto kept = std::filesystem::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts" / "real_world";
  std::filesystem::create_directories(kept);
  std::ofstream(kept / (c.name + "-" + row.draw + tag + ".json")) << out;  // results.json of the row, to look into
  if (j.is_discarded() || !j.contains("diagnosis")) {
    row.got = "no results (exit " + std::to_string(exit_code) + ")";
    return row;
  }
  std::vector<std::string> found;
  double top = 0;
  for (const auto& d : j["diagnosis"]) {
    if (d["severity"] == "info") continue;
    if (found.empty()) top = d["impact_ms"].get<double>();
    std::string label = d["cause"].is_string() ? d["cause"].get<std::string>() : d["rule"].get<std::string>();
    if (d.contains("scope") && d["scope"].is_string()) label += "@" + d["scope"].get<std::string>();
    found.push_back(label);
  }
  for (const auto& x : found) row.got += (row.got.empty() ? "" : ">") + x;
  if (row.got.empty()) row.got = "(healthy)";
  row.top_ms = found.empty() ? "-" : fmt("%.0f", top);
  const auto& metrics = j["run"]["metrics"];
  const double explained = metrics.contains("explained_ratio") ? metrics["explained_ratio"].get<double>() : 0.0;
  row.explained = metrics.contains("explained_ratio") ? fmt("%.0f %%", 100 * explained) : "-";
  const std::string first = found.empty() ? "" : found[0].substr(0, found[0].find('@'));
  row.first = first;
  row.top = top;
  // A healthy row is clean, and its measured terms explain at least 90 % of its requests' time.
  row.pass = c.expect.empty() ? found.empty() && explained >= 0.9 : first == c.expect;
  return row;
}

// --against: each row's seconds to its diagnosis on the other binary and on this one, and whether
// the diagnosis stayed: the same first cause, its impact within 15 %. Exits non-zero when one
// did not.
int print_against(const std::vector<Row>& after, const std::vector<Row>& before, const std::string& other) {
  std::ostringstream table;
  char line[512];
  std::snprintf(line, sizeof line, "%-18s %-6s %8s %8s  %-22s %-22s %9s  %s\n", "cause", "seed", "before s", "after s",
                "first before", "first after", "top ratio", "same");
  table << line;
  std::vector<double> b_s, a_s;
  int same = 0, changed = 0;
  for (std::size_t i = 0; i < after.size(); ++i) {
    const Row &a = after[i], &b = before[i];
    if (a.skipped) continue;
    const double ratio = b.top > 0 ? a.top / b.top : (a.top > 0 ? 0 : 1);
    const bool kept = a.first == b.first && (a.first.empty() || (ratio >= 0.85 && ratio <= 1.15));
    (kept ? same : changed)++;
    b_s.push_back(b.seconds);
    a_s.push_back(a.seconds);
    std::snprintf(line, sizeof line, "%-18s %-6s %8.0f %8.0f  %-22s %-22s %9s  %s\n", a.cause.c_str(), a.draw.c_str(), b.seconds,
                  a.seconds, b.first.empty() ? "(healthy)" : b.first.c_str(), a.first.empty() ? "(healthy)" : a.first.c_str(),
                  a.first.empty() ? "-" : fmt("%.2f", ratio).c_str(), kept ? "yes" : "NO");
    table << line;
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  auto most = [](const std::vector<double>& v) { return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()); };
  table << "before (" << other << "): median " << fmt("%.0f", median(b_s)) << " s, max " << fmt("%.0f", most(b_s))
        << " s; after: median " << fmt("%.0f", median(a_s)) << " s, max " << fmt("%.0f", most(a_s)) << " s; " << same
        << " rows kept their diagnosis, " << changed << " changed\n";
  std::fputs(table.str().c_str(), stdout);
  const auto dir = std::filesystem::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "real_world_against.txt") << table.str();
  return changed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int seeds = 5, draws = 3, jobs = 2;
  std::string against;  // another infdoctor: each row runs on it first, then on this one
  Traits traits;
  std::vector<std::string> run_args;  // given to every run, after the row's own
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "real_world_matrix: %s needs a value\n", a.c_str());
        std::exit(64);
      }
      return argv[++i];
    };
    if (a == "--seeds") seeds = std::atoi(value().c_str());
    else if (a == "--draws") draws = std::atoi(value().c_str());
    else if (a == "--jobs") jobs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--against") against = value();
    else if (a == "--run-args") for (const auto& r : core::split(value(), ' ')) run_args.push_back(r);
    else if (a == "--causes") for (const auto& c : core::split(value())) only.insert(c);
    else if (a == "--traits") {
      for (const auto& t : core::split(value())) {
        if (t == "no_usage") traits.no_usage = true;
        else if (t == "proxy") traits.proxy = true;
        else {
          std::fprintf(stderr, "real_world_matrix: unknown trait %s (no_usage, proxy)\n", t.c_str());
          return 64;
        }
      }
    }
    else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: real_world_matrix [--seeds N] [--draws N] [--causes a,b,...] [--jobs N] [--traits no_usage,proxy]\n"
          "                         [--against BIN] [--run-args \"ARGS\"] [--list]\n"
          "The default checklist of the real binary against realistic fake backgrounds, each cause planted\n"
          "at random magnitudes; --list names the causes. Needs root for the namespace lab (rows that need\n"
          "it are skipped without). Details at the top of tests/e2e/real_world_matrix.cpp.\n");
      return 0;
    } else if (a == "--list") {
      for (const auto& c : causes()) std::printf("%-16s %s\n", c.name.c_str(), c.expect.empty() ? "(healthy)" : c.expect.c_str());
      return 0;
    } else {
      std::fprintf(stderr, "real_world_matrix: unknown argument %s (--help)\n", a.c_str());
      return 64;
    }
  }
  const bool lab = !fake::Lab::unavailable_reason();
  struct Job {
    const Cause* cause;
    std::uint64_t seed;
  };
  std::vector<Job> todo;
  // A row's seed depends on its cause and draw only, so --causes reproduces the same rows.
  for (std::size_t i = 0; i < causes().size(); ++i) {
    const Cause& c = causes()[i];
    if (!only.empty() && !only.count(c.name)) continue;
    const int n = c.expect.empty() ? seeds : draws;
    for (int d = 1; d <= n; ++d) todo.push_back({&c, static_cast<std::uint64_t>(1000 * d + i)});
  }
  const std::string binary = driven("INFDOCTOR_TEST_BIN", INFDOCTOR_BIN);
  std::vector<Row> rows(todo.size()), before(against.empty() ? 0 : todo.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < todo.size(); i = next++) {
      if (!against.empty()) before[i] = run_one(*todo[i].cause, todo[i].seed, lab, traits, run_args, against, "-before");
      rows[i] = run_one(*todo[i].cause, todo[i].seed, lab, traits, run_args, binary);
      std::fprintf(stderr, "real_world_matrix: %s seed %s: %s (%.0f s)\n", rows[i].cause.c_str(), rows[i].draw.c_str(),
                   rows[i].skipped ? "skipped" : rows[i].pass ? "pass" : "FAIL", rows[i].seconds);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < jobs; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  if (!against.empty()) return print_against(rows, before, against);

  std::ostringstream table;
  char line[1024];
  std::snprintf(line, sizeof line, "%-18s %-6s %-15s %-50s %-40s %7s %9s %5s  %s\n", "cause", "seed", "expected", "planted",
                "got (above info, cause@scope)", "top ms", "explained", "s", "result");
  table << line;
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& r : rows) {
    if (r.skipped) ++skipped;
    else (r.pass ? passed : failed)++;
    std::snprintf(line, sizeof line, "%-18s %-6s %-15s %-50s %-40s %7s %9s %5.0f  %s\n", r.cause.c_str(), r.draw.c_str(),
                  r.expected.c_str(), r.planted.c_str(), r.got.c_str(), r.top_ms.c_str(), r.explained.c_str(), r.seconds,
                  r.skipped ? r.note.c_str() : r.pass ? "pass" : "FAIL");
    table << line;
    if (!r.background.empty()) table << "                   background: " << r.background << "\n";
  }
  table << passed << " passed, " << failed << " failed, " << skipped << " skipped"
        << (lab ? "" : " (no namespace lab: loopback round trips)") << "\n";
  std::fputs(table.str().c_str(), stdout);
  const auto dir = std::filesystem::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "real_world_matrix.txt") << table.str();
  return failed == 0 ? 0 : 1;
}
