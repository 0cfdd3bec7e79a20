#pragma once
// Test support: `infdoctor run ... --json -` as a user runs it, and what tests read from its
// results.json.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor::test {

// The real binary's results.json; fails the test when it does not end within two minutes.
inline nlohmann::json run_results(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {infdoctor_bin(), "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--json", "-"});
  auto r = net::run_command(argv, std::chrono::seconds(120));
  REQUIRE(r.ok());
  CAPTURE(r->err);
  REQUIRE_FALSE(r->timed_out);
  return nlohmann::json::parse(r->out);
}

// The finding of `rule`, or nullptr.
inline const nlohmann::json* finding(const nlohmann::json& results, const std::string& rule) {
  for (const auto& f : results["diagnosis"])
    if (f["rule"] == rule) return &f;
  return nullptr;
}

// "rule (severity) ..." of every finding, for CAPTURE.
inline std::string rules_fired(const nlohmann::json& results) {
  std::string out;
  for (const auto& f : results["diagnosis"])
    out += f["rule"].get<std::string>() + " (" + f["severity"].get<std::string>() + ") ";
  return out;
}

// "rule (severity, N ms) ..." of every finding, for CAPTURE and what a test prints.
inline std::string findings_of(const nlohmann::json& results) {
  std::string out;
  for (const auto& f : results["diagnosis"])
    out += f["rule"].get<std::string>() + " (" + f["severity"].get<std::string>() + ", " +
           std::to_string(static_cast<int>(f["impact_ms"].get<double>())) + " ms) ";
  return out;
}

// The first finding above info, or null.
inline nlohmann::json top_cause(const nlohmann::json& results) {
  for (const auto& f : results["diagnosis"])
    if (f["severity"] != "info") return f;
  return nullptr;
}

}  // namespace infdoctor::test
