// Benchmark, run on demand (never by ctest): how faithful infdoctor's stopwatch is and what it
// costs, at 1 to 256 concurrent streams. Prints markdown tables (the README's Performance section).
//   build/tests/bench_perf [--repeat N] [--skip-lab] [--skip-quick]
// --repeat runs the fidelity and scale measurements N times and prints each figure's median and
// range: a p99 of one run moves with whatever else the machine did during it.
//
// 1. Fidelity: a fake provider (its own process) plants a time to first token and an inter-token
//    gap; infdoctor's client (this process, the same code `infdoctor run` uses) reports them at 1,
//    64 and 256 concurrent streams. Error against planted includes the fake provider's own
//    scheduling; error against sent uses the stamps the fake writes into each event (scenario key
//    stamp_tokens) and is infdoctor's alone, plus loopback delivery. Cold-start penalty at 1
//    stream; TCP round trip on the namespace lab (root only) at 1 probe at a time.
// 2. Scale: 256 streams of 1,000 tokens at 20 ms a token: inter-token error, this process's CPU
//    seconds per 1,000 tokens, its peak RSS (VmHWM).
// 3. Time to diagnosis: `infdoctor run --quick` against a healthy fake provider: wall time and
//    infdoctor's own CPU time (user + system) as a share of it.
// 4. How cost grows: requests, wall time, CPU and peak RSS of `infdoctor run` as concurrency,
//    prompt sizes and decode lengths double.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "checks/check.h"
#include "fake/lab.h"
#include "net/probes.h"
#include "net/subprocess.h"
#include "support/spawn.h"

namespace {

using namespace infdoctor;
using namespace std::chrono_literals;

std::string g_bin_dir;

// Rows of numbers gathered over the repeats of the measurements (--repeat N): printed as the
// median of the repeats and, with more than one, their range beside it.
class Table {
 public:
  explicit Table(std::string head) : head_(std::move(head)) {}
  void add(const std::string& label, const std::vector<double>& cells, const std::string& tail, int decimals = 3) {
    auto it = std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.label == label; });
    if (it == rows_.end()) it = rows_.insert(rows_.end(), Row{label, tail, decimals, {}, {}});
    it->runs.push_back(cells);
  }
  void add_text(const std::string& label, const std::string& text) { rows_.push_back(Row{label, "", 0, {}, text}); }
  void print() const {
    std::printf("%s", head_.c_str());
    for (const auto& r : rows_) {
      std::printf("| %s |", r.label.c_str());
      if (!r.text.empty()) {
        std::printf(" %s |\n", r.text.c_str());
        continue;
      }
      for (std::size_t c = 0; c < r.runs.front().size(); ++c) {
        std::vector<double> v;
        for (const auto& run : r.runs) v.push_back(run[c]);
        std::sort(v.begin(), v.end());
        if (std::isnan(v.front())) {
          std::printf(" |");
          continue;
        }
        const double med = v[v.size() / 2];
        if (v.size() == 1) std::printf(" %.*f |", r.decimals, med);
        else std::printf(" %.*f [%.*f, %.*f] |", r.decimals, med, r.decimals, v.front(), r.decimals, v.back());
      }
      std::printf(" %s |\n", r.tail.c_str());
    }
    std::printf("\n");
  }

 private:
  struct Row {
    std::string label, tail;
    int decimals;
    std::vector<std::vector<double>> runs;
    std::string text;
  };
  std::string head_;
  std::vector<Row> rows_;
};

Table g_scale("| scale: 256 streams x 1,000 tokens, 20 ms a token | measured | target |\n|---|---|---|\n");
Table g_fidelity(
    "| fidelity: absolute error, ms | streams | vs planted p50 | vs planted p99 | vs sent p50 | vs sent p99 | target p99 |\n"
    "|---|---|---|---|---|---|---|\n");
Table g_split("| time to first token against what was sent, in two parts (ms) | streams | p50 | p99 |\n|---|---|---|---|\n");

struct Fake {
  std::unique_ptr<net::Process> proc;
  std::string base_url;
};

Fake start_fake(const std::string& scenario_json, const std::string& name) {
  Fake f;
  const std::string path = "/tmp/infdoctor-bench-" + name + "-" + std::to_string(::getpid()) + ".json";
  std::ofstream(path) << scenario_json;
  auto p = net::Process::start({g_bin_dir + "/infdoctor-fake", "--listen", "127.0.0.1:0", "--scenario", path});
  if (!p.ok()) return f;
  auto line = (*p)->read_line(10s);
  if (!line.ok() || line->rfind("listening on ", 0) != 0) return f;
  f.base_url = "http://" + line->substr(13) + "/v1";
  f.proc = std::move(p.value());
  return f;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return 0;
}

// Absolute errors, in ms. `planted`: reported - planted, which includes the fake provider's own
// scheduling. `sent`: reported - what the fake provider actually did, from the steady-clock
// stamps it writes into each event (scenario key stamp_tokens): infdoctor's error alone, plus
// loopback delivery.
struct Errors {
  std::vector<double> ttft, itl, ttft_sent, itl_sent;
  // The TTFT error against what was sent, in its two parts: the request written by infdoctor until
  // the fake provider read it (the fake's own wake-up), and the first token written by the fake
  // until infdoctor stamped its arrival.
  std::vector<double> request_to_read, token_to_stamp;
  int streams_ok = 0, tokens = 0;
  void add(const Errors& o) {
    for (auto [dst, src] : {std::pair{&ttft, &o.ttft}, {&itl, &o.itl}, {&ttft_sent, &o.ttft_sent}, {&itl_sent, &o.itl_sent},
                             {&request_to_read, &o.request_to_read}, {&token_to_stamp, &o.token_to_stamp}})
      dst->insert(dst->end(), src->begin(), src->end());
  }
};

// "ARRIVED/SENT;" per content event, as long as the stream's kept text lasts.
std::vector<std::pair<long long, long long>> stamps_of(const std::string& text) {
  std::vector<std::pair<long long, long long>> out;
  long long a = 0, s = 0;
  for (const char* p = text.c_str(); std::sscanf(p, "%lld/%lld;", &a, &s) == 2;) {
    out.emplace_back(a, s);
    p = std::strchr(p, ';');
    if (!p) break;
    ++p;
  }
  return out;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, k == 0 ? 0 : k - 1)];
}

// `streams` parallel requests of `tokens` tokens. A first round of one-token requests opens the
// connections, so the measured round times requests, not the fake provider accepting 256
// connections and starting a thread for each.
Errors stream_round(const std::string& base_url, int streams, int tokens, double ttft_ms, double gap_ms) {
  api::Endpoint ep;
  ep.base_url = base_url;
  ep.timeout = std::chrono::milliseconds(static_cast<long long>(ttft_ms + gap_ms * tokens + 60000));
  api::ChatRequest chat;
  chat.model = "f";
  chat.prompt = "hello";
  chat.max_tokens = 1;
  http::Client client;
  api::run_chats(client, ep, std::vector<api::ChatRequest>(static_cast<std::size_t>(streams), chat));
  chat.max_tokens = tokens;
  // What api::run_chats does, keeping each stream's text for the stamps.
  std::vector<std::unique_ptr<api::ChatStream>> chat_streams;
  std::vector<http::Request> reqs;
  for (int i = 0; i < streams; ++i) {
    chat_streams.push_back(std::make_unique<api::ChatStream>());
    reqs.push_back(api::build_chat_request(ep, chat, false));
    reqs.back().sink = chat_streams.back().get();
  }
  const auto responses = client.perform_all(reqs);
  Errors e;
  for (std::size_t i = 0; i < responses.size(); ++i) {
    chat_streams[i]->finish();
    const auto s = api::make_sample(responses[i], chat_streams[i].get(), chat.model);
    if (!s.ok) continue;
    ++e.streams_ok;
    const auto t = checks::server_ttft_ms(s);
    if (t) e.ttft.push_back(std::fabs(*t - ttft_ms));
    for (double g : s.itl_ms) e.itl.push_back(std::fabs(g - gap_ms));
    e.tokens += static_cast<int>(s.itl_ms.size()) + 1;
    const auto st = stamps_of(chat_streams[i]->text());
    if (t && !st.empty()) e.ttft_sent.push_back(std::fabs(*t - (st[0].second - st[0].first) / 1000.0));
    const auto& arrivals = chat_streams[i]->content_event_times();
    if (!st.empty() && s.request_sent_ms && !arrivals.empty()) {
      const auto us = [](core::SteadyTime x) {
        return static_cast<double>(std::chrono::duration_cast<std::chrono::microseconds>(x.time_since_epoch()).count());
      };
      const double sent_us = us(responses[i].started) + *s.request_sent_ms * 1000.0;
      e.request_to_read.push_back((static_cast<double>(st[0].first) - sent_us) / 1000.0);
      e.token_to_stamp.push_back((us(arrivals.front()) - static_cast<double>(st[0].second)) / 1000.0);
    }
    for (std::size_t k = 1; k < st.size() && k - 1 < s.itl_ms.size(); ++k)
      e.itl_sent.push_back(std::fabs(s.itl_ms[k - 1] - (st[k].second - st[k - 1].second) / 1000.0));
  }
  return e;
}

void fidelity_and_scale() {
  const double kTtft = 200, kGap = 20;
  Fake fake = start_fake(R"({"models": {"f": {"overhead_ms": 200, "decode_ms_per_token": 20, "role_chunk": false, "stamp_tokens": true}}})",
                         "fidelity");
  if (!fake.proc) {
    std::printf("cannot start infdoctor-fake\n");
    return;
  }
  // Scale first, so this process's peak RSS is the 256-stream round's and nothing else's.
  {
    const double cpu0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const Errors e = stream_round(fake.base_url, 256, 1000, kTtft, kGap);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    g_scale.add("streams completed (of 256)", {static_cast<double>(e.streams_ok)}, "256", 0);
    g_scale.add("tokens timed", {static_cast<double>(e.tokens)}, "256,000", 0);
    g_scale.add("inter-token error p50, against the planted 20 ms (ms)", {pct(e.itl, 50)}, "");
    g_scale.add("inter-token error p99, against the planted 20 ms (ms)", {pct(e.itl, 99)}, "< 2 ms");
    g_scale.add("inter-token error p50, against the gaps sent (ms)", {pct(e.itl_sent, 50)}, "");
    g_scale.add("inter-token error p99, against the gaps sent (ms)", {pct(e.itl_sent, 99)}, "< 2 ms");
    g_scale.add("gaps with the fake's stamps (the first 4 KiB of each stream's text)", {static_cast<double>(e.itl_sent.size())}, "", 0);
    g_scale.add("CPU per 1,000 tokens, ms (this process: client, SSE, JSON)",
                {e.tokens > 0 ? cpu * 1000.0 / (e.tokens / 1000.0) : NAN}, "< 50 ms", 2);
    g_scale.add("peak RSS of this process, MB (VmHWM, a high-water mark over all repeats)", {vm_hwm_kb() / 1024.0},
                "< 64 MB", 1);
    g_scale.add("wall time of the round with its warm-up, s", {wall}, "(20.2 s planted)", 1);
  }
  for (int n : {1, 64, 256}) {
    Errors all;
    const int rounds = n == 1 ? 20 : 2;  // about the same number of samples of the first token
    for (int r = 0; r < rounds; ++r) all.add(stream_round(fake.base_url, n, 100, kTtft, kGap));
    const char* target = n == 256 ? "< 2" : "< 1";
    const std::string ns = std::to_string(n);
    g_fidelity.add("time to first token, 200 ms planted (" + std::to_string(all.ttft.size()) + " samples) | " + ns,
                   {pct(all.ttft, 50), pct(all.ttft, 99), pct(all.ttft_sent, 50), pct(all.ttft_sent, 99)}, target);
    g_fidelity.add("inter-token gap, 20 ms planted (" + std::to_string(all.itl.size()) + " gaps) | " + ns,
                   {pct(all.itl, 50), pct(all.itl, 99), pct(all.itl_sent, 50), pct(all.itl_sent, 99)}, target);
    g_split.add("request written by infdoctor -> arrived at the fake provider | " + ns,
                {pct(all.request_to_read, 50), pct(all.request_to_read, 99)}, "");
    g_split.add("first token written by the fake provider -> stamped by infdoctor | " + ns,
                {pct(all.token_to_stamp, 50), pct(all.token_to_stamp, 99)}, "");
  }
  fake.proc->stop();

  // Cold start: 500 ms planted after 1 s idle; penalty = cold TTFT - median warm TTFT.
  Fake cold = start_fake(
      R"({"models": {"f": {"overhead_ms": 50, "decode_ms_per_token": 5, "cold_start": {"idle_s": 1, "penalty_ms": 500}}}})",
      "cold");
  if (cold.proc) {
    std::vector<double> err;
    api::Endpoint ep;
    ep.base_url = cold.base_url;
    api::ChatRequest chat;
    chat.model = "f";
    chat.prompt = "hello";
    chat.max_tokens = 2;
    http::Client client;
    api::run_chat(client, ep, chat);  // the server's first request is never cold; this one is not measured
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(1200ms);  // the planted idle threshold is 1 s
      const auto c = api::run_chat(client, ep, chat);
      std::vector<double> warm;
      for (int k = 0; k < 3; ++k)
        if (auto t = checks::server_ttft_ms(api::run_chat(client, ep, chat))) warm.push_back(*t);
      const auto ct = checks::server_ttft_ms(c);
      if (ct && !warm.empty()) err.push_back(std::fabs(*ct - pct(warm, 50) - 500));
    }
    g_fidelity.add("cold-start penalty, 500 ms planted (" + std::to_string(err.size()) + " samples) | 1",
                   {pct(err, 50), pct(err, 99), NAN, NAN}, "< 1");
    cold.proc->stop();
  }
}

void lab_rtt() {
  if (auto why = fake::Lab::unavailable_reason()) {
    g_fidelity.add_text("TCP round trip on the lab | 1", "skipped: " + *why);
    return;
  }
  fake::Lab lab({10.0, 0});  // 10 ms each way: 20 ms planted
  if (!lab.ok()) {
    g_fidelity.add_text("TCP round trip on the lab | 1", "lab failed: " + lab.error());
    return;
  }
  int listener = -1;
  fake::in_netns(lab.server_ns(), [&] {
    listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(9443);
    ::inet_pton(AF_INET, fake::Lab::kServerIp, &a.sin_addr);
    ::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(listener, 1024);
  });
  std::vector<double> err;
  fake::in_netns(lab.client_ns(), [&] {
    for (int i = 0; i < 200; ++i) {
      const auto p = net::tcp_connect_probe(fake::Lab::kServerIp, 9443, 2000ms);
      if (p.rtt) err.push_back(std::fabs(core::to_ms(*p.rtt) - 20.0));
      std::this_thread::sleep_for(5ms);
    }
  });
  ::close(listener);
  g_fidelity.add("TCP round trip on the namespace lab, 20 ms planted (" + std::to_string(err.size()) + " probes) | 1",
                 {pct(err, 50), pct(err, 99), NAN, NAN}, "< 1");
}

struct RunCost {
  double wall_s = 0, cpu_s = 0, rss_mb = 0;
  int requests = 0, exit_code = -1;
};

RunCost run_infdoctor(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {g_bin_dir + "/infdoctor", "run"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string out = "/tmp/infdoctor-bench-out-" + std::to_string(::getpid()) + ".json";
  argv.insert(argv.end(), {"--json", out});
  rusage before{};
  getrusage(RUSAGE_CHILDREN, &before);
  test::Child child(argv, {}, "/dev/null", "/dev/null");
  const auto ex = child.wait(600s);
  rusage after{};
  getrusage(RUSAGE_CHILDREN, &after);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  RunCost c;
  c.wall_s = ex.wall_s;
  c.cpu_s = secs(after.ru_utime) + secs(after.ru_stime) - secs(before.ru_utime) - secs(before.ru_stime);
  c.rss_mb = ex.max_rss_kb / 1024.0;
  c.exit_code = ex.exit_code;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_discarded()) c.requests = j["run"]["metrics"].value("requests_count", 0.0);
  ::unlink(out.c_str());
  return c;
}

void quick_and_growth() {
  Fake fake = start_fake(R"({"models": {
      "big": {"overhead_ms": 60, "prefill_ms_per_token": 0.02, "decode_ms_per_token": 8, "jitter_ms": 3},
      "small": {"overhead_ms": 30, "decode_ms_per_token": 3},
      "fast": {"overhead_ms": 20, "prefill_ms_per_token": 0.01, "decode_ms_per_token": 1}}})",
                         "quick");
  if (!fake.proc) return;
  std::printf("| time to diagnosis: run --quick, healthy fake | wall s | infdoctor CPU s | own work | peak RSS |\n"
              "|---|---|---|---|---|\n");
  for (int i = 0; i < 3; ++i) {
    const RunCost c = run_infdoctor({"--base-url", fake.base_url, "--model", "big", "--small-model", "small", "--quick"});
    std::printf("| run %d (%d requests, exit %d) | %.1f | %.3f | %.2f %% | %.1f MB |\n", i + 1, c.requests, c.exit_code,
                c.wall_s, c.cpu_s, 100.0 * c.cpu_s / c.wall_s, c.rss_mb);
  }
  std::printf("\n| how cost grows | requests | wall s | CPU s | peak RSS |\n|---|---|---|---|---|\n");
  for (const char* levels : {"1,2,4,8", "1,2,4,8,16", "1,2,4,8,16,32", "1,2,4,8,16,32,64"}) {
    const RunCost c = run_infdoctor({"--base-url", fake.base_url, "--model", "fast", "--checks", "concurrency",
                                     "--concurrency", levels, "--set", "concurrency.max_tokens=64"});
    std::printf("| concurrency up to %s | %d | %.1f | %.3f | %.1f MB |\n", std::strrchr(levels, ',') + 1, c.requests,
                c.wall_s, c.cpu_s, c.rss_mb);
  }
  for (const char* prompt : {"4096", "8192", "16384", "32768"}) {
    const RunCost c = run_infdoctor({"--base-url", fake.base_url, "--model", "fast", "--checks", "sweep",
                                     "--sweep-prompt-tokens", prompt, "--sweep-max-tokens", "1", "--set", "sweep.repeats=3"});
    std::printf("| prefill sweep, prompt of %s tokens, 3 repeats (+3 decode requests) | %d | %.1f | %.3f | %.1f MB |\n", prompt, c.requests, c.wall_s,
                c.cpu_s, c.rss_mb);
  }
  for (const char* sweep : {"64,128", "64,128,256", "64,128,256,512", "64,128,256,512,1024"}) {
    const RunCost c = run_infdoctor({"--base-url", fake.base_url, "--model", "fast", "--checks", "sweep",
                                     "--sweep-prompt-tokens", "64", "--sweep-max-tokens", sweep, "--set", "sweep.repeats=1"});
    std::printf("| decode sweep up to %s tokens | %d | %.1f | %.3f | %.1f MB |\n", std::strrchr(sweep, ',') + 1,
                c.requests, c.wall_s, c.cpu_s, c.rss_mb);
  }
  fake.proc->stop();
}

}  // namespace

int main(int argc, char** argv) {
  bool skip_lab = false, skip_quick = false;
  int repeat = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--skip-lab") skip_lab = true;
    else if (a == "--skip-quick") skip_quick = true;
    else if (a == "--repeat" && i + 1 < argc && std::atoi(argv[i + 1]) >= 1 && std::atoi(argv[i + 1]) <= 20)
      repeat = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_perf [--repeat N (1-20)] [--skip-lab] [--skip-quick]\n");
      return 2;
    }
  }
  std::string self = argv[0];
  const auto slash = self.rfind('/');
  g_bin_dir = (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/..";
  for (int r = 0; r < repeat; ++r) {
    fidelity_and_scale();
    if (!skip_lab) lab_rtt();
  }
  if (repeat > 1) std::printf("Each cell: the median of %d repeats [lowest, highest].\n\n", repeat);
  g_scale.print();
  g_fidelity.print();
  g_split.print();
  if (!skip_quick) quick_and_growth();
  return 0;
}
