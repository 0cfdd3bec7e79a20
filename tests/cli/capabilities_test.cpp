// The capabilities that measure more than the checklist's own requests (a load ramp, the prompt
// cache, the user's own request, a reasoning model's thinking) speak through the one diagnosis:
// their readings price its terms and make its findings, with the exit code that follows.
// Magnitudes are drawn at random and printed.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "checks/check.h"
#include "net/subprocess.h"
#include "support/fake_process.h"
#include "support/results.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
using test::findings_of;

double draw(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(test::rng()); }

struct Ran {
  nlohmann::json results;
  int exit_code = -1;
  std::string out;
  std::string err;
};
Ran run(const std::vector<std::string>& args, bool json = true) {
  std::vector<std::string> argv = {test::infdoctor_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  if (json) argv.insert(argv.end(), {"--json", "-"});
  argv.insert(argv.end(), {"--api-key-env", "INFDOCTOR_TEST_NO_KEY"});
  auto r = net::run_command(argv, 240s);
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->timed_out);
  INFO(r->err);
  Ran out{nullptr, r->exit_code, r->out, r->err};
  if (json) {
    out.results = nlohmann::json::parse(r->out, nullptr, false);
    REQUIRE_MESSAGE(!out.results.is_discarded(), "not JSON: " << r->out);
  }
  return out;
}

const nlohmann::json* rule(const nlohmann::json& j, const std::string& id) { return test::finding(j, id); }

}  // namespace

TEST_CASE("realistic: a load ramp on a server of k slots prices the queue by the response-time law, and goodput under the target sets the exit code") {
  const int slots = std::uniform_int_distribution<int>(2, 3)(test::rng());
  const double decode = draw(4, 8);
  MESSAGE("planted: " << slots << " slots, decode " << decode << " ms a token");
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 60, "prefill_ms_per_token": 0.05,
      "decode_ms_per_token": )" + std::to_string(decode) + R"(, "jitter_ms": 3, "slots": )" + std::to_string(slots) + "}}}");
  const int users = 4 * slots;
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Qwen2.5-7B-Instruct", "--checks", "load", "--set",
                      "load.levels=" + std::to_string(slots) + "," + std::to_string(users), "--set", "load.requests=24",
                      "--workload", "prompt=256,output=16,concurrency=" + std::to_string(users), "--slo",
                      "total_p50_ms=" + std::to_string(static_cast<int>(2 * (60 + 256 * 0.05 + 15 * decode)))});
  const auto& j = r.results;
  CAPTURE(findings_of(j));
  const auto& load = j["checks"]["load"]["metrics"];
  const double service = load["reference_total_p50_ms"].get<double>();
  // R = N / X at the X of k slots each serving one request of S: N S / k; less S alone.
  const double law = service * (static_cast<double>(users) / slots - 1);
  const auto* q = rule(j, "queueing.capacity");
  REQUIRE(q != nullptr);
  CHECK((*q)["impact_ms"].get<double>() == doctest::Approx(law).epsilon(0.15));
  CHECK(j["run"]["metrics"]["workload_queue_ms"].get<double>() == doctest::Approx(law).epsilon(0.15));
  const auto* goodput = rule(j, "load.goodput_low");
  REQUIRE(goodput != nullptr);
  CHECK(r.exit_code >= 1);
  // A ramp's levels are load, not bursts over time: nothing about the clock.
  for (const auto& f : j["diagnosis"]) CHECK(f["cause"] != "noisy_neighbour");
  MESSAGE("the ramp's service " << service << " ms, capacity " << load["capacity_count"] << "; queue priced "
                                << (*q)["impact_ms"] << " ms against the law's " << law << "; goodput "
                                << load["goodput_at_max_ratio"] << "; exit " << r.exit_code);
}

TEST_CASE("realistic: the load check alone on a tokenizer of several tokens a word sizes its requests alone in the server's tokens") {
  // The load check's service time comes from its first requests, which are the run's first: with
  // nothing yet telling the tokens a word, a prompt of 256 words was 256 x 2-4 tokens.
  const double per_word = draw(2, 4);
  MESSAGE("planted: " << per_word << " prompt tokens a word");
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 40, "prefill_ms_per_token": 0.5,
      "decode_ms_per_token": 5, "slots": 2, "prompt_tokens_per_word": )" + std::to_string(per_word) + "}}}");
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Qwen2.5-7B-Instruct", "--checks", "load", "--set",
                      "load.levels=1,2", "--set", "load.requests=6", "--set", "load.prompt_tokens=256", "--set",
                      "load.max_tokens=16"});
  std::vector<double> alone;
  for (const auto& s : r.results["checks"]["load"]["samples"])
    if (s["label"].value("phase", "") == "reference" && s.contains("prompt_tokens")) alone.push_back(s["prompt_tokens"].get<double>());
  REQUIRE(alone.size() == 3);
  std::sort(alone.begin(), alone.end());
  CAPTURE(alone[0]);
  CAPTURE(alone[2]);
  // The first goes in words, as nothing else can; the others, and so the median, in tokens.
  CHECK(alone[1] == doctest::Approx(256).epsilon(0.1));
  const double service = r.results["checks"]["load"]["metrics"]["reference_total_p50_ms"].get<double>();
  // Its service time is a 256-token request's: 40 + 256 x 0.5 ms to the first token, 15 more at 5 ms each.
  CHECK(service == doctest::Approx(40 + 256 * 0.5 + 15 * 5).epsilon(0.2));
  MESSAGE("the requests alone: " << alone[0] << ", " << alone[1] << ", " << alone[2] << " prompt tokens; service " << service
                                 << " ms");
}

TEST_CASE("realistic: --slo is judged on the workload's request, and the sentence says the limit, the value and the excess") {
  const double prefill = draw(0.2, 0.4);
  const int prompt = std::uniform_int_distribution<int>(3000, 5000)(test::rng());
  MESSAGE("planted: " << prefill << " ms a prompt token; the workload's prompt " << prompt << " tokens");
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 60, "prefill_ms_per_token": )" +
                                 std::to_string(prefill) + R"(, "decode_ms_per_token": 10, "jitter_ms": 2}}})");
  // Halfway up the workload's prefill: far above the baseline's short request, far below the workload's.
  const double limit = std::round(60 + 0.5 * prompt * prefill);
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Qwen2.5-7B-Instruct", "--checks", "baseline,sweep",
                      "--workload", "prompt=" + std::to_string(prompt) + ",output=32", "--slo",
                      "ttft_p50_ms=" + checks::format_number(limit)});
  const auto& j = r.results;
  CAPTURE(findings_of(j));
  const double priced = j["run"]["metrics"]["workload_ttft_ms"].get<double>();
  CHECK(priced == doctest::Approx(60 + prompt * prefill).epsilon(0.15));
  CHECK(j["checks"]["baseline"]["metrics"]["ttft_p50_ms"].get<double>() < limit);
  const auto* f = rule(j, "slo.baseline.ttft_p50_ms");
  REQUIRE(f != nullptr);
  CHECK((*f)["impact_ms"].get<double>() == doctest::Approx(priced - limit));
  const std::string said = (*f)["explanation"];
  CHECK(said.find("is " + checks::format_number(limit) + " ms;") != std::string::npos);
  CHECK(said.find("over it") != std::string::npos);
  CHECK(r.exit_code >= 1);
  MESSAGE("limit " << limit << " ms; priced first token " << priced << " ms; said: " << said);
}

TEST_CASE("realistic: --slo under the load check alone is judged in its goodput, not called unmeasured") {
  auto server = test::start_fake(R"({"models": {"Qwen2.5-7B-Instruct": {"overhead_ms": 60, "prefill_ms_per_token": 0.05,
      "decode_ms_per_token": 4, "slots": 1}}})");
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Qwen2.5-7B-Instruct", "--checks", "load", "--set",
                      "load.levels=1,3", "--set", "load.requests=6", "--workload", "prompt=128,output=16", "--slo",
                      "ttft_p50_ms=20"});
  const auto& j = r.results;
  CAPTURE(findings_of(j));
  CHECK(j["checks"]["load"]["metrics"]["slo_limits_count"].get<double>() == 1);
  CHECK(rule(j, "load.goodput_low") != nullptr);
  CHECK(r.err.find("which was not measured") == std::string::npos);
  CHECK(r.exit_code >= 1);
}

TEST_CASE("realistic: the prompt-cache check alone on a cache that never hits is a finding") {
  auto server = test::start_fake(R"({"models": {"Llama-3.1-70B-Instruct": {"overhead_ms": 50, "prefill_ms_per_token": )" +
                                 std::to_string(draw(0.1, 0.3)) + R"(, "decode_ms_per_token": 10}}})");
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Llama-3.1-70B-Instruct", "--checks", "cache", "--set",
                      "cache.idle_gaps=1", "--set", "cache.repeats=2"});
  const auto& j = r.results;
  CAPTURE(findings_of(j));
  const auto* f = rule(j, "cache.never_hits");
  REQUIRE(f != nullptr);
  const auto& cache = j["checks"]["cache"]["metrics"];
  CHECK((*f)["impact_ms"].get<double>() ==
        doctest::Approx(cache["miss_ttft_p50_ms"].get<double>() - cache["short_ttft_p50_ms"].get<double>()));
  CHECK(r.exit_code == 1);
  MESSAGE("found " << (*f)["rule"] << " at " << (*f)["impact_ms"] << " ms; exit " << r.exit_code);
}

TEST_CASE("realistic: with --body, the reference request is the user's own: its prompt, its output, its bytes") {
  const int words = std::uniform_int_distribution<int>(2000, 6000)(test::rng());
  const int answer = std::uniform_int_distribution<int>(40, 120)(test::rng());
  std::string system;
  for (int i = 0; i < words; ++i) system += (i ? " " : "") + std::string(i % 3 ? "policy" : "section");
  nlohmann::json body = {{"model", "gpt-4o"},
                         {"max_tokens", 400},
                         {"messages", {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", "What applies here?"}}}}};
  test::TempFile file(body.dump(), "body.json");
  auto server = test::start_fake(R"({"models": {"gpt-4o": {"overhead_ms": 40, "prefill_ms_per_token": 0.05, "decode_ms_per_token": 12,
      "output_tokens": )" + std::to_string(answer) + "}}}");
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "gpt-4o", "--checks", "baseline,replay", "--body",
                      file.path()});
  const auto& m = r.results["run"]["metrics"];
  const auto& replay = r.results["checks"]["replay"]["metrics"];
  CHECK(m["workload_from_body_count"] == 1);
  CHECK(m["workload_prompt_tokens_count"].get<double>() == replay["prompt_tokens_count"].get<double>());
  CHECK(m["workload_prompt_tokens_count"].get<double>() >= words);
  CHECK(m["workload_output_tokens_count"].get<double>() == answer);
  CHECK(m["workload_body_bytes"].get<double>() == replay["body_bytes"].get<double>());
  const auto text = run({"run", "--base-url", server->base_url(), "--model", "gpt-4o", "--checks", "baseline,replay", "--body",
                         file.path()},
                        false);
  CHECK(text.out.find("Priced on your own request (--body) of ") != std::string::npos);
  // The body stays on the machine unless its owner asks: with --keep-body the bundle keeps it.
  test::TempFile kept("", "kept");
  for (const bool keep : {false, true}) {
    const std::string dir = kept.dir() + (keep ? "/with" : "/without");
    std::vector<std::string> args = {"run", "--base-url", server->base_url(), "--model", "gpt-4o", "--checks", "replay",
                                     "--body", file.path(), "--bundle", dir};
    if (keep) args.push_back("--keep-body");
    run(args, false);
    std::string all;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(e.path());
      all += std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    CAPTURE(keep);
    CHECK(std::filesystem::exists(dir + "/body.jsonl") == keep);
    CHECK((all.find(system.substr(0, 200)) != std::string::npos) == keep);
  }
  MESSAGE("priced on " << m["workload_prompt_tokens_count"] << " prompt and " << m["workload_output_tokens_count"]
                       << " output tokens, " << m["workload_body_bytes"] << " bytes");
}

TEST_CASE("realistic: the ticket's requests for a first-token cause are ranked net of the server's queue, and requests sent beside others are left to queueing") {
  // Slow prefill on a server that serves four requests at a time and says how long each waited
  // (Server-Timing's queue): the concurrency check's requests wait behind each other for seconds,
  // longer than the sweep's longest prompt spends in prefill. A provider engineer handed those
  // would find queueing, not prefill.
  const double prefill = draw(2.5, 4);
  MESSAGE("planted: prefill " << prefill << " ms a token, four slots, the queue reported");
  auto server = test::start_fake(R"({"models": {"Llama-3.1-70B-Instruct": {"overhead_ms": 40, "prefill_ms_per_token": )" +
                                 std::to_string(prefill) + R"(, "decode_ms_per_token": 20, "slots": 4, "timing_headers": true},
      "Llama-3.2-3B-Instruct": {"overhead_ms": 40, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 5}}})");
  test::TempFile out("", "bundle");
  const std::string dir = out.dir() + "/b";
  const auto r = run({"run", "--base-url", server->base_url(), "--model", "Llama-3.1-70B-Instruct", "--small-model",
                      "Llama-3.2-3B-Instruct", "--checks", "baseline,sweep,concurrency", "--set", "sweep.prompt_tokens=64,1024,2048",
                      "--set", "sweep.max_tokens=1,32", "--bundle", dir});
  const auto& j = r.results;
  CAPTURE(findings_of(j));
  const auto top = test::top_cause(j);
  REQUIRE_FALSE(top.is_null());
  REQUIRE(top["cause"] == "prefill_bound");
  // Ranked by the raw time to first token, the ticket would list parallel requests: their wait
  // behind each other is longer than most of the sweep's prefill.
  std::vector<std::pair<double, std::string>> by_ttft;
  std::map<std::string, int> beside;  // request id: the requests sent with it (its concurrency level, its transfers in flight)
  for (const auto& [id, c] : j["checks"].items())
    for (const auto& s : c["samples"]) {
      const int n = std::max(s["label"].value("streams", 1), s.value("in_flight_count", 1));
      beside[s.value("request_id", "")] = n;
      if (s.contains("ttft_ms") && s["ttft_ms"].is_number()) by_ttft.emplace_back(s["ttft_ms"].get<double>(), s.value("request_id", ""));
    }
  std::sort(by_ttft.rbegin(), by_ttft.rend());
  int parallel_in_raw_top = 0;
  for (std::size_t i = 0; i < by_ttft.size() && i < 10; ++i) parallel_in_raw_top += beside[by_ttft[i].second] > 1;
  CHECK(parallel_in_raw_top >= 1);
  std::ifstream in(dir + "/summary.md");
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = md.find("## Requests that show prefill_bound most");
  REQUIRE_MESSAGE(at != std::string::npos, md);
  std::istringstream table(md.substr(at));
  std::string line;
  int rows = 0;
  while (std::getline(table, line) && rows < 12) {
    if (line.rfind("| 20", 0) != 0) continue;  // a row starts with its UTC start time
    std::vector<std::string> cells;
    std::istringstream cs(line);
    for (std::string cell; std::getline(cs, cell, '|');) cells.push_back(cell);
    REQUIRE(cells.size() > 4);
    std::string id = cells[4];
    id.erase(std::remove_if(id.begin(), id.end(), [](char c) { return c == '`' || c == ' '; }), id.end());
    CAPTURE(line);
    REQUIRE(beside.count(id));
    CHECK(beside[id] <= 1);
    ++rows;
  }
  CHECK(rows >= 3);
  MESSAGE(parallel_in_raw_top << " of the 10 slowest first tokens were parallel requests; the ticket lists " << rows
                                << " requests, none of them sent beside another");
}

TEST_CASE("probe: a reasoning model's thinking on a line of its own") {
  auto server = test::start_fake(R"({"models": {"o3-mini": {"overhead_ms": 20, "decode_ms_per_token": 2, "reasoning_tokens": 40}}})");
  const auto r = run({"probe", "--base-url", server->base_url(), "--model", "o3-mini", "--max-tokens", "16"}, false);
  CAPTURE(r.out);
  CHECK(r.out.find("reasoning    40 tokens (hidden: counted in usage, not streamed); first answer token at ") != std::string::npos);
}

}  // namespace infdoctor
