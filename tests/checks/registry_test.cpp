// Every registered check has its row in checks/README.md and its own test file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/concurrency.h"
#include "checks/registry.h"
#include "core/strings.h"

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
    for (const auto& m : e.info->metrics) declared.insert(m.name);
    const std::set<std::string> documented = documented_metrics(ss.str(), e.id);
    for (const auto& name : declared) CHECK_MESSAGE(documented.count(name), "checks/README.md does not list " << name);
    for (const auto& name : documented) CHECK_MESSAGE(declared.count(name), "checks/README.md lists undeclared " << name);
  }
}

TEST_CASE("registry: a check reads exactly the settings it declares, and every default passes its declaration") {
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    checks::Options o;
    (void)e.make(o);
    std::set<std::string> declared;
    // A list capped by another check's setting (the load's users by the cap on parallel streams)
    // reads that cap too: a dependency its declaration names.
    std::set<std::string> caps;
    for (const auto& s : e.info->settings)
      if (s.capped_by && s.capped_by->check() != e.id) caps.insert(s.capped_by->key);
    for (const auto& s : e.info->settings) {
      CAPTURE(s.key);
      CHECK(declared.insert(s.key).second);
      CHECK(s.check() == e.id);
      CHECK(std::string(s.help).size() > 5);
      CHECK(checks::setting_problem(s, s.def) == "");
      CHECK(checks::find_setting(s.key) != nullptr);
    }
    std::set<std::string> expected = declared;
    expected.insert(caps.begin(), caps.end());
    CHECK(o.asked() == expected);
    CHECK(o.errors().empty());
  }
}

TEST_CASE("registry: checks/README.md's settings table lists every declared setting with its default") {
  std::ifstream readme(std::string(INFDOCTOR_SOURCE_DIR) + "/checks/README.md");
  REQUIRE(readme.good());
  std::map<std::string, std::string> documented;  // key -> default
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const auto cells = core::split(line.substr(2), '|');
    if (cells.size() < 3) continue;
    const auto trim = [](std::string t) {
      while (!t.empty() && t.front() == ' ') t.erase(t.begin());
      while (!t.empty() && t.back() == ' ') t.pop_back();
      return t;
    };
    const std::string key = trim(cells[0]);
    if (key.find('.') != std::string::npos && key.find(' ') == std::string::npos) documented[key] = trim(cells[1]);
  }
  std::map<std::string, std::string> declared;
  for (const auto& e : checks::registry())
    for (const auto& s : e.info->settings) declared[s.key] = s.def;
  CHECK(documented == declared);
}

TEST_CASE("registry: a value a setting refuses is named with what it accepts, a capped list with its cap") {
  namespace cs = checks::concurrency_setting;
  CHECK(checks::setting_problem(cs::levels, "1,2,4") == "");
  CHECK(checks::setting_problem(cs::levels, "1,4,2") ==
        "concurrency.levels: '1,4,2' is not an ascending list of numbers in [1, 4096], none above concurrency.max_streams");
  CHECK(checks::setting_problem(cs::levels, "") != "");
  CHECK(checks::setting_problem(cs::levels, "1,2,,4") != "");
  CHECK(checks::setting_problem(cs::levels, "1,2,16", 8.0) == "concurrency.levels: 16 is above concurrency.max_streams (8)");
  CHECK(checks::setting_problem(cs::max_streams, "8.5") == "concurrency.max_streams: '8.5' is not a whole number in [1, 4096]");
  CHECK(checks::setting_problem(cs::max_streams, "nan") != "");
  CHECK(checks::setting_problem(cs::max_streams, "1e3") == "");
  // A getter meeting a bad value anyway falls back to the default and keeps the problem.
  checks::Options o;
  o.set(cs::max_streams, "many");
  CHECK(o.whole(cs::max_streams) == 64);
  REQUIRE(o.errors().size() == 1);
  CHECK(o.errors()[0] == "concurrency.max_streams: 'many' is not a whole number in [1, 4096]");
}

}  // namespace infdoctor
