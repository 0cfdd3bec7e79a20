// Every registered check has its row in checks/README.md and its own test file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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

}  // namespace infdoctor
