// report.html in a real browser: headless Chromium (Debian's package) loads it without console
// errors and shows every plot with data and round ticks. The screenshot stays in build/tests/artifacts/ for people to look at.
// Skipped, with the reason, where Chromium is not installed.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>

#include "core/strings.h"
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

// The tick labels of one axis of an SVG in the DOM, in order.
std::vector<std::string> tick_labels(const std::string& svg, const char* axis) {
  std::vector<std::string> out;
  const std::regex tick(std::string(R"re(<text[^>]*data-axis=")re") + axis + R"re("[^>]*>([^<]*)</text>)re");
  for (std::sregex_iterator it(svg.begin(), svg.end(), tick), end; it != end; ++it) out.push_back((*it)[1].str());
  return out;
}

// One plot's SVG in the DOM: its opening tag and what lies between it and </svg>. Found by plain
// search: libstdc++'s std::regex recurses once per character a group spans, and a whole SVG is
// deep enough to overflow the stack (under AddressSanitizer's larger frames, at 8 MB).
struct Figure {
  std::string open;
  std::string body;
};
std::optional<Figure> figure(const std::string& dom, const std::string& plot) {
  const std::string start = "<figure data-plot=\"" + plot + "\"><svg";
  const auto at = dom.find(start);
  if (at == std::string::npos) return std::nullopt;
  const auto open_end = dom.find('>', at + start.size());
  const auto close = dom.find("</svg>", open_end);
  if (open_end == std::string::npos || close == std::string::npos) return std::nullopt;
  return Figure{dom.substr(at, open_end - at), dom.substr(open_end + 1, close - open_end - 1)};
}

// Whether labels step evenly by 1, 2 or 5 times a power of ten.
bool round_steps(const std::vector<std::string>& labels) {
  if (labels.size() < 2) return false;
  const double step = std::stod(labels[1]) - std::stod(labels[0]);
  if (!(step > 0)) return false;
  for (std::size_t i = 1; i < labels.size(); ++i)
    if (std::abs(std::stod(labels[i]) - std::stod(labels[i - 1]) - step) > step * 1e-6) return false;
  const double power = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  const double m = step / power;
  return std::abs(m - 1) < 1e-6 || std::abs(m - 2) < 1e-6 || std::abs(m - 5) < 1e-6;
}

}  // namespace

TEST_CASE("report.html loads in headless Chromium without console errors, draws the reference request, the run's timeline and one stream with round ticks") {
  if (::access(kChromium, X_OK) != 0) {
    MESSAGE("skipped: " << kChromium << " is not installed (apt-get install chromium)");
    return;
  }
  // A cold start, and a 429 now and then, so the waterfall has a finding to mark and the timeline
  // refusals to place. The refusals are the small model's: a 429 on the target could fall on the
  // concurrency check's one stream and stop it before its charts have a point.
  auto server = test::start_fake(R"({"models": {
      "Llama-3.1-70B-Instruct": {"overhead_ms": 80, "prefill_ms_per_token": 0.05, "decode_ms_per_token": 6,
                                 "cold_start": {"idle_s": 2, "penalty_ms": 400}},
      "Llama-3.1-8B-Instruct": {"overhead_ms": 30, "decode_ms_per_token": 2,
                                "faults": [{"kind": "429", "every": 4, "retry_after_s": 0.2}]}}})");
  test::TempFile holder("", "unused");
  const fs::path work = fs::path(holder.path()).parent_path();
  const std::string bundle = (work / "bundle").string();
  auto run = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model",
                               "Llama-3.1-70B-Instruct", "--small-model", "Llama-3.1-8B-Instruct", "--quick", "--idle-gaps",
                               "0,1,3", "--bundle", bundle},
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
  for (const char* plot : {"reference-request", "requests-ttft", "requests-tpot", "token-arrivals", "ttft-vs-prompt",
                           "latency-vs-concurrency", "throughput-vs-concurrency", "ttft-vs-idle-gap", "hop-rtts",
                           "phase-breakdown"}) {
    CAPTURE(std::string(plot));
    const auto fig = figure(dom.out, plot);
    REQUIRE(fig.has_value());
    std::smatch points;
    REQUIRE(std::regex_search(fig->open, points, std::regex("data-points=\"([0-9]+)\"")));
    CHECK(std::stoi(points[1].str()) > 0);  // data were drawn
    const std::string& body = fig->body;
    CHECK((body.find("<circle") != std::string::npos || body.find("<rect") != std::string::npos ||
           body.find("<path") != std::string::npos));
    CHECK(body.find("not measured") == std::string::npos);
    // Every axis with ticks steps roundly; a count axis by whole numbers.
    const std::string& open = fig->open;
    for (const char* axis : {"x", "y"}) {
      const auto labels = tick_labels(body, axis);
      if (labels.empty()) continue;
      CAPTURE(axis);
      CAPTURE(core::join(labels, " "));
      CHECK(round_steps(labels));
      std::smatch counts;
      if (std::regex_search(open, counts, std::regex("data-counts=\"([xy]*)\"")) && counts[1].str().find(axis) != std::string::npos)
        for (const auto& l : labels) CHECK(l.find('.') == std::string::npos);
    }
  }
  // The waterfall marks the top finding; the timeline places the refusals.
  CHECK(dom.out.find("class=\"marked\"") != std::string::npos);
  const auto timeline = dom.out.find("id=\"requests-ttft-svg\"");
  CHECK((timeline != std::string::npos && dom.out.find("refused or limited", timeline) != std::string::npos));

  const fs::path artifacts = fs::path(INFDOCTOR_BUILD_DIR) / "tests" / "artifacts";
  fs::create_directories(artifacts);
  const std::string png = (artifacts / "report.png").string();
  fs::remove(png);
  const auto shot = chromium((work / "profile-shot").string(), url, {"--screenshot=" + png, "--window-size=1280,2400",
                                                                     "--hide-scrollbars"});
  CHECK(shot.exit_code == 0);
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 20000);
  MESSAGE("screenshot: " << png);
}

}  // namespace infdoctor
