// Benchmark, run on demand (never by ctest):
//   build/tests/bench_probe [pairs]
// 1. Time to first byte as infdoctor measures it against `curl -w '%{time_starttransfer}'`, on
//    the same request to the same zero-delay infdoctor-fake process, interleaved round by round.
// 2. Connect, TLS handshake and first byte over HTTPS, `infdoctor probe` against `curl -w`.
// 3. Throughput of the SSE parser alone, and of the full stream decoding (SSE + JSON per event).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "net/subprocess.h"
#include "stats/summary.h"

namespace {

using namespace infdoctor;
using namespace std::chrono_literals;

double median(std::vector<double> v) { return *stats::summarize(std::move(v)).p50; }

void ttfb_vs_curl(int pairs, const std::string& bin_dir) {
  // The fake provider runs as its own process, so neither client shares a process with it.
  const std::string scenario_path = "/tmp/infdoctor-bench-scenario.json";
  std::ofstream(scenario_path) << R"({"models": {"m": {}}})";
  auto fake = net::Process::start({bin_dir + "/infdoctor-fake", "--listen", "127.0.0.1:0", "--scenario", scenario_path});
  if (!fake.ok()) {
    std::fprintf(stderr, "cannot start infdoctor-fake: %s\n", fake.error().message.c_str());
    return;
  }
  auto line = (*fake)->read_line(10s);
  if (!line.ok() || line->rfind("listening on ", 0) != 0) {
    std::fprintf(stderr, "infdoctor-fake did not report its address\n");
    return;
  }
  api::Endpoint ep;
  ep.base_url = "http://" + line->substr(13) + "/v1";
  api::ChatRequest chat;
  chat.model = "m";
  chat.prompt = "hello";
  chat.max_tokens = 1;
  const std::string body = api::build_chat_body(chat);
  char body_path[] = "/tmp/infdoctor-bench-body-XXXXXX";
  const int fd = mkstemp(body_path);
  if (fd < 0) return;
  ::close(fd);
  std::ofstream(body_path, std::ios::binary) << body;
  http::Client client;
  std::vector<double> warm, cold, curl, d_cold, d_warm, lag;
  for (int i = 0; i < pairs; ++i) {
    // (a) infdoctor's client in this process, (b) `infdoctor probe --json` as a fresh process,
    // (c) curl as a fresh process: the same request, interleaved so drift hits all three alike.
    const auto a = api::run_chat(client, ep, chat, /*fresh=*/true);
    auto b = net::run_command({bin_dir + "/infdoctor", "probe", "--base-url", ep.base_url, "--model", "m",
                               "--prompt", "hello", "--max-tokens", "1", "--json"},
                              10s);
    auto c = net::run_command({"curl", "-s", "-N", "-o", "/dev/null", "-w", "%{time_starttransfer}", "-H",
                               "Content-Type: application/json", "--data-binary", std::string("@") + body_path,
                               ep.url("/chat/completions")},
                              10s);
    if (!a.ok || !a.ttfb_ms || !b.ok() || b->exit_code != 0 || !c.ok() || c->exit_code != 0) continue;
    const auto bj = nlohmann::json::parse(b->out, nullptr, false);
    if (bj.is_discarded() || !bj["ttfb_ms"].is_number()) continue;
    const double curl_ms = std::stod(c->out) * 1000.0;
    const double cold_ms = bj["ttfb_ms"].get<double>();
    warm.push_back(*a.ttfb_ms);
    cold.push_back(cold_ms);
    curl.push_back(curl_ms);
    d_cold.push_back(cold_ms - curl_ms);
    d_warm.push_back(*a.ttfb_ms - curl_ms);
    if (a.client_start_lag_ms) lag.push_back(*a.client_start_lag_ms);
  }
  ::unlink(body_path);
  (*fake)->stop();
  if (curl.empty()) {
    std::printf("ttfb vs curl: no successful rounds\n");
    return;
  }
  std::printf("| time to first byte, fresh connection, %zu rounds | median ms |\n|---|---|\n", curl.size());
  std::printf("| curl -w %%{time_starttransfer} (new process each time) | %.3f |\n", median(curl));
  std::printf("| infdoctor probe --json ttfb_ms (new process each time) | %.3f |\n", median(cold));
  std::printf("| infdoctor client in a running process | %.3f |\n", median(warm));
  std::printf("| paired difference, probe - curl | %+.3f |\n", median(d_cold));
  std::printf("| paired difference, running client - curl | %+.3f |\n", median(d_warm));
  if (!lag.empty()) std::printf("| infdoctor hand-off to libcurl's transfer start | %.3f |\n", median(lag));
  // The target: a fresh `infdoctor probe` costs no more than a fresh curl, to within 0.2 ms. Time
  // them with nothing else running: a process started beside each probe (a JSON parser reading its
  // output, a compiler) moved probe's median by a millisecond and more on two cores.
  std::printf("\nprobe's median first byte %s within 0.2 ms of curl's\n\n", std::abs(median(d_cold)) <= 0.2 ? "is" : "is NOT");
}

// Connect, TLS and first byte over HTTPS: `infdoctor probe --json` and `curl -w`, each a new
// process, the same request to the same infdoctor-fake, interleaved. curl's timers are cumulative
// from the transfer's start; its phases are the differences, as infdoctor reports them.
void phases_vs_curl_tls(int pairs, const std::string& bin_dir) {
  const std::string certs = bin_dir + "/tests/certs";
  const std::string scenario_path = "/tmp/infdoctor-bench-scenario-tls.json";
  std::ofstream(scenario_path) << R"({"models": {"m": {}}})";
  auto fake = net::Process::start({bin_dir + "/infdoctor-fake", "--listen", "127.0.0.1:0", "--scenario", scenario_path,
                                   "--tls-cert", certs + "/server.pem", "--tls-key", certs + "/server.key"});
  if (!fake.ok()) return;
  auto line = (*fake)->read_line(10s);
  if (!line.ok() || line->rfind("listening on ", 0) != 0) return;
  const std::string base = "https://" + line->substr(13) + "/v1";
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":1,"stream":true})";
  std::vector<double> connect[2], tls[2], ttfb[2], d_connect, d_tls, d_ttfb;
  for (int i = 0; i < pairs; ++i) {
    auto b = net::run_command({bin_dir + "/infdoctor", "probe", "--base-url", base, "--cacert", certs + "/ca.pem",
                               "--model", "m", "--prompt", "hello", "--max-tokens", "1", "--json"},
                              10s);
    auto c = net::run_command({"curl", "-s", "-N", "-o", "/dev/null", "--cacert", certs + "/ca.pem", "-w",
                               "%{time_namelookup} %{time_connect} %{time_appconnect} %{time_starttransfer}", "-H",
                               "Content-Type: application/json", "--data-binary", body, base + "/chat/completions"},
                              10s);
    if (!b.ok() || b->exit_code != 0 || !c.ok() || c->exit_code != 0) continue;
    const auto bj = nlohmann::json::parse(b->out, nullptr, false);
    if (bj.is_discarded() || !bj["connect_ms"].is_number() || !bj["tls_ms"].is_number() || !bj["ttfb_ms"].is_number())
      continue;
    double nl = 0, co = 0, ap = 0, st = 0;
    if (std::sscanf(c->out.c_str(), "%lf %lf %lf %lf", &nl, &co, &ap, &st) != 4) continue;
    const double cc = (co - nl) * 1000, ct = (ap - co) * 1000, cf = st * 1000;
    const double ic = bj["connect_ms"].get<double>(), it = bj["tls_ms"].get<double>(), iff = bj["ttfb_ms"].get<double>();
    connect[0].push_back(cc), tls[0].push_back(ct), ttfb[0].push_back(cf);
    connect[1].push_back(ic), tls[1].push_back(it), ttfb[1].push_back(iff);
    d_connect.push_back(ic - cc), d_tls.push_back(it - ct), d_ttfb.push_back(iff - cf);
  }
  (*fake)->stop();
  if (d_ttfb.empty()) {
    std::printf("phases vs curl over TLS: no successful rounds\n");
    return;
  }
  std::printf("| HTTPS (TLS 1.3), fresh connection, %zu rounds | curl median ms | infdoctor probe median ms | "
              "median paired difference |\n|---|---|---|---|\n",
              d_ttfb.size());
  std::printf("| connect | %.3f | %.3f | %+.3f |\n", median(connect[0]), median(connect[1]), median(d_connect));
  std::printf("| TLS handshake | %.3f | %.3f | %+.3f |\n", median(tls[0]), median(tls[1]), median(d_tls));
  std::printf("| time to first byte | %.3f | %.3f | %+.3f |\n\n", median(ttfb[0]), median(ttfb[1]), median(d_ttfb));
}

std::string synthetic_stream(std::size_t target_bytes) {
  std::string out;
  const std::string head =
      "data: {\"id\":\"chatcmpl-abc123\",\"object\":\"chat.completion.chunk\",\"created\":1764680000,"
      "\"model\":\"meta-llama/Llama-3.1-8B-Instruct\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
  const char* words[] = {" the", " quick", " brown", " fox", " jumps", " over"};
  for (std::size_t i = 0; out.size() < target_bytes; ++i)
    out += head + words[i % 6] + "\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
  out += "data: [DONE]\n\n";
  return out;
}

template <typename Feed>
double mb_per_s(const std::string& s, std::size_t chunk, Feed&& feed) {
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < s.size(); i += chunk) feed(std::string_view(s).substr(i, chunk));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return static_cast<double>(s.size()) / 1e6 / secs;
}

void parser_throughput() {
  const std::string s = synthetic_stream(64u << 20);
  std::printf("| stream decoding, %.0f MB in 16 KiB chunks | MB/s (best of 3) |\n|---|---|\n",
              static_cast<double>(s.size()) / 1e6);
  double sse = 0, full = 0;
  std::size_t events = 0, tokens = 0;
  for (int rep = 0; rep < 3; ++rep) {
    http::SseParser p;
    std::vector<http::SseEvent> out;
    sse = std::max(sse, mb_per_s(s, 16384, [&](std::string_view c) {
                     p.feed(c, out);
                     events += out.size();
                     out.clear();
                   }));
    api::ChatStream cs;
    const auto now = core::SteadyClock::now();
    full = std::max(full, mb_per_s(s, 16384, [&](std::string_view c) { cs.on_body(c, now); }));
    tokens = cs.content_event_times().size();
  }
  std::printf("| SSE parser | %.0f |\n", sse);
  std::printf("| SSE + JSON per event (ChatStream) | %.0f |\n", full);
  std::printf("\n(%zu events per pass, %zu content events decoded)\n", events / 3, tokens);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  if (argc > 2 || (!first.empty() && first.find_first_not_of("0123456789") != std::string::npos)) {
    const bool help = first == "--help" || first == "-h";
    if (!help && argc > 2) std::fprintf(stderr, "bench_probe: one argument at most\n");
    else if (!help) std::fprintf(stderr, "bench_probe: PAIRS is a whole number, not %s\n", first.c_str());
    std::fprintf(help ? stdout : stderr,
                 "usage: bench_probe [PAIRS (default 200)]\ninfdoctor's time to first byte and TLS phases against curl's, "
                 "PAIRS requests each, and the SSE parser's throughput.\n");
    return help ? 0 : 64;
  }
  const int pairs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  // The programs under test sit beside this one's build tree: build/tests/bench_probe -> build/.
  std::string self = argv[0];
  const auto slash = self.rfind('/');
  const std::string bin_dir = (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/..";
  ttfb_vs_curl(pairs, bin_dir);
  phases_vs_curl_tls(pairs, bin_dir);
  parser_throughput();
  return 0;
}
