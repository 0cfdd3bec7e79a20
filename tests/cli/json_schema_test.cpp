// The JSON contract: real output of run, demo and probe (answered and failed) validates against
// src/report/schema/infdoctor.schema.json with python3-jsonschema, and the schema is strict
// enough to refuse what the contract forbids ("" or 0 for an unmeasured value).
#include <doctest/doctest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;

net::CommandResult command(const std::vector<std::string>& argv) {
  auto r = net::run_command(argv, 180s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

net::CommandResult validate(const std::vector<std::string>& files) {
  std::vector<std::string> argv = {"python3", INFDOCTOR_SOURCE_DIR "/tests/support/validate_json.py",
                                   INFDOCTOR_SOURCE_DIR "/src/report/schema/infdoctor.schema.json"};
  argv.insert(argv.end(), files.begin(), files.end());
  return command(argv);
}

}  // namespace

TEST_CASE("results.json and probe --json validate against the schema, and unmeasured is null") {
  auto server = test::start_fake(R"({"api_key": "sk-schema-key-0123456789",
      "models": {"m": {"overhead_ms": 5, "decode_ms_per_token": 1, "timing_headers": true},
                 "s": {"overhead_ms": 2, "decode_ms_per_token": 1}}})");
  const test::TempFile key("sk-schema-key-0123456789", "key");
  const std::string dir = key.dir();
  const std::string bin = test::infdoctor_bin();
  auto r = command({bin, "run", "--base-url", server->base_url(), "--api-key-file", key.path(), "--model", "m",
                    "--small-model", "s", "--checks", "transport,baseline,sweep", "--quick", "-s", "--json",
                    dir + "/run.json"});
  const int run_code = r.exit_code;
  CHECK(run_code <= 1);
  r = command({bin, "probe", "--base-url", server->base_url(), "--api-key-file", key.path(), "--model", "m", "--json",
               dir + "/probe.json"});
  CHECK(r.exit_code == 0);
  // Refused: a 401 answer, and no answer at all.
  r = command({bin, "probe", "--base-url", server->base_url(), "--model", "m", "--json", dir + "/probe-401.json"});
  CHECK(r.exit_code == 3);
  r = command({bin, "probe", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--json", dir + "/probe-refused.json"});
  CHECK(r.exit_code == 3);
  r = command({bin, "run", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--checks", "baseline", "--quick",
               "-s", "--json", dir + "/run-refused.json"});
  CHECK(r.exit_code == 3);
  const auto v = validate({dir + "/run.json", dir + "/probe.json", dir + "/probe-401.json", dir + "/probe-refused.json",
                           dir + "/run-refused.json"});
  CHECK_MESSAGE(v.exit_code == 0, v.out << v.err);

  std::ifstream in(dir + "/probe-refused.json");
  const auto refused = nlohmann::json::parse(in);
  CHECK(refused["http_status"].is_null());
  CHECK(refused["remote_ip"].is_null());
  CHECK(refused["request_id"].is_null());
  CHECK(refused["error"] == "connect_failed");
  CHECK(refused["failed_phase"] == "connect");
  std::ifstream run_in(dir + "/run.json");
  const auto run = nlohmann::json::parse(run_in);
  CHECK(run["models"]["target"] == "m");
  CHECK(run["models"]["small"] == "s");
  CHECK(run["exit_code"] == run_code);
  CHECK(run["infdoctor_version"].is_string());
  // The fake's server-timing header is read into each sample.
  bool timing_seen = false;
  for (const auto& s : run["checks"]["baseline"]["samples"])
    timing_seen = timing_seen || (s["server_timing_ms"].is_object() && !s["server_timing_ms"].empty());
  CHECK(timing_seen);

  // The schema refuses what the contract forbids.
  auto broken = refused;
  broken["http_status"] = 0;
  std::ofstream(dir + "/broken-status.json") << broken.dump();
  broken = refused;
  broken["request_id"] = "";
  std::ofstream(dir + "/broken-id.json") << broken.dump();
  for (const char* name : {"/broken-status.json", "/broken-id.json"}) {
    const auto bad = validate({dir + name});
    CHECK_MESSAGE(bad.exit_code == 1, name << ": " << bad.out << bad.err);
  }
}

}  // namespace infdoctor
