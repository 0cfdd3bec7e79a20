// The end-to-end matrix: for every fault `infdoctor demo` can plant, the real binary runs the quick
// checklist against the fake provider and the diagnosis must name the planted cause first (for
// two-cause faults: the larger first, the other found too; for `healthy`: nothing above info).
// Prints one line per scenario and a closing "N passed, N failed"; exits non-zero on a failure.
// The table is also written to build/tests/artifacts/demo_matrix.txt.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake/demo_faults.h"
#include "fake/lab.h"
#include "net/subprocess.h"
#include "support/timing.h"

// The binary it drives: this build's, or INFDOCTOR_TEST_BIN's (a copy of a build, so that the
// build tree can change while the matrix runs).
std::string driven(const char* variable, const char* built) {
  const char* other = std::getenv(variable);
  return other && *other ? other : built;
}

int main(int argc, char** argv) {
  using namespace infdoctor;
  if (argc > 1) {
    const bool help = std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h";
    std::fprintf(help ? stdout : stderr,
                 "%susage: demo_matrix (no arguments)\nEvery fault `infdoctor demo` plants, the diagnosis checked; the "
                 "table goes to build/tests/artifacts/demo_matrix.txt. INFDOCTOR_TEST_BIN drives another binary.\n",
                 help ? "" : ("demo_matrix: unknown argument " + std::string(argv[1]) + "\n").c_str());
    return help ? 0 : 64;
  }
  struct Outcome {
    std::string fault, expected, got, top_ms;
    bool pass = false;
  };
  // Faults planted on the namespace lab need root; elsewhere they are listed as skipped.
  const auto lab_missing = fake::Lab::unavailable_reason();
  std::vector<const fake::DemoFault*> faults;
  for (const auto& f : fake::demo_faults())
    if (f.unavailable.empty() && !(f.lab_delay_ms >= 0 && lab_missing)) faults.push_back(&f);
  std::vector<Outcome> outcomes(faults.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < faults.size(); i = next++) {
      const auto& f = *faults[i];
      Outcome& o = outcomes[i];
      o.fault = f.name;
      for (const auto& c : f.expect) o.expected += (o.expected.empty() ? "" : ">") + c;
      if (o.expected.empty()) o.expected = "(healthy)";
      auto r = net::run_command({driven("INFDOCTOR_TEST_BIN", INFDOCTOR_BIN), "demo", "--fault", f.name, "--json", "-"}, std::chrono::seconds(240));
      if (!r.ok() || r->timed_out) {
        o.got = "did not finish";
        continue;
      }
      const auto j = nlohmann::json::parse(r->out, nullptr, false);
      if (j.is_discarded() || !j.contains("diagnosis")) {
        o.got = "no results (exit " + std::to_string(r->exit_code) + ")";
        continue;
      }
      std::vector<std::string> causes;
      double top = 0;
      for (const auto& d : j["diagnosis"]) {
        if (d["severity"] == "info") continue;
        if (causes.empty()) top = d["impact_ms"].get<double>();
        causes.push_back(d["cause"].is_string() ? d["cause"].get<std::string>() : "limit");
      }
      for (const auto& c : causes) o.got += (o.got.empty() ? "" : ">") + c;
      if (o.got.empty()) o.got = "(healthy)";
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0f", top);
      o.top_ms = causes.empty() ? "-" : buf;
      o.pass = fake::diagnosis_matches(f, causes);
    }
  };
  std::vector<std::thread> pool;
  // Four at a time on two cores: a row waits on its planted delays (19 rows take 4 s of CPU in all),
  // and the matrix is the longest of the tests that run beside others. Two under the sanitizers,
  // where each row costs several times the CPU.
  const int at_once = infdoctor::test::kTimingSlack > 1 ? 2 : 4;
  for (int t = 0; t < at_once; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();

  std::string table;
  char line[512];
  std::snprintf(line, sizeof line, "%-28s %-30s %-44s %8s  %s\n", "scenario", "expected", "got (causes above info)",
                "top ms", "result");
  table += line;
  int passed = 0, failed = 0;
  for (const auto& o : outcomes) {
    (o.pass ? passed : failed)++;
    std::snprintf(line, sizeof line, "%-28s %-30s %-44s %8s  %s\n", o.fault.c_str(), o.expected.c_str(), o.got.c_str(),
                  o.top_ms.c_str(), o.pass ? "pass" : "FAIL");
    table += line;
  }
  for (const auto& f : fake::demo_faults()) {
    if (!f.unavailable.empty()) {
      std::snprintf(line, sizeof line, "%-28s %-30s not planted by the demo yet: %s\n", f.name.c_str(),
                    f.expect.front().c_str(), f.unavailable.c_str());
      table += line;
    } else if (f.lab_delay_ms >= 0 && lab_missing) {
      std::snprintf(line, sizeof line, "%-28s %-30s skipped: %s\n", f.name.c_str(), f.expect.front().c_str(),
                    lab_missing->c_str());
      table += line;
    }
  }
  std::snprintf(line, sizeof line, "%d passed, %d failed\n", passed, failed);
  table += line;
  std::fputs(table.c_str(), stdout);
  const auto dir = std::filesystem::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "demo_matrix.txt") << table;
  return failed == 0 ? 0 : 1;
}
