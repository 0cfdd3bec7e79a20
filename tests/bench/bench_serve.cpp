// Benchmark, run on demand (never by ctest): what `infdoctor serve` costs the host it runs on over
// a long stretch of scheduled runs. A fake provider (in this process) serves two models; the
// exporter (its own process) runs the quick checklist every --quick-interval and a probe every
// --probe-interval, and this program scrapes /metrics every --scrape seconds as Prometheus would.
// At each scrape it reads the exporter's CPU time (utime + stime, /proc/PID/stat) and resident
// memory (VmRSS), and whether a run was in progress. It prints a row every ten minutes and then:
//   - RSS after the first quick run, at the end, the highest, and its slope over the rest (a leak
//     shows as a slope that does not flatten);
//   - CPU between runs: the exporter's CPU time over the scrape intervals in which no run was in
//     progress and none ended, as a share of one core;
//   - CPU over the whole stretch, runs included.
//   build/tests/bench_serve [--minutes 60] [--quick-interval 600] [--probe-interval 60] [--scrape 15]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake/scenario.h"
#include "fake/server.h"
#include "http/client.h"
#include "prom/exposition.h"
#include "support/spawn.h"

using namespace infdoctor;

namespace {

struct Reading {
  double t_s = 0;
  double cpu_s = 0;
  double rss_mb = 0;
  double in_progress = 0;
  double quick_runs = 0, probe_runs = 0;
};

double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(text.substr(close + 2));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(w);
  if (f.size() < 13) return 0;
  // Fields 14 and 15 of stat are the 12th and 13th after the state (field 3).
  return (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double rss_mb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0;
}

double arg(int argc, char** argv, const char* name, double fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atof(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const double minutes = arg(argc, argv, "--minutes", 60);
  const double quick_every = arg(argc, argv, "--quick-interval", 600);
  const double probe_every = arg(argc, argv, "--probe-interval", 60);
  const double scrape_every = arg(argc, argv, "--scrape", 15);

  auto scenario = fake::parse_scenario(
      R"({"models": {"big": {"overhead_ms": 60, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 8, "jitter_ms": 2},
                     "small": {"overhead_ms": 30, "prefill_ms_per_token": 0.01, "decode_ms_per_token": 3}}, "seed": 3})",
      "bench");
  if (!scenario.ok()) return 1;
  auto server = fake::Server::start(scenario.value(), {});
  if (!server.ok()) return 1;
  const std::string url = (*server)->base_url();
  const auto dir = std::filesystem::temp_directory_path() / ("infdoctor-bench-serve-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string listen = "127.0.0.1:" + std::to_string(20000 + ::getpid() % 20000);
  test::Child serve({INFDOCTOR_BIN, "serve", "--listen", listen, "--bundles", (dir / "bundles").string(), "--keep-bundles",
                     "3", "--vantage", "bench", "--target",
                     "q=" + url + ",model=big,small=small,module=quick,budget=100000,interval=" +
                         std::to_string(static_cast<int>(quick_every)) + "s",
                     "--target", "p=" + url + ",model=big,module=probe,budget=100000,interval=" +
                         std::to_string(static_cast<int>(probe_every)) + "s"},
                    {}, (dir / "serve.out").string(), (dir / "serve.err").string());
  if (!serve.ok()) return 1;

  http::Client client;
  std::vector<Reading> readings;
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(minutes * 60);
  std::printf("| minute | RSS MB | CPU %% of a core, last 10 min | quick runs | probes |\n|---|---|---|---|---|\n");
  std::fflush(stdout);
  double next_row = 0;
  for (auto next = t0; next < end; next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                         std::chrono::duration<double>(scrape_every))) {
    std::this_thread::sleep_until(next);
    http::Request req;
    req.url = "http://" + listen + "/metrics";
    req.proxy = "";
    req.timeout = std::chrono::seconds(10);
    const auto resp = client.perform(req);
    Reading r;
    r.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.cpu_s = cpu_seconds(serve.pid());
    r.rss_mb = rss_mb(serve.pid());
    if (auto e = prom::parse_exposition(resp.body); e.ok()) {
      r.in_progress = prom::sum(*e, "infdoctor_run_in_progress").value_or(0);
      r.quick_runs = prom::sum(*e, "infdoctor_runs_total", {{"target", "q"}, {"outcome", "completed"}}).value_or(0);
      r.probe_runs = prom::sum(*e, "infdoctor_runs_total", {{"target", "p"}, {"outcome", "completed"}}).value_or(0);
    }
    readings.push_back(r);
    if (r.t_s >= next_row) {
      double cpu = 0;
      for (const auto& p : readings)
        if (p.t_s >= r.t_s - 600) {
          cpu = (r.cpu_s - p.cpu_s) / std::max(1.0, r.t_s - p.t_s) * 100;
          break;
        }
      std::printf("| %.0f | %.1f | %.3f | %.0f | %.0f |\n", r.t_s / 60, r.rss_mb, cpu, r.quick_runs, r.probe_runs);
      std::fflush(stdout);
      next_row += 600;
    }
  }
  serve.send(SIGTERM);
  const auto exit = serve.wait(std::chrono::seconds(60));
  (*server)->stop();

  // Intervals between scrapes with no run in progress at either end and no run ended within.
  double idle_cpu = 0, idle_s = 0, idle_max = 0;
  for (std::size_t i = 1; i < readings.size(); ++i) {
    const auto &a = readings[i - 1], &b = readings[i];
    if (a.in_progress || b.in_progress || a.quick_runs != b.quick_runs || a.probe_runs != b.probe_runs) continue;
    idle_cpu += b.cpu_s - a.cpu_s;
    idle_s += b.t_s - a.t_s;
    idle_max = std::max(idle_max, (b.cpu_s - a.cpu_s) / (b.t_s - a.t_s));
  }
  // RSS after the first quick run, and its least-squares slope from there.
  std::size_t first = 0;
  while (first < readings.size() && readings[first].quick_runs < 1) ++first;
  double max_rss = 0, sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (std::size_t i = first; i < readings.size(); ++i) {
    const double x = readings[i].t_s / 3600, y = readings[i].rss_mb;
    max_rss = std::max(max_rss, y);
    sx += x, sy += y, sxx += x * x, sxy += x * y, n += 1;
  }
  const double slope = n > 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
  const Reading& last = readings.back();
  std::printf("\n| measure | value |\n|---|---|\n");
  std::printf("| stretch | %.1f min, %.0f quick runs, %.0f probes, %zu scrapes every %.0f s |\n", last.t_s / 60,
              last.quick_runs, last.probe_runs, readings.size(), scrape_every);
  if (first < readings.size())
    std::printf("| RSS after the first quick run | %.1f MB |\n", readings[first].rss_mb);
  std::printf("| RSS at the end / highest | %.1f MB / %.1f MB |\n", last.rss_mb, max_rss);
  std::printf("| RSS slope after the first quick run | %+.2f MB an hour |\n", slope);
  std::printf("| CPU between runs (%.0f s of idle intervals) | %.3f %% of a core (worst interval %.3f %%) |\n", idle_s,
              idle_s > 0 ? idle_cpu / idle_s * 100 : 0, idle_max * 100);
  std::printf("| CPU over the whole stretch | %.3f %% of a core (%.2f s) |\n", last.cpu_s / last.t_s * 100, last.cpu_s);
  std::printf("| exporter's exit on SIGTERM | %d%s |\n", exit.exit_code, exit.timed_out ? " (timed out)" : "");
  std::filesystem::remove_all(dir);
  return 0;
}
