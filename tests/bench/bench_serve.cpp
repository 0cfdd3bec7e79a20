// Benchmark and soak, run on demand (the soak's short form also by ctest): what `infdoctor serve`
// costs the host it runs on, in two forms.
//
// An hour of scheduled runs (the default). A fake provider (in this process) serves two models; the
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
//
// A fleet (--targets N): N probe targets started together against an infdoctor-fake of their own
// (one in a hundred of them failing, 503 at every request), for --minutes. At each scrape it times
// /metrics and counts its series, and reads the exporter's RSS, open file descriptors and the
// bundles on disk; from the exporter's log it takes when each run started. It prints a row every
// --row minutes and then: how the starts spread over each interval (a herd would crowd its first
// tenth), how far each target's runs are from one interval apart, /metrics latency p50/p99/max,
// the series, RSS, descriptors and bundle disk from the end of the first round to the end, and how
// the exporter stopped. With --check it exits 1 when a bound is broken (see `Bounds`).
//   build/tests/bench_serve --targets 1000 --minutes 30 [--interval 60] [--scrape 15] [--row 5]
//                           [--keep-bundles 5] [--bundle-every 1h] [--check]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "fake/scenario.h"
#include "fake/server.h"
#include "prom/exposition.h"
#include "support/spawn.h"
#include "support/timing.h"

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

std::chrono::steady_clock::duration span(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

// GET /metrics of the exporter at `listen`, as Prometheus scrapes it: one plain libcurl handle
// for the whole stretch, its connection kept alive, the body appended and nothing else done per
// byte (infdoctor's own client stamps every chunk it reads, which a megabyte body makes costly),
// into one buffer kept from scrape to scrape as a scraper's pool keeps it: a new string grown to
// 6 MB a scrape faults its pages in afresh, 40 ms of the client's own that was read as the
// exporter's.
class Scraper {
 public:
  explicit Scraper(const std::string& listen) : easy_(curl_easy_init()), url_("http://" + listen + "/metrics") {}
  ~Scraper() { curl_easy_cleanup(easy_); }
  Scraper(const Scraper&) = delete;
  Scraper& operator=(const Scraper&) = delete;

  struct Answer {
    long status = 0;
    const std::string& body;
  };
  // The body stays valid until the next get().
  Answer get() {
    body_.clear();  // keeps its capacity
    long status = 0;
    curl_easy_setopt(easy_, CURLOPT_URL, url_.c_str());
    curl_easy_setopt(easy_, CURLOPT_PROXY, "");
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &append);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &body_);
    if (curl_easy_perform(easy_) == CURLE_OK) curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &status);
    return {status, body_};
  }

 private:
  static size_t append(char* data, size_t size, size_t n, void* body) {
    static_cast<std::string*>(body)->append(data, size * n);
    return size * n;
  }
  CURL* easy_;
  std::string url_;
  std::string body_;
};

std::string text_arg(int argc, char** argv, const char* name, const std::string& fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

// A gauge without labels from an exposition's text; -1 when it is not there.
double gauge(const std::string& body, const std::string& name) {
  const auto at = body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(body.c_str() + at + name.size() + 2);
}

bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return true;
  return false;
}

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The host's load average over the last minute: the machine is shared, and a build beside the
// exporter shows in its latency.
double host_load() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

int open_fds(pid_t pid) {
  std::error_code ec;
  int n = 0;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec), end; !ec && it != end;
       it.increment(ec))
    ++n;
  return n;
}

// Nearest-rank percentile of `v` (sorted here); 0 when empty.
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

// The address a child said it listens on: in the file at `path`, what follows the first `before`
// up to one of `after`, waited for up to `limit`; "" when it never said.
std::string address_in(const std::filesystem::path& path, const std::string& before, const std::string& after,
                       std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = slurp(path);
    if (const auto at = text.find(before); at != std::string::npos) {
      const auto from = at + before.size();
      const auto end = text.find_first_of(after, from);
      if (end != std::string::npos) return text.substr(from, end - from);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {};
}

// The exporter's JSON-lines log, read as it grows: each complete line once.
class LogTail {
 public:
  explicit LogTail(std::filesystem::path path) : path_(std::move(path)) {}
  template <typename F>
  void each_new(F&& f) {
    std::ifstream in(path_);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written: read it whole next time
      offset_ += line.size() + 1;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object()) f(j);
    }
  }

 private:
  std::filesystem::path path_;
  std::size_t offset_ = 0;
};

struct BundleDisk {
  std::size_t bundles = 0;
  double mb = 0;
};

BundleDisk bundle_disk(const std::filesystem::path& dir) {
  BundleDisk out;
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it.depth() == 1 && it->is_directory(ec) && it->path().filename().string().size() == 16) ++out.bundles;
    if (it->is_regular_file(ec)) out.mb += static_cast<double>(it->file_size(ec)) / (1024.0 * 1024.0);
  }
  return out;
}

// The series of an exposition, counted by metric name (cheaper than parsing six megabytes a scrape),
// and how many infdoctor_probe_success series read 1.
struct SeriesCount {
  std::map<std::string, std::size_t> by_name;
  std::size_t total = 0, success = 0;
};

SeriesCount count_series(const std::string& body) {
  SeriesCount out;
  static const std::string kSuccess = "infdoctor_probe_success";
  for (std::size_t at = 0; at < body.size();) {
    std::size_t end = body.find('\n', at);
    if (end == std::string::npos) end = body.size();
    if (body[at] != '#' && end > at) {
      const std::size_t name_end = std::min(body.find_first_of("{ ", at), end);
      const std::string name = body.substr(at, name_end - at);
      ++out.by_name[name];
      ++out.total;
      if (name == kSuccess && body.compare(end - 2, 2, " 1") == 0) ++out.success;
    }
    at = end + 1;
  }
  return out;
}

// What a fleet's soak holds the exporter to, with --check. Timings widen under the sanitizers.
struct Bounds {
  double metrics_p99_ms = 100 * test::kTimingSlack;
  double rss_growth_mb = 8;       // from the end of the first round to the end
  int fd_growth = 2;               // of the fewest open at once, second half against first
  double tenth_max_share = 0.2;   // of each interval's starts, in its busiest tenth (a herd: most of them)
  double gap_p99_s_of_interval = 0.25;  // each target's runs one interval apart, give or take this share
};

// Below this load the soak has the host to itself, near enough (the exporter, the fake and this
// program make about 0.5 of it).
constexpr double kQuietLoad = 1.5;

int fleet(int argc, char** argv) {
  const int targets = static_cast<int>(arg(argc, argv, "--targets", 1000));
  const double minutes = arg(argc, argv, "--minutes", 30);
  const double interval_s = arg(argc, argv, "--interval", 60);
  const double scrape_every = arg(argc, argv, "--scrape", 15);
  const double row_every_s = arg(argc, argv, "--row", 5) * 60;
  const int keep = static_cast<int>(arg(argc, argv, "--keep-bundles", 5));
  const std::string bundle_every = text_arg(argc, argv, "--bundle-every", "1h");
  const bool check = flag(argc, argv, "--check");
  const int failing = targets / 100;  // t0099, t0199, ...: the model "down"

  const auto dir = std::filesystem::temp_directory_path() / ("infdoctor-bench-fleet-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "scenario.json")
      << R"({"models": {"m": {"overhead_ms": 15, "decode_ms_per_token": 0.5, "jitter_ms": 2},
                        "down": {"overhead_ms": 5, "faults": [{"kind": "503", "every": 1}]}}, "seed": 3})";
  test::Child fake({INFDOCTOR_FAKE_BIN, "--scenario", (dir / "scenario.json").string()}, {}, (dir / "fake.out").string(),
                   (dir / "fake.err").string());
  const std::string fake_at = address_in(dir / "fake.out", "listening on ", "\n", std::chrono::seconds(10));
  if (!fake.ok() || fake_at.empty()) {
    std::fprintf(stderr, "bench_serve: the fake provider did not start: %s\n", slurp(dir / "fake.err").c_str());
    return 1;
  }
  {
    std::ofstream conf(dir / "targets.conf");
    for (int i = 0; i < targets; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "t%04d", i);
      conf << name << "=http://" << fake_at << "/v1,model=" << (i % 100 == 99 ? "down" : "m")
           << ",module=probe,budget=100000,interval=" << static_cast<int>(interval_s) << "s\n";
    }
  }
  const auto bundles = dir / "bundles";
  const auto log_path = dir / "serve.err";
  test::Child serve({INFDOCTOR_BIN, "serve", "--listen", "127.0.0.1:0", "--config", (dir / "targets.conf").string(),
                     "--bundles", bundles.string(), "--keep-bundles", std::to_string(keep), "--probe-bundle-every",
                     bundle_every, "--vantage", "bench"},
                    {}, (dir / "serve.out").string(), log_path.string());
  const std::string listen = address_in(log_path, "\"address\":\"", "\"", std::chrono::seconds(30));
  if (!serve.ok() || listen.empty()) {
    std::fprintf(stderr, "bench_serve: the exporter did not start: %s\n", slurp(log_path).c_str());
    return 1;
  }
  const double t0_unix = core::unix_seconds_now();
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("`bench_serve --targets %d --minutes %g --interval %g --scrape %g`: %d probe targets (%d failing) every "
              "%g s, started together\n\n",
              targets, minutes, interval_s, scrape_every, targets, failing, interval_s);
  std::printf("| minute | runs | RSS MB | open fds | /metrics ms (last) | series | probe_success 1 | bundles | bundle MB | host load |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);

  struct Reading {
    double t_s, rss_mb, metrics_ms, load;
    // What the exporter says of this scrape's build, in the next scrape's body (ms; -1 unknown).
    double build_ms = -1, build_cpu_ms = -1, build_runqueue_ms = -1;
    int fds;
    SeriesCount series;
    BundleDisk disk;
    bool complete;  // every target's series there, and every target has run
  };
  std::vector<Reading> readings;
  std::map<std::string, std::vector<double>> starts;  // target -> when its runs started, s after t0
  std::vector<double> all_starts;
  std::size_t errors_healthy = 0, errors_failing = 0, finished = 0;
  LogTail tail(log_path);
  const auto read_log = [&] {
    tail.each_new([&](const nlohmann::json& j) {
      const std::string msg = j.value("msg", ""), target = j.value("target", "");
      const bool down = !target.empty() && std::atoi(target.c_str() + 1) % 100 == 99;
      if (j.value("level", "") == "error") ++(down ? errors_failing : errors_healthy);
      if (msg == "run finished") ++finished;
      if (msg != "run started") return;
      const auto at = core::parse_rfc3339_utc(j.value("time", ""));
      if (!at) return;
      starts[target].push_back(*at - t0_unix);
      all_starts.push_back(*at - t0_unix);
    });
  };

  // Open descriptors, read every 20 ms: the exporter runs one target at a time, and a run in flight
  // holds a few (its socket, the resolver's, libcurl's poll set). Between one run's last descriptor
  // and the next one's first it holds only its own, moments a reading every 5 s may never meet on a
  // busy host but thousands of readings a minute do; a leak raises the fewest open at once.
  std::vector<std::pair<double, int>> fd_readings;  // s after t0, open
  std::atomic<bool> fd_stop{false};
  std::thread fd_reader([&] {
    const auto last = t0 + std::chrono::duration<double>(minutes * 60 + 5);
    for (auto at = t0; !fd_stop && at < last; at += std::chrono::milliseconds(20)) {
      std::this_thread::sleep_until(at);
      fd_readings.emplace_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                               open_fds(serve.pid()));
    }
  });
  Scraper scraper(listen);
  const auto end = t0 + std::chrono::duration<double>(minutes * 60);
  double next_row = row_every_s;
  for (auto next = t0; next < end; next += span(scrape_every)) {
    std::this_thread::sleep_until(next);
    const auto s0 = std::chrono::steady_clock::now();
    const auto resp = scraper.get();
    Reading r;
    r.metrics_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
    r.t_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rss_mb = rss_mb(serve.pid());
    r.load = host_load();
    r.fds = open_fds(serve.pid());
    r.series = count_series(resp.body);
    r.disk = bundle_disk(bundles);
    read_log();
    const std::size_t n = static_cast<std::size_t>(targets);
    r.complete = resp.status == 200 && starts.size() == n && r.series.by_name["infdoctor_probe_success"] == n &&
                 r.series.by_name["infdoctor_last_run_timestamp_seconds"] == n &&
                 r.series.by_name["infdoctor_runs_total"] == 3 * n &&
                 r.series.by_name["infdoctor_time_to_first_token_seconds_bucket"] == 20 * n &&
                 r.series.by_name["infdoctor_request_budget_remaining"] == n;
    if (!readings.empty()) {
      auto& before = readings.back();
      before.build_ms = 1000 * gauge(resp.body, "infdoctor_metrics_build_seconds");
      before.build_cpu_ms = 1000 * gauge(resp.body, "infdoctor_metrics_build_cpu_seconds");
      before.build_runqueue_ms = 1000 * gauge(resp.body, "infdoctor_metrics_build_runqueue_seconds");
    }
    readings.push_back(r);
    if (r.t_s >= next_row || next + span(scrape_every) >= end) {
      std::printf("| %.1f | %zu | %.1f | %d | %.1f | %zu | %zu | %zu | %.1f | %.2f |\n", r.t_s / 60, finished, r.rss_mb,
                  r.fds, r.metrics_ms, r.series.total, r.series.success, r.disk.bundles, r.disk.mb, r.load);
      std::fflush(stdout);
      next_row += row_every_s;
    }
  }
  const double stopped_at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fd_stop = true;
  fd_reader.join();
  serve.send(SIGTERM);
  const auto exit = serve.wait(std::chrono::seconds(60));
  read_log();
  fake.send(SIGTERM);
  fake.wait(std::chrono::seconds(10));

  // The first round: until every target has run once and every series is there.
  std::size_t warm = 0;
  while (warm < readings.size() && !readings[warm].complete) ++warm;
  const bool ever_complete = warm < readings.size();
  std::size_t incomplete_after = 0;
  std::vector<double> latency_all, latency_warm, latency_quiet, build, build_cpu, build_queue, beyond_build;
  for (std::size_t i = 0; i < readings.size(); ++i) {
    latency_all.push_back(readings[i].metrics_ms);
    if (i >= warm) {
      latency_warm.push_back(readings[i].metrics_ms);
      if (readings[i].build_ms >= 0) {
        build.push_back(readings[i].build_ms);
        build_cpu.push_back(readings[i].build_cpu_ms);
        build_queue.push_back(readings[i].build_runqueue_ms);
        beyond_build.push_back(readings[i].metrics_ms - readings[i].build_ms);
      }
      if (readings[i].load < kQuietLoad) latency_quiet.push_back(readings[i].metrics_ms);
      if (!readings[i].complete) ++incomplete_after;
    }
  }
  // Spread: the starts after the first runs and the second (in [0.5, 1.5] intervals), by tenth of
  // the interval counted from the start; and each target's gaps between runs.
  std::array<double, 10> tenths{};
  double counted = 0;
  for (const double t : all_starts)
    if (t >= 1.5 * interval_s && t < stopped_at) {
      const double phase = std::fmod(t, interval_s) / interval_s;
      tenths[std::min<std::size_t>(9, static_cast<std::size_t>(phase * 10))] += 1;
      counted += 1;
    }
  std::vector<double> per_second;  // starts in each whole second of the same stretch
  if (stopped_at > 1.5 * interval_s + 1) {
    per_second.assign(static_cast<std::size_t>(stopped_at - 1.5 * interval_s), 0);
    for (const double t : all_starts)
      if (const double k = std::floor(t - 1.5 * interval_s); k >= 0 && k < static_cast<double>(per_second.size()))
        per_second[static_cast<std::size_t>(k)] += 1;
  }
  std::vector<double> gaps_off;  // |gap - interval|, each target's runs from its second on
  for (const auto& [_, ts] : starts)
    for (std::size_t i = 2; i < ts.size(); ++i) gaps_off.push_back(std::fabs(ts[i] - ts[i - 1] - interval_s));
  const double tenth_max = counted > 0 ? *std::max_element(tenths.begin(), tenths.end()) / counted : 0;
  const double tenth_min = counted > 0 ? *std::min_element(tenths.begin(), tenths.end()) / counted : 0;
  double first_round_s = 0;  // when the last target's first run started
  for (const auto& [_, ts] : starts) first_round_s = std::max(first_round_s, ts.front());
  const Reading& last = readings.back();
  const Reading& base = readings[ever_complete ? warm : 0];
  double max_rss = 0;
  // The fewest open at once in each half of the stretch after the first round, from the readings
  // every 20 ms (see fd_reader).
  for (std::size_t i = warm; i < readings.size(); ++i) max_rss = std::max(max_rss, readings[i].rss_mb);
  const double fd_from = ever_complete ? base.t_s : 0, fd_mid = (fd_from + stopped_at) / 2;
  int max_fds = 0, floor_first = 1 << 20, floor_second = 1 << 20;
  std::size_t fd_counted = 0;
  for (const auto& [t, n] : fd_readings) {
    if (t < fd_from || t > stopped_at || n == 0) continue;  // 0: the exporter had gone
    ++fd_counted;
    max_fds = std::max(max_fds, n);
    int& floor = t < fd_mid ? floor_first : floor_second;
    floor = std::min(floor, n);
  }
  std::size_t most_bundles = 0;
  for (const auto& r : readings) most_bundles = std::max(most_bundles, r.disk.bundles);

  std::printf("\n| measure | value |\n|---|---|\n");
  std::printf("| stretch | %.1f min, %zu runs finished, %zu scrapes every %g s |\n", stopped_at / 60, finished,
              readings.size(), scrape_every);
  std::printf("| first round (every target's first run started) | %.1f s |\n", first_round_s);
  std::printf("| every series present | from %.1f s on; %zu scrapes after it missing one |\n",
              ever_complete ? base.t_s : -1.0, incomplete_after);
  std::printf("| series in /metrics | %zu (%zu per target) |\n", last.series.total,
              last.series.total / static_cast<std::size_t>(targets));
  std::printf("| starts from 1.5 intervals on, by tenth of the interval | %.1f %% to %.1f %% (even: 10 %%; %.0f starts) |\n",
              tenth_min * 100, tenth_max * 100, counted);
  std::printf("| starts a second, same stretch | mean %.1f, p99 %.0f, max %.0f |\n",
              per_second.empty() ? 0 : std::accumulate(per_second.begin(), per_second.end(), 0.0) / per_second.size(),
              percentile(per_second, 99), percentile(per_second, 100));
  std::printf("| each target's runs, off one interval apart | p50 %.3f s, p99 %.3f s, max %.3f s (%zu gaps) |\n",
              percentile(gaps_off, 50), percentile(gaps_off, 99), percentile(gaps_off, 100), gaps_off.size());
  std::printf("| /metrics, every scrape | p50 %.1f ms, p99 %.1f ms, max %.1f ms |\n", percentile(latency_all, 50),
              percentile(latency_all, 99), percentile(latency_all, 100));
  std::printf("| /metrics, after the first round | p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu scrapes) |\n",
              percentile(latency_warm, 50), percentile(latency_warm, 99), percentile(latency_warm, 100),
              latency_warm.size());
  std::printf("| /metrics after the first round, host load under %.1f | p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu scrapes) |\n",
              kQuietLoad, percentile(latency_quiet, 50), percentile(latency_quiet, 99), percentile(latency_quiet, 100),
              latency_quiet.size());
  // Where a scrape's time goes, as the exporter timed its build: a wait for a CPU the host's load
  // makes, a lock a run's end held, or the sending and this client.
  std::printf("| /metrics after the first round, its build in the exporter | p50 %.1f ms, p99 %.1f ms, max %.1f ms (%zu scrapes) |\n",
              percentile(build, 50), percentile(build, 99), percentile(build, 100), build.size());
  std::printf("| ... of which CPU / waiting for a CPU | p50 %.1f / %.1f ms, p99 %.1f / %.1f ms |\n", percentile(build_cpu, 50),
              percentile(build_queue, 50), percentile(build_cpu, 99), percentile(build_queue, 99));
  std::printf("| ... sending and reading the body, beyond the build | p50 %.1f ms, p99 %.1f ms, max %.1f ms |\n",
              percentile(beyond_build, 50), percentile(beyond_build, 99), percentile(beyond_build, 100));
  std::printf("| RSS after the first round / at the end / highest | %.1f / %.1f / %.1f MB%s |\n", base.rss_mb, last.rss_mb,
              max_rss, test::kRssBounded ? "" : " (not bounded in a sanitizer build: LeakSanitizer checks the exit)");
  std::printf("| open fds, fewest at once in the first / second half after the first round, highest | %d / %d, %d (%zu "
              "readings every 20 ms) |\n",
              floor_first, floor_second, max_fds, fd_counted);
  std::printf("| bundles on disk at the end / most | %zu / %zu (at most %d targets x %d), %.1f MB |\n", last.disk.bundles,
              most_bundles, targets, keep, last.disk.mb);
  std::printf("| error lines logged | %zu for the %d failing targets, %zu for the others |\n", errors_failing, failing,
              errors_healthy);
  std::printf("| exporter's exit on SIGTERM | %d%s after %.1f s |\n", exit.exit_code, exit.timed_out ? " (timed out)" : "",
              exit.wall_s - stopped_at);
  std::fflush(stdout);

  int broken = 0;
  const auto hold = [&](bool ok, const std::string& what) {
    if (ok) return;
    ++broken;
    std::printf("BROKEN: %s\n", what.c_str());
  };
  if (check) {
    const Bounds b;
    hold(ever_complete, "every target's series never showed together");
    hold(incomplete_after == 0, std::to_string(incomplete_after) + " scrapes after the first round missed a series");
    hold(percentile(latency_warm, 99) < b.metrics_p99_ms, "/metrics p99 over " + std::to_string(b.metrics_p99_ms) + " ms");
    hold(!test::kRssBounded || last.rss_mb - base.rss_mb < b.rss_growth_mb,
         "RSS grew by more than " + std::to_string(b.rss_growth_mb) + " MB");
    hold(floor_first < (1 << 20) && floor_second < (1 << 20), "open descriptors not read in both halves");
    hold(floor_second - floor_first <= b.fd_growth, "open descriptors grew by more than " + std::to_string(b.fd_growth));
    hold(counted > 0 && tenth_max < b.tenth_max_share, "the starts crowd one tenth of the interval (a herd)");
    hold(percentile(gaps_off, 99) < b.gap_p99_s_of_interval * interval_s, "targets' runs drift from their interval");
    hold(most_bundles <= static_cast<std::size_t>(targets * keep), "more bundles kept than targets x --keep-bundles");
    hold(errors_healthy == 0, "error lines for healthy targets");
    hold(failing == 0 || errors_failing > 0, "no error line for the failing targets: the log was not read");
    hold(!exit.timed_out && exit.exit_code == 0, "the exporter did not exit 0 on SIGTERM");
  }
  std::filesystem::remove_all(dir);
  return broken == 0 ? 0 : 1;
}

}  // namespace

constexpr const char* kUsage =
    "usage: bench_serve [--minutes 60] [--quick-interval 600] [--probe-interval 60] [--scrape 15]\n"
    "       bench_serve --targets 1000 [--minutes 30] [--interval 60] [--scrape 15] [--row 5]\n"
    "                   [--keep-bundles 5] [--bundle-every 1h] [--check]\n"
    "The first: what infdoctor serve costs its host over an hour of scheduled runs. The second: a fleet of\n"
    "probe targets against a fake of their own, with --check exiting 1 when a bound is broken. Details at\n"
    "the top of tests/bench/bench_serve.cpp.\n";

// Every argument a flag of the form it takes (a value after it, or --check alone); otherwise what
// is wrong, so that a mistyped flag never starts an hour of runs with its defaults.
std::string bad_argument(int argc, char** argv) {
  static const std::set<std::string> valued = {"--minutes",  "--quick-interval", "--probe-interval", "--scrape",
                                                "--targets",  "--interval",       "--row",            "--keep-bundles",
                                                "--bundle-every"};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") continue;
    if (!valued.count(a)) return "unknown argument " + a;
    if (i + 1 >= argc) return a + " needs a value";
    ++i;
  }
  return "";
}

int main(int argc, char** argv) {
  if (flag(argc, argv, "--help") || flag(argc, argv, "-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (const auto bad = bad_argument(argc, argv); !bad.empty()) {
    std::fprintf(stderr, "bench_serve: %s\n%s", bad.c_str(), kUsage);
    return 64;
  }
  if (flag(argc, argv, "--targets")) return fleet(argc, argv);
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

  Scraper scraper(listen);
  std::vector<Reading> readings;
  const auto t0 = std::chrono::steady_clock::now();
  const auto end = t0 + std::chrono::duration<double>(minutes * 60);
  std::printf("| minute | RSS MB | CPU %% of a core, last 10 min | quick runs | probes |\n|---|---|---|---|---|\n");
  std::fflush(stdout);
  double next_row = 0;
  for (auto next = t0; next < end; next += span(scrape_every)) {
    std::this_thread::sleep_until(next);
    const auto resp = scraper.get();
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
