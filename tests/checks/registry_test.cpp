// Every registered check has its row in checks/README.md and its own test file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/registry.h"

namespace infdoctor {

TEST_CASE("registry: ids are unique, documented and tested, and metrics carry their check id and a unit") {
  const std::string root = INFDOCTOR_SOURCE_DIR;
  std::ifstream readme(root + "/checks/README.md");
  REQUIRE(readme.good());
  std::stringstream ss;
  ss << readme.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> ids;
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    CHECK(ids.insert(e.id).second);
    CHECK_MESSAGE(doc.find("| " + e.id + " |") != std::string::npos, "checks/README.md has no row for " << e.id);
    CHECK_MESSAGE(std::filesystem::exists(root + "/tests/checks/" + e.id + "_test.cpp"), "no test file for " << e.id);
    const auto check = e.make(checks::Options{});
    CHECK(check->info().id == e.id);
    for (const auto& metric : check->info().metrics) {
      CAPTURE(metric.name);
      CHECK(metric.name.rfind(e.id + ".", 0) == 0);
      const std::string unit = metric.name.substr(metric.name.rfind('_') + 1);
      CHECK(std::set<std::string>{"ms", "us", "s", "bytes", "count", "ratio", "pct", "token", "tokens", "kb", "mb"}
                .count(unit) == 1);
    }
  }
}

namespace {

// "a_{p50,p90}_ms" -> {"a_p50_ms", "a_p90_ms"}; every brace group expands.
std::vector<std::string> expand_braces(const std::string& text) {
  const auto open = text.find('{');
  const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
  if (close == std::string::npos) return {text};
  std::vector<std::string> out;
  std::stringstream alternatives(text.substr(open + 1, close - open - 1));
  for (std::string alt; std::getline(alternatives, alt, ',');)
    for (const auto& rest : expand_braces(text.substr(close + 1))) out.push_back(text.substr(0, open) + alt + rest);
  return out;
}

// The metric names a row of checks/README.md lists in its last column, as `code`.
std::set<std::string> documented_metrics(const std::string& doc, const std::string& id) {
  const auto row = doc.find("\n| " + id + " |");
  REQUIRE(row != std::string::npos);
  const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
  const std::string emits = line.substr(line.rfind('|', line.size() - 2));
  std::set<std::string> out;
  for (std::size_t at = emits.find('`'); at != std::string::npos; at = emits.find('`', at)) {
    const auto end = emits.find('`', at + 1);
    if (end == std::string::npos) break;
    for (const auto& name : expand_braces(emits.substr(at + 1, end - at - 1)))
      if (name.rfind(id + ".", 0) == 0) out.insert(name);
    at = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("registry: checks/README.md lists exactly the metrics each check declares") {
  std::ifstream readme(std::string(INFDOCTOR_SOURCE_DIR) + "/checks/README.md");
  REQUIRE(readme.good());
  std::stringstream ss;
  ss << readme.rdbuf();
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    std::set<std::string> declared;
    for (const auto& m : e.make(checks::Options{})->info().metrics) declared.insert(m.name);
    const std::set<std::string> documented = documented_metrics(ss.str(), e.id);
    for (const auto& name : declared) CHECK_MESSAGE(documented.count(name), "checks/README.md does not list " << name);
    for (const auto& name : documented) CHECK_MESSAGE(declared.count(name), "checks/README.md lists undeclared " << name);
  }
}

}  // namespace infdoctor
