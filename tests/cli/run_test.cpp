// `infdoctor run` as a user runs it: the real binary against a fake provider on loopback.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "checks/registry.h"
#include "core/clock.h"
#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

net::CommandResult run(std::vector<std::string> args, std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {test::infdoctor_bin(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, timeout);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

const char* kHealthy = R"({"models": {
    "big": {"overhead_ms": 60, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 8, "jitter_ms": 3},
    "small": {"overhead_ms": 30, "decode_ms_per_token": 3}}})";

}  // namespace

TEST_CASE("run --quick: every check of the checklist against a healthy provider within 60 s") {
  auto server = test::start_fake(kHealthy);
  const auto t0 = core::SteadyClock::now();
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--small-model", "small", "--quick", "--json", "-"});
  const double took_s = core::to_ms(core::elapsed_us(t0, core::SteadyClock::now())) / 1000.0;
  const auto j = nlohmann::json::parse(r.out);
  std::string findings;
  for (const auto& f : j["diagnosis"]) findings += f["rule"].get<std::string>() + " (" + f["severity"].get<std::string>() + ") ";
  CAPTURE(findings);
  CHECK(r.exit_code == 0);
  CHECK(took_s < 60.0);
  MESSAGE("run --quick took " << took_s << " s");
  CHECK(j["schema"] == "infdoctor.results/1");
  for (const char* id : {"path", "transport", "coldstart", "baseline", "sweep", "serialization", "concurrency"}) {
    CAPTURE(id);
    CHECK(j["checks"][id]["status"] == "ok");
  }
  CHECK(j["checks"]["dns"]["status"] == "skipped");  // an IP address
  CHECK_FALSE(j["checks"].contains("soak"));         // only with --soak-minutes
  CHECK(j["checks"]["sweep"]["metrics"]["decode_ms_per_token"].get<double>() == doctest::Approx(8).epsilon(0.1));
  CHECK(r.err.find("plan: at most") != std::string::npos);
}

TEST_CASE("run: a reasoning model that refuses max_tokens and temperature is adapted to once, and the run completes") {
  auto server = test::start_fake(
      R"({"models": {"o": {"overhead_ms": 30, "decode_ms_per_token": 3, "rejects": ["max_tokens", "temperature"]}}})");
  auto r = run({"--base-url", server->base_url(), "--model", "o", "--checks", "baseline,sweep", "--quick", "--json", "-"});
  CAPTURE(r.err);
  const auto j = nlohmann::json::parse(r.out);
  std::string findings;
  for (const auto& f : j["diagnosis"]) findings += f["rule"].get<std::string>() + " (" + f["severity"].get<std::string>() + ") ";
  CAPTURE(findings);
  // The run completes: exit 0, or 1 where a finding speaks (a loaded host can stall a stream of
  // this fast a model); what this test holds is the adaptation below.
  CHECK(r.exit_code <= 1);
  CHECK(j["checks"]["baseline"]["status"] == "ok");
  CHECK(j["checks"]["sweep"]["status"] == "ok");
  CHECK(j["run"]["metrics"]["failed_count"] == 0);
  REQUIRE(j["adaptations"].size() == 2);
  CHECK(j["adaptations"][0]["parameter"] == "max_tokens");
  CHECK(j["adaptations"][0]["change"] == "renamed to max_completion_tokens");
  CHECK(j["adaptations"][0]["provider_said"].get<std::string>().find("Use 'max_completion_tokens' instead") != std::string::npos);
  CHECK(j["adaptations"][1]["parameter"] == "temperature");
  // Two refusals, one for each parameter; every other request went out changed and got through.
  int refused = 0;
  for (const auto& s : server->served()) refused += s.status == 400;
  CHECK(refused == 2);
  CHECK(r.err.find("the endpoint refused max_tokens: renamed to max_completion_tokens from here on") != std::string::npos);

  // The report says so in words.
  auto text = run({"--base-url", server->base_url(), "--model", "o", "--checks", "baseline", "--quick"});
  CHECK(text.out.find("Adapted to the endpoint: max_tokens renamed to max_completion_tokens (it said: HTTP 400: "
                      "Unsupported parameter: 'max_tokens'") != std::string::npos);
  CHECK(text.out.find("Adapted to the endpoint: temperature left out: the model takes only its default") != std::string::npos);
}

TEST_CASE("run: a reasoning model's timings, its reasoning hidden or streamed, and no buffering read into hidden tokens") {
  // Planted: 40 ms before the first token, 8 ms a token, 50 reasoning tokens (400 ms) before the
  // answer. Hidden, as OpenAI's reasoning models do; streamed, as vLLM's reasoning parser does.
  for (const bool visible : {false, true}) {
    CAPTURE(visible);
    auto server = test::start_fake(std::string(R"({"models": {"o": {"overhead_ms": 40, "decode_ms_per_token": 8, )") +
                                   R"("reasoning_tokens": 50, "reasoning_visible": )" + (visible ? "true" : "false") +
                                   R"(}, "small": {"overhead_ms": 30, "decode_ms_per_token": 3}}})");
    auto r = run({"--base-url", server->base_url(), "--model", "o", "--small-model", "small", "--checks", "baseline,sweep",
                  "--quick", "--json", "-"});
    CAPTURE(r.err);
    const auto j = nlohmann::json::parse(r.out);
    std::string findings;
    for (const auto& f : j["diagnosis"]) findings += f["rule"].get<std::string>() + " (" + f["severity"].get<std::string>() + ") ";
    CAPTURE(findings);
    CHECK(r.exit_code == 0);  // a model that reasons is not a fault
    const auto& b = j["checks"]["baseline"]["metrics"];
    MESSAGE(std::string(visible ? "streamed" : "hidden") << " reasoning: TTFT " << b["ttft_p50_ms"] << " ms, first answer "
                                               << b["first_answer_p50_ms"] << " ms, reasoning " << b["reasoning_p50_ms"]
                                               << " ms, per token " << b["tpot_p50_ms"] << " ms");
    CHECK(b["reasoning_tokens_p50_count"].get<double>() == 50);
    CHECK(b["hidden_reasoning_ratio"].get<double>() == (visible ? 0.0 : 1.0));
    CHECK(b["first_answer_p50_ms"].get<double>() == doctest::Approx(440).epsilon(0.1));
    CHECK(b["reasoning_p50_ms"].get<double>() == doctest::Approx(400).epsilon(0.1));
    // The first token is the first reasoning token when it streams, the answer's when it does not.
    CHECK(b["ttft_p50_ms"].get<double>() == doctest::Approx(visible ? 40 : 440).epsilon(0.1));
    // Time per token over what arrived: 8 ms either way, not 32 answer tokens spread over 82.
    CHECK(b["tpot_p50_ms"].get<double>() == doctest::Approx(8).epsilon(0.1));
    CHECK(b["arrivals_per_token_ratio"].get<double>() > 0.9);
    for (const auto& f : j["diagnosis"]) {
      CHECK(f["cause"] != "buffering");
      CHECK(f["rule"] != "model.target_overhead");  // the wait before the answer is the reasoning
    }
    bool noted = false;
    for (const auto& f : j["diagnosis"]) noted = noted || f["rule"] == "decode.reasoning";
    CHECK(noted);
    // The sweep fits no prefill through hidden thinking, and says why.
    const auto& sweep = j["checks"]["sweep"];
    CHECK(sweep["metrics"].contains("prefill_ms_per_token") == visible);
    CHECK(sweep["details"].contains("prefill_not_fitted") == !visible);
    CHECK(sweep["metrics"]["decode_ms_per_token"].get<double>() == doctest::Approx(8).epsilon(0.1));
    int first_reasoning = 0;
    for (const auto& s : j["checks"]["baseline"]["samples"]) first_reasoning += s["first_reasoning_ms"].is_number();
    CHECK((first_reasoning > 0) == visible);
  }
}

TEST_CASE("run --max-requests is never exceeded") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "baseline,sweep,concurrency",
                      "--max-requests", "7", "--json", "-"});
  const auto j = nlohmann::json::parse(r.out);
  CHECK(server->served().size() <= 7);
  CHECK(r.err.find("needs more requests than the budget") != std::string::npos);
  CHECK(j["checks"]["concurrency"]["error"] == "budget_exhausted");
}

TEST_CASE("run: the text report has a row per check and the tables") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "transport,concurrency",
                      "--concurrency", "1,2,4"});
  CHECK(r.exit_code == 0);
  for (const char* want : {"transport ", "concurrency ", "of perfect scaling", "concurrency: per level", "tokens/s"})
    CHECK_MESSAGE(r.out.find(want) != std::string::npos, want);
}

TEST_CASE("run: configuration errors are all reported before anything is sent, as a usage error (64)") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--checks", "dns,bogus", "--set",
                      "sweep.repeats=0", "--set", "nothing=1", "--idle-gaps", "5,1", "--concurrency", "1,8,128",
                      "--max-concurrency", "100"});
  CHECK(r.exit_code == 64);
  for (const char* want : {"unknown check 'bogus'", "sweep.repeats", "'nothing' names no check", "coldstart.idle_gaps",
                           "concurrency.levels"})
    CHECK_MESSAGE(r.err.find(want) != std::string::npos, want);
  CHECK(server->served().empty());
}

TEST_CASE("run --settings: every check's settings with their defaults and what the profiles change, no endpoint needed") {
  const auto r = run({"--settings"});
  CHECK(r.exit_code == 0);
  for (const auto& e : checks::registry())
    for (const auto& s : e.info->settings) {
      CAPTURE(s.key);
      CHECK(r.out.find("\n  " + std::string(s.key) + " ") != std::string::npos);
    }
  CHECK(r.out.find("concurrency.levels             default 1,2,4,8,16, --quick 1,2,4,8, --full 1,2,4,8,16,32,64") !=
        std::string::npos);
  CHECK(r.out.find("soak: Soak (off unless soak.minutes is given)") != std::string::npos);
}

TEST_CASE("run --dry-run: lists every step and its token cost and sends nothing") {
  auto server = test::start_fake(kHealthy);
  const auto r = run({"--base-url", server->base_url(), "--model", "big", "--small-model", "small", "--quick",
                      "--dry-run"});
  CHECK(r.exit_code == 0);
  CHECK(server->served().empty());  // not one model request
  CHECK(r.out.find("nothing is sent") != std::string::npos);
  for (const char* id : {"dns", "path", "transport", "coldstart", "baseline", "sweep", "serialization", "concurrency"}) {
    CAPTURE(id);
    CHECK(r.out.find("\n  " + std::string(id) + " ") != std::string::npos);
  }
  // The quick sweep's prompt sizes and the padded bodies appear as steps of their own.
  CHECK(r.out.find("prefill: prompt of 2048 tokens") != std::string::npos);
  CHECK(r.out.find("request body padded to 1024 KB") != std::string::npos);
  CHECK(r.out.find("(stream: false)") != std::string::npos);
  CHECK(r.out.find("small") != std::string::npos);
  // The total is the sum of the rows: quick = coldstart 5 (and the longest gap again, if it alone
  // was cold) + baseline 8+8 + sweep 6 (and 2 of the small model's prefill) + serialization 6 (3
  // bodies, streamed with and without Accept-Encoding, not streamed) + concurrency 15 (and 8 more on
  // connections of their own, sent only over HTTP/2).
  CHECK(r.out.find("total: at most 59 model requests") != std::string::npos);
  // Quick and the default profile send enough requests for the time series; a plan cut below it
  // says so before anything is sent.
  CHECK(r.out.find("cannot judge slowdowns") == std::string::npos);
  const auto full = run({"--base-url", server->base_url(), "--model", "big", "--small-model", "small", "--dry-run"});
  CHECK(full.out.find("cannot judge slowdowns") == std::string::npos);
  const auto cut = run({"--base-url", server->base_url(), "--model", "big", "--small-model", "small", "--quick",
                        "--set", "baseline.samples=3", "--dry-run"});
  CHECK(cut.out.find("this plan: it cannot judge slowdowns over time") != std::string::npos);

  SUBCASE("without --model the model checks say they would be skipped") {
    const auto n = run({"--base-url", server->base_url(), "--dry-run"});
    CHECK(n.exit_code == 0);
    CHECK(n.out.find("skipped: no --model") != std::string::npos);
    CHECK(n.out.find("total: at most 0 model requests") != std::string::npos);
  }
  CHECK(server->served().empty());
}


TEST_CASE("the plan line states the model requests the run then sends, for any choice of checks and models") {
  struct Case {
    std::vector<std::string> args;
    std::size_t http2_only = 0;  // planned, but sent only over HTTP/2 (the fake speaks HTTP/1.1)
  };
  const std::vector<Case> cases = {
      {{"--model", "big", "--checks", "baseline"}},  // no small model: only the target's share
      // The concurrency check's highest level (8 at --quick) again on connections of their own.
      {{"--model", "big", "--small-model", "small", "--checks", "baseline,sweep,serialization,concurrency"}, 8},
      {{"--checks", "transport,baseline,sweep"}},  // no model at all: no model requests, no plan line
  };
  for (const auto& c : cases) {
    auto server = test::start_fake(kHealthy);
    std::vector<std::string> args = {"--base-url", server->base_url(), "--quick", "--json", "-"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run(args);
    CHECK(r.exit_code <= 1);
    std::size_t sent = 0;
    for (const auto& s : server->served())
      if (s.request_line.find("/chat/completions") != std::string::npos) ++sent;
    // A request the run had sent already is read, not sent again: the concurrency check's one
    // stream, when the sweep asked the same (at --quick its 16-token size). The plan counts it.
    std::size_t read = 0;
    if (const auto j = nlohmann::json::parse(r.out, nullptr, false); j.is_object() && j["checks"].contains("concurrency"))
      read = j["checks"]["concurrency"]["details"].value("one_stream_read", nlohmann::json::object()).value("answers", nlohmann::json::array()).size();
    const auto at = r.err.find("plan: at most ");
    const std::size_t planned = at == std::string::npos ? 0 : std::stoul(r.err.substr(at + 14));
    CHECK_MESSAGE(planned == sent + c.http2_only + read,
                  c.args.back() << ": plan " << planned << ", sent " << sent << ", read " << read << "\n" << r.err);
    if (c.http2_only > 0) CHECK(read == 1);  // the case with the sweep and the concurrency check
  }
}

TEST_CASE("run: the path and transport checks run inside the cold-start check's idle gap, and in their own turn with --idle-endpoint or when they do not fit") {
  // The path check's 20 TCP connects and echoes 50 ms apart take about 2 s on loopback. Inside a
  // 3 s gap it costs the run nothing: the checks' durations add up to more than the run took, by
  // the path check's. With --idle-endpoint they add up to the run. In a 0.5 s gap it does not fit:
  // it is cut at the gap's end, the gap stays 0.5 s, and it runs again in full after the check.
  struct Case {
    std::vector<std::string> args;
    const char* what;
  };
  for (const auto& c : {Case{{"--idle-gaps", "0,3"}, "inside"}, Case{{"--idle-gaps", "0,3", "--idle-endpoint"}, "own turn"},
                        Case{{"--idle-gaps", "0,0.5"}, "too short"}}) {
    CAPTURE(c.what);
    auto server = test::start_fake(kHealthy);
    std::vector<std::string> args = {"--base-url", server->base_url(), "--model", "big", "--checks", "path,transport,coldstart",
                                     "--set", "path.samples=20", "--json", "-"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run(args);
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    // The run's own span, from its first check's start to its last one's end: not the process's
    // start and exit, which a sanitizer build and a busy machine make long.
    const auto started = core::parse_rfc3339_utc(j["started_at"].get<std::string>());
    const auto finished = core::parse_rfc3339_utc(j["finished_at"].get<std::string>());
    REQUIRE((started && finished));
    const double run_s = *finished - *started;
    const auto& path = j["checks"]["path"];
    REQUIRE(path["status"] == "ok");
    CHECK(path["metrics"]["tcp_rtt_samples_count"] == 20);  // in full, wherever it ran
    const auto seconds = [&](const char* id) { return j["checks"][id]["duration_ms"].get<double>() / 1000.0; };
    const double path_s = seconds("path"), overlap_s = path_s + seconds("transport") + seconds("coldstart") - run_s;
    MESSAGE(std::string(c.what) << ": path " << path_s << " s, run " << run_s << " s, overlap " << overlap_s << " s");
    CHECK(path_s > 1.0);
    const bool inside = std::string(c.what) == "inside";
    CHECK(path["details"].contains("ran_inside") == inside);
    if (inside) {
      CHECK(path["details"]["ran_inside"] == "coldstart");
      // The host is one address: the transport check has none to leave before the first model
      // request, and waits for the gaps too.
      CHECK(j["checks"]["transport"]["details"]["ran_inside"] == "coldstart");
      CHECK(overlap_s > path_s - 0.5);
      CHECK(r.err.find("path, transport run inside coldstart's idle gaps") != std::string::npos);
      CHECK(r.err.find("transport runs in its own turn when the host has more than one address") != std::string::npos);
      const auto text = run({"--base-url", server->base_url(), "--model", "big", "--checks", "path,coldstart", "--idle-gaps",
                             "0,1", "--set", "path.samples=3"});
      CHECK(text.out.find("(ran inside coldstart's idle gaps)") != std::string::npos);
    } else {
      CHECK(overlap_s < 0.5 * path_s);
    }
    if (std::string(c.what) == "own turn") CHECK(r.err.find("runs inside") == std::string::npos);
    if (std::string(c.what) == "too short") CHECK(seconds("coldstart") < 0.5 + 0.5 * path_s);  // the gap did not grow
  }
}

}  // namespace infdoctor
