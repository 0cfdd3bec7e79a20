// A metric's name is declared once and referred to through its declaration: the run's in
// results/run_metrics.h, a check's in its header (checks/baseline.h, ...) where other code reads it,
// else in the check's own file. No other file of src/ or checks/ spells one, in the forms a name
// takes in code: the name as rules see it ("sweep.prefill_ms_per_token"), a check id beside a
// quantity ("sweep", "prefill_ms_per_token"), or a quantity looked up in a check's metrics
// (metrics.find("prefill_ms_per_token")). A spelling found fails with its file and line.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "checks/registry.h"
#include "results/run_metrics.h"

namespace infdoctor::results {
namespace {

namespace fs = std::filesystem;

// For each name the forms match, the files (from the tree's root) that may spell it.
using Allowed = std::map<std::string, std::set<std::string>>;

// Reads lines for spellings of a name in `allowed` outside its files, in the three forms: the
// name whole; a check id and a quantity side by side; a quantity looked up in metrics.
class Scanner {
 public:
  explicit Scanner(const Allowed& allowed) : allowed_(allowed) {
    for (const auto& [name, _] : allowed)
      if (const auto dot = name.find('.'); dot != std::string::npos && name.compare(0, dot, "run") != 0)
        by_quantity_[name.substr(dot + 1)].push_back(name);
  }
  // Each spelling on `line` of `file` as "file:line name" into `out`.
  void read(const std::string& file, int n, const std::string& line, std::vector<std::string>& out) const {
    const auto note = [&](const std::string& name) {
      const auto it = allowed_.find(name);
      if (it != allowed_.end() && !it->second.count(file)) out.push_back(file + ":" + std::to_string(n) + " " + name);
    };
    for (std::sregex_iterator it(line.begin(), line.end(), whole_), end; it != end; ++it) note((*it)[1]);
    for (std::sregex_iterator it(line.begin(), line.end(), pair_), end; it != end; ++it)
      note(std::string((*it)[1]) + "." + std::string((*it)[2]));
    for (std::sregex_iterator it(line.begin(), line.end(), lookup_), end; it != end; ++it) {
      const auto q = by_quantity_.find((*it)[1]);
      if (q == by_quantity_.end()) continue;
      // Spelled where any check that declares this quantity may spell it: that check's own.
      bool own = false;
      for (const auto& name : q->second) own = own || allowed_.at(name).count(file);
      if (!own) out.push_back(file + ":" + std::to_string(n) + " " + q->first);
    }
  }

 private:
  const Allowed& allowed_;
  std::map<std::string, std::vector<std::string>> by_quantity_;  // "prefill_ms_per_token" -> its full names
  const std::regex whole_{R"re("([a-z]+\.[a-z0-9_]+)")re"}, pair_{R"re("([a-z]+)", "([a-z0-9_]+)")re"},
      lookup_{R"re(metrics(?:\.find|\.at|\.count|)\s*[\(\[]\s*"([a-z0-9_]+)")re"};
};

// Every spelling in the tree's C++ sources of a name in `allowed`, outside its files.
std::vector<std::string> spellings(const Allowed& allowed) {
  const fs::path root = INFDOCTOR_SOURCE_DIR;
  const Scanner scan(allowed);
  std::vector<std::string> out;
  for (const char* dir : {"src", "checks"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const auto ext = e.path().extension();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
      const std::string file = fs::relative(e.path(), root).string();
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) scan.read(file, n, line, out);
    }
  }
  return out;
}

Allowed declared() {
  Allowed a;
  for (const auto& m : run_metrics()) a[m.name] = {"src/results/run_metrics.h"};
  for (const auto& m : checks::check_metrics()) {
    const std::string id = m.name.substr(0, m.name.find('.'));
    a[m.name] = {"checks/" + id + ".cpp", "checks/" + id + ".h"};
  }
  // The rules engine, a floor below, declares the reference request's metrics it reckons shares of.
  a[rules::kReferenceTotalMetric] = {"src/rules/rules.h"};
  a[rules::kReferenceFallbackMetric] = {"src/rules/rules.h"};
  return a;
}

std::string listed(const std::vector<std::string>& found) {
  std::ostringstream list;
  for (const auto& f : found) list << f << "\n";
  return list.str();
}

}  // namespace

TEST_CASE("metric names: each run metric declared once, as run.<quantity>_<unit>") {
  std::set<std::string> names;
  for (const auto& m : run_metrics()) {
    CAPTURE(m.name);
    CHECK(m.name.rfind("run.", 0) == 0);
    CHECK_FALSE(m.unit.empty());
    CHECK_FALSE(m.help.empty());
    CHECK(names.insert(m.name).second);
  }
  CHECK(names.size() >= 70);
}

TEST_CASE("metric names: no source file spells a metric declared elsewhere") {
  const Allowed allowed = declared();
  REQUIRE(allowed.size() >= 250);
  const auto found = spellings(allowed);
  CAPTURE(listed(found));
  CHECK(found.empty());
  // The scan finds what it looks for, in each form, outside the declaring files and not inside.
  const Scanner scan(allowed);
  const std::string lines[] = {R"(get("sweep.prefill_ms_per_token");)", R"(metric(checks, "sweep", "prefill_ms_per_token");)",
                               R"(c.metrics.find("prefill_ms_per_token");)", R"(m["run.failed_count"] = 1;)"};
  for (const auto& line : lines) {
    CAPTURE(line);
    std::vector<std::string> outside, inside;
    scan.read("src/bundle/html.cpp", 1, line, outside);
    scan.read(line.find("run.") != std::string::npos ? "src/results/run_metrics.h" : "checks/sweep.cpp", 1, line, inside);
    CHECK(outside.size() == 1);
    CHECK(inside.empty());
  }
}

}  // namespace infdoctor::results
