// infdoctor against a real engine nobody here wrote: llama.cpp (npm's node-llama-cpp, its prebuilt
// CPU build) serving GGUF models with random weights, named as providers name them. Its prefill,
// decode, batching and tokenizer are llama.cpp's. A healthy run must name no cause, its fits must
// agree with the engine's own clock (llama.cpp server's `timings` in every answer), and faults
// planted around the engine must come first. What was measured is printed (ctest -V).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "fake/lab.h"
#include "net/subprocess.h"
#include "stats/fit.h"
#include "support/fronts.h"
#include "support/seed.h"
#include "support/results.h"

namespace infdoctor {
namespace {

using test::LlamaEngine;

const char* kTarget = "Qwen2.5-7B-Instruct";
const char* kSmall = "Qwen2.5-0.5B-Instruct";

bool engine_available() {
  if (auto why = LlamaEngine::unavailable_reason()) {
    MESSAGE("skipped: " << *why);
    return false;
  }
  return true;
}

test::LlamaEngineOptions pair() { return {.models = {{kTarget, "target.gguf"}, {kSmall, "small.gguf"}}}; }

nlohmann::json run(const std::string& base_url, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--base-url", base_url, "--model", kTarget, "--small-model", kSmall};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::run_results(args);
}

using test::top_cause;

// The engine's own numbers, from the `timings` of the target's answers to the sweep, by the same
// definitions as infdoctor's fits: prefill, prompt_ms against the prompt tokens it evaluated; decode,
// the whole time (prompt_ms + predicted_ms) against the tokens it generated, over the decode
// requests (same prompt, rising max_tokens). Theil-Sen both, as the sweep fits.
struct EngineClock {
  std::optional<double> prefill_ms_per_token, decode_ms_per_token;
};
EngineClock engine_clock(const nlohmann::json& sweep) {
  std::vector<double> pn, pms, dn, dms;
  for (const auto& s : sweep["samples"]) {
    if (!s.contains("server_timings") || !s["server_timings"].is_object() || s["model"] != kTarget) continue;
    const auto& t = s["server_timings"];
    const std::string kind = s["label"].value("sweep", "");
    if (kind == "prefill") {
      pn.push_back(t["prompt_n"].get<double>());
      pms.push_back(t["prompt_ms"].get<double>());
    } else if (kind == "decode") {
      dn.push_back(t["predicted_n"].get<double>());
      dms.push_back(t["prompt_ms"].get<double>() + t["predicted_ms"].get<double>());
    }
  }
  EngineClock c;
  if (auto f = stats::theil_sen(pn, pms)) c.prefill_ms_per_token = f->slope;
  if (auto f = stats::theil_sen(dn, dms)) c.decode_ms_per_token = f->slope;
  return c;
}

std::mt19937& rng() { return test::rng(); }

// A chat's shape: the engine's CPU prefill is compute-bound, and a reference request of 1,024
// prompt tokens would put seconds of it in front of every planted cause.
const std::vector<std::string> kChat = {"--workload", "prompt=128,output=128,concurrency=1"};

}  // namespace

TEST_CASE("engine: infdoctor's prefill and decode fits agree with llama.cpp's own clock within 5 %") {
  if (!engine_available()) return;
  LlamaEngine engine(pair());
  std::vector<std::string> args = {"--checks", "coldstart,baseline,sweep", "--quick"};
  args.insert(args.end(), kChat.begin(), kChat.end());
  const auto j = run(engine.base_url(), args);
  CAPTURE(test::rules_fired(j));
  const auto& sweep = j["checks"]["sweep"];
  REQUIRE(sweep["status"] == "ok");
  const EngineClock clock = engine_clock(sweep);
  REQUIRE(clock.prefill_ms_per_token);
  REQUIRE(clock.decode_ms_per_token);
  const double prefill = sweep["metrics"]["prefill_ms_per_token"].get<double>();
  const double decode = sweep["metrics"]["decode_ms_per_token"].get<double>();
  MESSAGE("prefill: infdoctor " << prefill << " ms a prompt token, llama.cpp " << *clock.prefill_ms_per_token
                                << "; decode: infdoctor " << decode << " ms a token, llama.cpp "
                                << *clock.decode_ms_per_token);
  MESSAGE("findings on the healthy engine: " << test::rules_fired(j));
  CHECK(prefill == doctest::Approx(*clock.prefill_ms_per_token).epsilon(0.05));
  CHECK(decode == doctest::Approx(*clock.decode_ms_per_token).epsilon(0.05));
  // The sizes in the names explain the pair: a 7B beside a 0.5B is no slow target.
  CHECK(j["checks"]["baseline"]["metrics"]["size_ratio"].get<double>() == doctest::Approx(14));
  // What the rules say of this engine must be what its own clock says. On a CPU, prefill is
  // compute-bound at a core's FLOPs: a prompt token costs a quarter of a decode token where a
  // GPU's costs under 1 % (rules/README.md), and prefill.slow_prefill says so. A CPU also wakes
  // slowly after a pause: when coldstart.idle_penalty speaks, llama.cpp's own prompt time after
  // the idle gaps is up too; and its first request after loading the model faults the weights in
  // from disk: when coldstart.first_request_beyond_tail speaks, llama.cpp's own prompt time of the
  // run's first request is up by half the finding at least. Nothing else is above info.
  std::vector<double> warm, after_gap, first;
  for (const auto& s : j["checks"]["coldstart"]["samples"])
    if (s.contains("server_timings") && s["server_timings"].is_object()) {
      const std::string phase = s["label"].value("phase", "");
      (phase == "baseline" ? warm : phase == "first" ? first : after_gap).push_back(s["server_timings"]["prompt_ms"].get<double>());
    }
  for (const auto& f : j["diagnosis"]) {
    if (f["severity"] == "info") continue;
    CAPTURE(f["rule"]);
    if (f["rule"] == "prefill.slow_prefill") {
      CHECK(*clock.prefill_ms_per_token > 0.015 * *clock.decode_ms_per_token);
    } else if (f["rule"] == "coldstart.idle_penalty" || f["rule"] == "coldstart.first_request_beyond_tail") {
      const bool idle = f["rule"] == "coldstart.idle_penalty";
      const auto& cold = idle ? after_gap : first;
      REQUIRE(stats::median(warm));
      REQUIRE(stats::median(cold));
      MESSAGE("llama.cpp's own prompt time: " << *stats::median(warm) << " ms back to back, " << *stats::median(cold)
                                              << std::string(idle ? " ms after the gaps" : " ms on the run's first request")
                                              << "; infdoctor's penalty " << f["impact_ms"] << " ms");
      CHECK(*stats::median(cold) - *stats::median(warm) > 0.5 * f["impact_ms"].get<double>());
    } else {
      FAIL_CHECK("a cause llama.cpp's own clock does not show: " << f["rule"]);
    }
  }
}

TEST_CASE("engine: a fixed overhead in front of the target alone comes first, as model_specific") {
  if (!engine_available()) return;
  const double overhead_ms = std::uniform_real_distribution<double>(600, 2000)(rng());
  MESSAGE("planted: " << overhead_ms << " ms before the target model starts on a request");
  test::LlamaEngineOptions o = pair();
  o.overhead_ms = {{kTarget, overhead_ms}};
  LlamaEngine engine(o);
  std::vector<std::string> args = {"--checks", "baseline"};
  args.insert(args.end(), kChat.begin(), kChat.end());
  const auto j = run(engine.base_url(), args);
  CAPTURE(test::rules_fired(j));
  const auto top = top_cause(j);
  REQUIRE_FALSE(top.is_null());
  CHECK(top["cause"] == "model_specific");
  CHECK(top["scope"] == "target_model");
  // The target's TTFT less the small model's: the overhead, and the two models' own prefill of the
  // short prompt apart, as llama.cpp timed it.
  std::vector<double> target_prompt, small_prompt;
  for (const auto& s : j["checks"]["baseline"]["samples"])
    if (s.contains("server_timings") && s["server_timings"].is_object())
      (s["model"] == kTarget ? target_prompt : small_prompt).push_back(s["server_timings"]["prompt_ms"].get<double>());
  REQUIRE(stats::median(target_prompt));
  REQUIRE(stats::median(small_prompt));
  const double expected = overhead_ms + *stats::median(target_prompt) - *stats::median(small_prompt);
  CHECK(top["impact_ms"].get<double>() == doctest::Approx(expected).epsilon(0.1));
  MESSAGE("found " << top["rule"] << " at " << top["impact_ms"]
                   << " ms; the overhead and the models' own prompt times make " << expected << " ms");
}

TEST_CASE("engine: nginx compressing the event stream in front comes first, as buffering at the intermediary") {
  if (!engine_available()) return;
  LlamaEngine engine(pair());
  const std::string up = engine.base_url().substr(7, engine.base_url().size() - 7 - 3);  // host:port
  test::Nginx nginx({.upstream = up, .server = "gzip on; gzip_types text/event-stream;"});
  std::vector<std::string> args = {"--checks", "baseline"};
  args.insert(args.end(), kChat.begin(), kChat.end());
  const auto j = run(nginx.base_url(), args);
  CAPTURE(test::rules_fired(j));
  const auto top = top_cause(j);
  REQUIRE_FALSE(top.is_null());
  CHECK(top["cause"] == "buffering");
  CHECK(top["scope"] == "intermediary");
  CHECK(top["where"].get<std::string>().find("nginx") != std::string::npos);
  for (const auto& f : j["diagnosis"]) CHECK(f["cause"] != "model_specific");
  MESSAGE("found " << top["rule"] << " at " << top["impact_ms"] << " ms (" << top["where"] << ")");
}

TEST_CASE("engine: a far region in front of it comes first, as network_rtt") {
  if (!engine_available()) return;
  if (auto why = fake::Lab::unavailable_reason()) {
    MESSAGE("skipped: " << *why);
    return;
  }
  const double one_way_ms = std::uniform_real_distribution<double>(60, 90)(rng());
  MESSAGE("planted: " << 2 * one_way_ms << " ms of round trip");
  fake::Lab lab({one_way_ms, 0.0});
  REQUIRE_MESSAGE(lab.ok(), lab.error());
  test::LlamaEngineOptions o = pair();
  o.netns = lab.server_ns();
  o.host = fake::Lab::kServerIp;
  LlamaEngine engine(o);
  std::vector<std::string> argv = {"ip",
                                   "netns",
                                   "exec",
                                   lab.client_ns(),
                                   test::infdoctor_bin(),
                                   "run",
                                   "--base-url",
                                   engine.base_url(),
                                   "--model",
                                   kTarget,
                                   "--small-model",
                                   kSmall,
                                   "--checks",
                                   "path,transport,baseline",
                                   "--json",
                                   "-"};
  argv.insert(argv.end(), kChat.begin(), kChat.end());
  auto r = net::run_command(argv, std::chrono::seconds(180));
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->timed_out);
  const auto j = nlohmann::json::parse(r->out);
  CAPTURE(test::rules_fired(j));
  CHECK(j["checks"]["path"]["metrics"]["tcp_rtt_p50_ms"].get<double>() == doctest::Approx(2 * one_way_ms).epsilon(0.1));
  const auto top = top_cause(j);
  REQUIRE_FALSE(top.is_null());
  CHECK(top["cause"] == "network_rtt");
  MESSAGE("found " << top["rule"] << " at " << top["impact_ms"] << " ms");
}

namespace {
// The engine's own clock of one request: its time in a slot (llama.cpp's prompt_ms and
// predicted_ms, measured from when a sequence took it), or nothing when the answer had no timings.
std::optional<double> in_slot_ms(const nlohmann::json& s) {
  if (!s.contains("server_timings") || !s["server_timings"].is_object()) return std::nullopt;
  return s["server_timings"]["prompt_ms"].get<double>() + s["server_timings"]["predicted_ms"].get<double>();
}
}  // namespace

// Two slots: past two users the engine queues, and what the load check reads of it must be what
// the engine's own clock says. In effect the engine serves min(users, slots) x t_alone / t_users
// requests at once (t: the median time a request spent in a slot, from llama.cpp's timings): the
// load check's capacity is held to the best of that, its knee to the level where the engine's
// clock stops gaining 20 %, and its TTFT to queueing (a wait past the slots, none within them).
// On a CPU with one thread a model's two sequences share the thread: here the engine's clock
// reads 0.8 to 1.0 gained from the second user, so about one request served at once, and the
// knee at 1 user.
TEST_CASE("engine: the load check reads llama.cpp's two slots: its capacity, its knee and its queue") {
  if (!engine_available()) return;
  test::LlamaEngineOptions o = pair();
  o.slots = 2;
  LlamaEngine engine(o);
  // The load check's reference (requests alone) comes first in this run: a request each to both
  // models first, so the reference is not the engine's first requests after loading.
  run(engine.base_url(), {"--checks", "baseline", "--set", "baseline.samples=1"});
  const auto j = run(engine.base_url(), {"--checks", "load", "--set", "load.levels=1,2,4", "--set", "load.requests=8",
                                         "--set", "load.prompt_tokens=64", "--set", "load.max_tokens=32"});
  const auto& load = j["checks"]["load"];
  CAPTURE(load["metrics"].dump());
  REQUIRE(load["status"] == "ok");
  std::map<double, std::vector<double>> slot_ms;  // users (0: the reference, alone) -> time in a slot
  for (const auto& s : load["samples"])
    if (auto t = in_slot_ms(s)) slot_ms[s["label"].value("users", 0.0)].push_back(*t);
  REQUIRE(slot_ms.size() == 4);
  const double alone = *stats::median(slot_ms[0]);
  std::map<double, double> served;  // users -> requests in a slot at once, in effect, by the engine's clock
  double engine_capacity = 0;
  for (const double users : {1.0, 2.0, 4.0}) {
    served[users] = std::min<double>(users, o.slots) * alone / *stats::median(slot_ms[users]);
    engine_capacity = std::max(engine_capacity, served[users]);
  }
  const double capacity = load["metrics"]["capacity_count"].get<double>();
  MESSAGE("llama.cpp: " << alone << " ms in a slot alone; served at once in effect: " << served[1] << " (1 user), "
                        << served[2] << " (2), " << served[4] << " (4); infdoctor's capacity " << capacity << ", knee "
                        << load["metrics"].value("knee_level_count", -1.0));
  CHECK(capacity == doctest::Approx(engine_capacity).epsilon(0.15));
  CHECK(capacity <= o.slots * 1.15);
  // The knee where the engine's clock says the gain fell under the bar of 20 %, with a margin
  // either side of it; between them no level is told.
  const double gain_2 = served[2] / served[1], gain_4 = served[4] / served[2];
  MESSAGE("the engine's gain from 1 user to 2: " << gain_2 << "; from 2 to 4: " << gain_4);
  if (gain_2 > 1.35 && gain_4 < 1.05) CHECK(load["metrics"]["knee_level_count"] == 2);
  if (gain_2 < 1.05) CHECK(load["metrics"]["knee_level_count"] == 1);
  // Queueing: with 4 users on 2 slots a request waits for a slot, about a request's time in one;
  // with 2 users it waits for none.
  std::map<double, double> ttft_p50;
  for (const auto& row : load["details"]["levels"]) ttft_p50[row["users"].get<double>()] = row["ttft_p50_ms"].get<double>();
  MESSAGE("TTFT p50: " << ttft_p50[2] << " ms with 2 users, " << ttft_p50[4] << " ms with 4; in a slot "
                       << *stats::median(slot_ms[2]) << " and " << *stats::median(slot_ms[4]) << " ms");
  CHECK(ttft_p50[2] < 0.5 * *stats::median(slot_ms[2]));
  CHECK(ttft_p50[4] > 0.5 * *stats::median(slot_ms[4]));
  // The ramp's levels slow each token as the batch grows (one CPU thread serves both slots): that
  // is the concurrency reading, not periods of a slow server. No finding reads them as a
  // neighbour's bursts or a slow replica.
  CAPTURE(test::rules_fired(j));
  for (const auto& f : j["diagnosis"]) {
    CHECK(f["cause"] != "noisy_neighbour");
    CHECK(f["cause"] != "slow_replica");
  }
}

}  // namespace infdoctor
