// `infdoctor compare` and `infdoctor run --history` as a user runs them: the real binary against
// fake providers on loopback.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

net::CommandResult infdoctor(const std::vector<std::string>& args, std::chrono::seconds timeout = 120s) {
  std::vector<std::string> argv = {test::infdoctor_bin()};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, timeout);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const nlohmann::json& layer(const nlohmann::json& cmp, const std::string& name) {
  for (const auto& l : cmp["layers"])
    if (l["layer"] == name) return l;
  FAIL("no layer " << name);
  static const nlohmann::json none;
  return none;
}

}  // namespace

TEST_CASE("compare: two providers differing only in decode speed, decode is named as the gap") {
  // The same model, the same overhead; B decodes 10x slower per token.
  auto a = test::start_fake(R"({"api_key": "sk-canary-aaaa-1111", "models": {"m": {"overhead_ms": 80, "decode_ms_per_token": 2}}})");
  auto b = test::start_fake(R"({"api_key": "sk-canary-bbbb-2222", "models": {"m": {"overhead_ms": 80, "decode_ms_per_token": 20}}})");
  ::setenv("PROVIDER_A_API_KEY", "sk-canary-aaaa-1111", 1);  // NAME_API_KEY, per side
  ::setenv("PROVIDER_B_API_KEY", "sk-canary-bbbb-2222", 1);
  const std::string dir = "/tmp/infdoctor-compare-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const auto r = infdoctor({"compare", "--a", "provider-a=" + a->base_url() + ",model=m", "--b",
                            "provider-b=" + b->base_url() + ",model=m", "--checks", "transport,baseline", "--bundle", dir,
                            "--json", "-"});
  ::unsetenv("PROVIDER_A_API_KEY");
  ::unsetenv("PROVIDER_B_API_KEY");
  CAPTURE(r.err);
  CHECK(r.exit_code == 1);  // one side is slower
  const auto j = nlohmann::json::parse(r.out);
  const auto& cmp = j["comparison"];
  CHECK(cmp["slower"] == "provider-b");
  REQUIRE(cmp["explaining"].size() >= 1);
  CHECK(cmp["explaining"][0] == "decode per output token");
  CHECK(cmp["explaining"].size() == 1);  // nothing else differs
  const auto& decode = layer(cmp, "decode per output token");
  CHECK(decode["significant"] == "yes");
  CHECK(decode["ratio"].get<double>() == doctest::Approx(10).epsilon(0.1));
  // The gap in total time is explained by decode, in milliseconds: about 18 ms x (tokens - 1).
  const double gap = cmp["total_p50_ms"]["b"].get<double>() - cmp["total_p50_ms"]["a"].get<double>();
  CHECK(decode["explains_ms"].get<double>() == doctest::Approx(gap).epsilon(0.1));
  CHECK(layer(cmp, "time to first token")["significant"] != "yes");
  // The transport layers carry intervals too: a verdict, not a guess.
  const std::string connect = layer(cmp, "TCP connect")["significant"];
  CHECK((connect == "yes" || connect == "no"));
  CHECK(j["runs"]["provider-a"]["schema"] == "infdoctor.results/1");
  CHECK(j["runs"]["provider-b"]["checks"]["baseline"]["status"] == "ok");
  // Requests were interleaved: each provider served the same number.
  CHECK(a->served().size() == b->served().size());

  // The bundle: both runs, the comparison, a summary for the slower provider; no key anywhere.
  for (const char* f : {"comparison.json", "summary.md", "provider-a/results.json", "provider-b/results.json",
                        "provider-b/samples.jsonl", "provider-b/manifest.json"}) {
    CAPTURE(f);
    CHECK(std::filesystem::exists(dir + "/" + f));
  }
  const std::string summary = slurp(dir + "/summary.md");
  CHECK(summary.find("# Latency comparison: provider-b against provider-a") != std::string::npos);
  CHECK(summary.find("decode per output token") != std::string::npos);
  CHECK(summary.find("## Questions for provider-b") != std::string::npos);
  // The slower side's slowest requests, by the ids the provider logged.
  CHECK(summary.find("## The slowest requests on provider-b") != std::string::npos);
  const auto rows = summary.find("| req-");
  REQUIRE(rows != std::string::npos);
  bool served_by_b = false;
  for (const auto& s : b->served()) served_by_b = served_by_b || summary.find("| " + s.request_id + " |") != std::string::npos;
  CHECK(served_by_b);
  struct stat st{};
  REQUIRE(::stat((dir + "/summary.md").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string text = slurp(e.path());
    CAPTURE(e.path().string());
    CHECK(text.find("sk-canary") == std::string::npos);
  }
  CHECK(r.out.find("sk-canary") == std::string::npos);
  CHECK(r.err.find("sk-canary") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("compare: equal providers show no gap, bad specs are named") {
  const char* same = R"({"models": {"m": {"overhead_ms": 40, "decode_ms_per_token": 5}}})";
  auto a = test::start_fake(same);
  auto b = test::start_fake(same);
  const auto r = infdoctor({"compare", "--a", "one=" + a->base_url() + ",model=m", "--b", "two=" + b->base_url() + ",model=m",
                            "--checks", "baseline", "--json", "-"});
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["comparison"]["slower"].is_null());
  CHECK(j["comparison"]["explaining"].empty());

  const auto no_model = infdoctor({"compare", "--a", "one=" + a->base_url(), "--b", "two=" + b->base_url() + ",model=m"});
  CHECK(no_model.exit_code == 64);  // a wrong command line
  CHECK(no_model.err.find("--a needs model=") != std::string::npos);
  const auto typo = infdoctor({"compare", "--a", "one=" + a->base_url() + ",modle=m", "--b", "two=" + b->base_url() + ",model=m"});
  CHECK(typo.err.find("unknown key 'modle'") != std::string::npos);
  const auto no_url = infdoctor({"compare", "--a", "one=,model=m", "--b", "two=" + b->base_url() + ",model=m"});
  CHECK(no_url.exit_code == 64);
  CHECK(no_url.err.find("--a needs a URL after NAME=") != std::string::npos);
  // Nothing measured end to end is not "within 5 %".
  const auto network_only = infdoctor({"compare", "--a", "one=" + a->base_url() + ",model=m", "--b", "two=" + b->base_url() + ",model=m",
                                       "--checks", "transport"});
  CHECK(network_only.exit_code == 3);
  CHECK(network_only.err.find("no end-to-end time on one") != std::string::npos);
  CHECK(network_only.out.find("within 5 %") == std::string::npos);
  const auto same_name = infdoctor({"compare", "--a", "x=" + a->base_url() + ",model=m", "--b", "x=" + b->base_url() + ",model=m"});
  CHECK(same_name.err.find("different names") != std::string::npos);
}

TEST_CASE("history: two runs writing one file at once, then the listing shows both") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "decode_ms_per_token": 2}}})");
  const std::string dir = "/tmp/infdoctor-history-cli-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = dir + "/history.db";
  std::vector<std::string> args = {"run", "--base-url", server->base_url(), "--model", "m", "--checks",
                                   "transport,baseline", "--history", db, "--json", "-"};
  net::CommandResult r1, r2;
  std::thread t([&] { r1 = infdoctor(args); });
  r2 = infdoctor(args);  // at the same time: both create, migrate and write the same file
  t.join();
  CHECK(r1.exit_code == 0);
  CHECK(r2.exit_code == 0);
  CAPTURE(r1.err);
  CAPTURE(r2.err);
  CHECK(r1.err.find("error") == std::string::npos);
  CHECK(r2.err.find("error") == std::string::npos);
  const auto list = infdoctor({"history", db, "--json"});
  REQUIRE(list.exit_code == 0);
  const auto j = nlohmann::json::parse(list.out);
  REQUIRE(j["runs"].size() == 2);
  CHECK(j["runs"][0]["metrics"].contains("baseline.ttft_p50_ms"));
  CHECK(j["runs"][1]["model"] == "m");
  const auto text = infdoctor({"history", db});
  CHECK(text.out.find("2 run(s), schema 2") != std::string::npos);
  CHECK(text.out.find("baseline.ttft_p50_ms") != std::string::npos);  // a trend line
  // A third run sees the first two as its past.
  const auto r3 = infdoctor(args);
  const auto j3 = nlohmann::json::parse(r3.out);
  CHECK(j3["history"]["runs_count"] == 2);
  CHECK(j3["history"]["ttft_p50_ratio"].get<double>() == doctest::Approx(1).epsilon(0.3));
  const auto missing = infdoctor({"history", dir + "/none.db"});
  CHECK(missing.exit_code == 3);
  CHECK(missing.err.find("no history file") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("history: scheduled runs whose first request finds the endpoint cold, and runs that find it warm") {
  // Four runs 2.5 s apart (the scheduler's interval, planted): an endpoint that goes cold after
  // 1.5 s idle makes every run's first request after the first run pay its 700 ms; one that goes
  // cold after 60 s never does.
  for (const double idle_s : {1.5, 60.0}) {
    CAPTURE(idle_s);
    auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 40, "decode_ms_per_token": 2, "cold_start": {"idle_s": )" +
                                   std::to_string(idle_s) + R"(, "penalty_ms": 700}}}})");
    const std::string dir = "/tmp/infdoctor-history-first-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    nlohmann::json last;
    for (int run = 0; run < 4; ++run) {
      if (run > 0) std::this_thread::sleep_for(2500ms);
      const auto r = infdoctor({"run", "--base-url", server->base_url(), "--model", "m", "--checks", "coldstart",
                                "--idle-gaps", "0", "--history", dir + "/history.db", "--json", "-"});
      REQUIRE(r.exit_code != 3);
      last = nlohmann::json::parse(r.out);
    }
    const auto& h = last["history"];
    CAPTURE(h.dump());
    REQUIRE(h.contains("first_request_runs_count"));
    CHECK(h["first_request_runs_count"] == 4);
    CHECK(h["run_interval_median_s"].get<double>() > 2.5);
    bool fired = false;
    for (const auto& f : last["diagnosis"])
      if (f["rule"] == "history.first_request_cold") {
        fired = true;
        CHECK(f["impact_ms"].get<double>() == doctest::Approx(700).epsilon(0.15 * test::kTimingSlack));
        CHECK(f["severity"] == "warning");
      }
    if (idle_s < 2) {
      CHECK(h["first_request_cold_count"].get<int>() >= 3);
      CHECK(fired);
      CHECK(last["exit_code"] == 1);
    } else {
      CHECK(h["first_request_cold_count"] == 0);
      CHECK_FALSE(fired);
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace infdoctor

namespace infdoctor {

TEST_CASE("compare: two runs already made, one target from two vantage points, read from their bundles") {
  // The same model seen from two places: from eu-west every first token comes 300 ms later.
  auto near = test::start_fake(R"({"models": {"m": {"overhead_ms": 30, "decode_ms_per_token": 3}}})");
  auto far = test::start_fake(R"({"models": {"m": {"overhead_ms": 330, "decode_ms_per_token": 3}}})");
  test::TempFile dir("", "x");
  for (const auto& [vantage, url] : {std::pair{std::string("us-east"), near->base_url()}, {"eu-west", far->base_url()}}) {
    const auto r = infdoctor({"run", "--base-url", url, "--model", "m", "--quick", "--checks", "baseline", "-s",
                              "--target-name", "prod", "--vantage", vantage, "--bundle", dir.dir() + "/" + vantage});
    CAPTURE(r.err);
    REQUIRE(r.exit_code == 0);
  }
  const std::size_t served = near->served().size() + far->served().size();
  const auto c = infdoctor({"compare", "--a-results", "us-east=" + dir.dir() + "/us-east", "--b-results",
                            "eu-west=" + dir.dir() + "/eu-west/results.json", "--json", "-"});
  CAPTURE(c.err);
  CHECK(c.exit_code == 1);
  const auto j = nlohmann::json::parse(c.out);
  CHECK(j["comparison"]["slower"] == "eu-west");
  const auto& total = j["comparison"]["total_p50_ms"];
  const double gap = total["b"].get<double>() - total["a"].get<double>();
  MESSAGE("eu-west is " << gap << " ms slower end to end (planted 300)");
  CHECK(gap == doctest::Approx(300).epsilon(0.1));
  CHECK(near->served().size() + far->served().size() == served);  // nothing was sent
  // The two places measured different servers here, which compare says.
  CHECK(c.err.find("different targets") != std::string::npos);

  const auto wrong = infdoctor({"compare", "--a-results", "us-east=" + dir.dir() + "/us-east", "--b", "x=http://127.0.0.1:9/v1,model=m"});
  CHECK(wrong.exit_code == 64);
  CHECK(wrong.err.find("not both") != std::string::npos);
  const auto missing = infdoctor({"compare", "--a-results", "a=" + dir.dir() + "/nowhere", "--b-results", "b=" + dir.dir() + "/us-east"});
  CHECK(missing.exit_code == 3);
  CHECK(missing.err.find("nowhere") != std::string::npos);
}

}  // namespace infdoctor
