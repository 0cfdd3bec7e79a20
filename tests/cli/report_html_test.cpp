// report.html in a real browser: headless Chromium (Debian's package) loads it without console
// errors and shows every plot. The screenshot stays in build/tests/artifacts/ for people to look at.
// Skipped, with the reason, where Chromium is not installed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "net/subprocess.h"
#include "support/fake_process.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

const char* kChromium = "/usr/bin/chromium";

// Runs headless Chromium on a local file; returns what it printed (the DOM with --dump-dom) and
// its log, where page console messages appear as "CONSOLE" lines.
net::CommandResult chromium(const std::string& user_dir, const std::string& url, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {kChromium,         "--headless",          "--no-sandbox",
                                   "--disable-gpu",   "--disable-quic",      "--no-first-run",
                                   "--disable-background-networking",        "--disable-component-update",
                                   "--disable-sync",  "--user-data-dir=" + user_dir,
                                   "--enable-logging=stderr", "--v=0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(url);
  auto r = net::run_command(argv, 90s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  return r.value();
}

std::vector<std::string> console_errors(const std::string& log) {
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("CONSOLE") != std::string::npos) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("report.html loads in headless Chromium without console errors and shows every plot") {
  if (::access(kChromium, X_OK) != 0) {
    MESSAGE("skipped: " << kChromium << " is not installed (apt-get install chromium)");
    return;
  }
  auto server = test::start_fake(R"({"models": {
      "big": {"overhead_ms": 80, "prefill_ms_per_token": 0.05, "decode_ms_per_token": 6, "cold_start": {"idle_s": 2, "penalty_ms": 400}},
      "small": {"overhead_ms": 30, "decode_ms_per_token": 2}}})");
  test::TempFile holder("", "unused");
  const fs::path work = fs::path(holder.path()).parent_path();
  const std::string bundle = (work / "bundle").string();
  auto run = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "big",
                               "--small-model", "small", "--quick", "--idle-gaps", "0,1,3", "--bundle", bundle},
                              120s);
  REQUIRE(run.ok());
  REQUIRE(fs::exists(bundle + "/report.html"));
  const std::string url = "file://" + bundle + "/report.html";

  // The detector itself: a page that logs an error must be caught.
  std::ofstream(work / "bad.html") << "<!DOCTYPE html><html><body><script>console.error('planted error')</script></body></html>";
  const auto bad = chromium((work / "profile-bad").string(), "file://" + (work / "bad.html").string(), {"--dump-dom"});
  REQUIRE_MESSAGE(!console_errors(bad.err).empty(), "the console detector saw nothing on a page that logs an error");

  const auto dom = chromium((work / "profile-dom").string(), url, {"--dump-dom"});
  CHECK(dom.exit_code == 0);
  const auto errors = console_errors(dom.err);
  CHECK_MESSAGE(errors.empty(), "console: " << (errors.empty() ? "" : errors.front()));
  for (const char* plot : {"ttft-vs-prompt", "latency-vs-concurrency", "throughput-vs-concurrency", "ttft-vs-idle-gap",
                           "hop-rtts", "phase-breakdown"}) {
    CAPTURE(plot);
    const std::regex fig(std::string("<figure data-plot=\"") + plot + "\"><svg[^>]*data-points=\"([0-9]+)\"[^>]*>(.*?)</svg>");
    std::smatch m;
    REQUIRE(std::regex_search(dom.out, m, fig));
    CHECK(std::stoi(m[1].str()) > 0);  // data were drawn
    CHECK((m[2].str().find("<circle") != std::string::npos || m[2].str().find("<rect") != std::string::npos));
    CHECK(m[2].str().find("not measured") == std::string::npos);
  }

  const fs::path artifacts = fs::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts";
  fs::create_directories(artifacts);
  const std::string png = (artifacts / "report.png").string();
  fs::remove(png);
  const auto shot = chromium((work / "profile-shot").string(), url, {"--screenshot=" + png, "--window-size=1280,2200",
                                                                     "--hide-scrollbars"});
  CHECK(shot.exit_code == 0);
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 20000);
  MESSAGE("screenshot: " << png);
}

}  // namespace infdoctor
