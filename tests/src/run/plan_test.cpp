// The plan: profiles, flags and --set read through the checks' declared settings, every problem
// found before anything is sent, and each check the run takes made once.
#include "run/plan.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include "checks/concurrency.h"
#include "checks/load.h"
#include "checks/soak.h"
#include "checks/sweep.h"
#include "core/strings.h"

namespace infdoctor::run {
namespace {

// The concurrency levels the plan's steps send, in order (the HTTP/2 repeat left out).
std::vector<long long> levels_of(const RunPlan& plan) {
  std::vector<long long> out;
  for (const auto& p : planned_steps(plan, {"Qwen2.5-7B-Instruct", ""}))
    if (p.check == "concurrency" && p.step.what.find("HTTP/2") == std::string::npos) out.push_back(p.step.requests);
  return out;
}

}  // namespace

TEST_CASE("plan: --max-concurrency leaves out the levels above it that the user did not give, and refuses those given") {
  PlanOptions o;
  o.checks = "concurrency";
  o.max_concurrency = 8;
  auto plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(levels_of(plan.value()) == std::vector<long long>{1, 2, 4, 8});
  o.full = true;  // the profile's 1..64
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(levels_of(plan.value()) == std::vector<long long>{1 * 2, 2 * 2, 4 * 2, 8 * 2});  // --full: two rounds
  o.full = false;
  o.max_concurrency = 3;  // below every level but 1 and 2
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(levels_of(plan.value()) == std::vector<long long>{1, 2});
  o.concurrency = "1,16";
  o.max_concurrency = 8;
  const auto refused = make_plan(o);
  REQUIRE(!refused.ok());
  CHECK(refused.error().detail == "concurrency.levels: 16 is above concurrency.max_streams (8)");
  o.concurrency.clear();
  o.sets = {"concurrency.levels=2,32"};
  REQUIRE(!make_plan(o).ok());
}

TEST_CASE("plan: every setting problem at once, named, and nothing made") {
  PlanOptions o;
  o.sets = {"sweep.repeats=0", "sweep.prompt_tokens=512,64", "path.trace=icmp", "transport.sample=3", "nothing=1",
            "coldstart.idle_gaps=0,x", "soak.minutes=-1", "baseline.samples=2.5"};
  o.checks = "dns,bogus";
  const auto plan = make_plan(o);
  REQUIRE(!plan.ok());
  const auto lines = core::split(plan.error().detail, '\n');
  CHECK(lines.size() == 9);
  for (const char* want : {"unknown check 'bogus'", "sweep.repeats: '0' is not a whole number in [1, 100]",
                           "sweep.prompt_tokens: '512,64' is not an ascending list", "path.trace: 'icmp' is not one of",
                           "'transport.sample' is no setting of that check (its settings: samples, max_addresses, path)",
                           "option 'nothing' names no check", "coldstart.idle_gaps: '0,x'", "soak.minutes: '-1'",
                           "baseline.samples: '2.5' is not a whole number"}) {
    CAPTURE(want);
    CHECK(plan.error().detail.find(want) != std::string::npos);
  }
}

TEST_CASE("plan: soak is off unless its minutes are given, by flag or by --set, and each check is made once") {
  PlanOptions o;
  auto plan = make_plan(o);
  REQUIRE(plan.ok());
  std::vector<std::string> ids;
  for (const auto& c : plan->checks) ids.push_back(c->info().id);
  CHECK(core::join(ids, ",") == "dns,path,transport,coldstart,baseline,sweep,serialization,concurrency");
  o.sets = {"soak.minutes=0.5"};
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->checks.back()->info().id == "soak");
  o.sets.clear();
  o.soak_minutes = 2;
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->checks.back()->info().id == "soak");
  CHECK(plan->options.text(checks::soak_setting::minutes) == "2");
}

TEST_CASE("plan: the cache check runs only when named, and +ID adds a check to the default ones") {
  const auto ids = [](const RunPlan& plan) {
    std::vector<std::string> out;
    for (const auto& c : plan.checks) out.push_back(c->info().id);
    return core::join(out, ",");
  };
  PlanOptions o;
  o.checks = "+cache";
  auto plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(ids(plan.value()) == "dns,path,transport,coldstart,baseline,sweep,cache,serialization,concurrency");
  o.checks = "cache,baseline";  // named: those alone, in run order
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(ids(plan.value()) == "baseline,cache");
  o.checks = "+bogus";
  REQUIRE(!make_plan(o).ok());
}

TEST_CASE("plan: the workload's prompt reaches the sweep through its declared setting") {
  PlanOptions o;
  o.checks = "sweep";
  o.workload = "prompt=12000,output=200";
  const auto plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->options.whole(checks::sweep_setting::workload_prompt_tokens) == 12000);
  long long largest = 0;
  for (const auto& p : planned_steps(plan.value(), {"Llama-3.1-70B-Instruct", ""}))
    largest = std::max(largest, p.step.prompt_tokens);
  CHECK(largest >= 12000);
}

TEST_CASE("plan: the load check takes the workload's shape and --slo's request limits, unless --set says otherwise") {
  namespace ls = checks::load_setting;
  PlanOptions o;
  o.checks = "load";
  o.workload = "prompt=3000,output=400";
  o.slo = "ttft_p90_ms=900,ttft_p50_ms=600,total_p50_ms=20000,dns_p50_ms=50";
  auto plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->options.whole(ls::prompt_tokens) == 3000);
  CHECK(plan->options.whole(ls::max_tokens) == 400);
  CHECK(plan->options.whole(checks::soak_setting::prompt_tokens) == 3000);  // a soak on the workload too
  CHECK(plan->options.whole(checks::soak_setting::max_tokens) == 400);
  CHECK(plan->options.number(ls::slo_ttft_ms) == 600);  // the least of the TTFT limits
  CHECK(plan->options.number(ls::slo_total_ms) == 20000);
  CHECK(plan->options.number(ls::slo_tpot_ms) == 0);  // none given
  for (const auto& p : planned_steps(plan.value(), {"Llama-3.1-70B-Instruct", ""}))
    CHECK(p.step.prompt_tokens == 3000);
  {  // sizes beyond what a setting takes are held to it, not refused: the run is the workload's
    PlanOptions edge = o;
    edge.workload = "prompt=0,output=1";
    const auto p = make_plan(edge);
    REQUIRE_MESSAGE(p.ok(), (p.ok() ? std::string() : p.error().detail));
    CHECK(p->options.whole(ls::prompt_tokens) == 1);
    CHECK(p->options.whole(checks::soak_setting::max_tokens) == 2);
  }
  o.sets = {"load.slo_ttft_ms=1500", "load.max_tokens=64"};
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->options.number(ls::slo_ttft_ms) == 1500);
  CHECK(plan->options.whole(ls::max_tokens) == 64);
  o.sets = {"load.rates=0.5,2", "load.levels=10,5"};  // rates take over; levels must still be a valid list
  CHECK_FALSE(make_plan(o).ok());
  // --max-concurrency caps the load's users as it caps the concurrency check's streams.
  o.sets = {};
  o.max_concurrency = 12;
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->options.numbers(ls::levels) == std::vector<double>{5, 10});
  o.sets = {"load.levels=5,20"};
  CHECK_FALSE(make_plan(o).ok());
  // A mix that does not read is named before anything is sent; one that does plans its mean.
  o.max_concurrency = 0;
  o.sets = {"load.mix=chat:0.7:100-500,docs:x:4000:512"};
  const auto bad = make_plan(o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().detail.find("load.mix: 'chat:0.7:100-500': a set is NAME:SHARE:PROMPT:OUTPUT") != std::string::npos);
  CHECK(bad.error().detail.find("load.mix: 'docs:x:4000:512': the share is a number above 0") != std::string::npos);
  o.sets = {"load.mix=chat:7:100-500:128,docs:3:4000-16000:512"};
  plan = make_plan(o);
  REQUIRE(plan.ok());
  for (const auto& p : planned_steps(plan.value(), {"Llama-3.1-70B-Instruct", ""})) {
    CHECK(p.step.prompt_tokens == 3210);  // 0.7 x 300 + 0.3 x 10,000
    CHECK(p.step.max_tokens == 243);      // 0.7 x 128 + 0.3 x 512, rounded
  }
}

TEST_CASE("plan: --body turns the replay on, and a body file that cannot be read or is not a chat stops the run first") {
  PlanOptions o;
  o.body = "/nonexistent/body.json";
  auto plan = make_plan(o);
  REQUIRE(!plan.ok());
  CHECK(plan.error().message == "--body /nonexistent/body.json: cannot read it");
  const std::string path = "/tmp/infdoctor-plan-test-body.jsonl";
  std::ofstream(path) << "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{broken\n";
  o.body = path;
  plan = make_plan(o);
  REQUIRE(!plan.ok());
  CHECK(plan.error().detail.find("replay.body: line 2 is not a JSON object") != std::string::npos);
  std::ofstream(path) << "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n";
  plan = make_plan(o);
  REQUIRE(plan.ok());
  CHECK(plan->checks.back()->info().id == "concurrency");
  bool replay = false;
  for (const auto& c : plan->checks) replay = replay || c->info().id == "replay";
  CHECK(replay);
  o.checks = "baseline";  // a body the run would not send is refused, not ignored
  plan = make_plan(o);
  REQUIRE(!plan.ok());
  CHECK(plan.error().message == "--body is sent by the replay check, which --checks leaves out: add replay to --checks");
  o.checks = "baseline,replay";
  CHECK(make_plan(o).ok());
  o.checks = "+cache";  // the default checks and the cache: the replay is among the defaults with a body
  CHECK(make_plan(o).ok());
  std::remove(path.c_str());
}

}  // namespace infdoctor::run
