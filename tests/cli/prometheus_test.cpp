// The monitoring path with the real components: `run --prom` checked by promtool, `run --push`
// into a real Pushgateway, and `infdoctor serve` scraped by a real Prometheus in front of the fake
// provider with a planted fault, read back through Prometheus's query API.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "fake/demo_faults.h"
#include "prom/exposition.h"
#include "support/fronts.h"
#include "support/results.h"
#include "support/spawn.h"
#include "support/timing.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr const char* kSecret = "sk-prom-test-4b1d9e0c77";

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The scalar of an instant query's first series, or nothing.
std::optional<double> first_value(const nlohmann::json& answer) {
  if (answer.value("status", "") != "success") return std::nullopt;
  const auto& result = answer["data"]["result"];
  if (!result.is_array() || result.empty()) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

// Polls `promql` until its first value is `want`, up to `limit`.
bool eventually(const test::Prometheus& prom, const std::string& promql, double want, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (first_value(prom.query(promql)) == want) return true;
    std::this_thread::sleep_for(500ms);
  }
  return false;
}

// The JSON-lines log of `infdoctor serve`: each line parsed; a line that is not JSON fails.
std::vector<nlohmann::json> log_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    CHECK_MESSAGE(!j.is_discarded(), "not a JSON log line: " << line);
    if (!j.is_discarded()) out.push_back(j);
  }
  return out;
}

// `infdoctor serve` on a free loopback port, its logs in a file; stopped with SIGTERM.
struct Serve {
  test::TempFile out{"", "serve.out"};
  std::string err_path = out.dir() + "/serve.err";
  std::string address;
  std::unique_ptr<test::Child> child;

  explicit Serve(std::vector<std::string> args, std::vector<std::string> env = {}) {
    const int port = test::free_port();
    address = "127.0.0.1:" + std::to_string(port);
    std::vector<std::string> argv = {test::infdoctor_bin(), "serve", "--listen", address};
    argv.insert(argv.end(), args.begin(), args.end());
    env.push_back(std::string("PROMTEST_API_KEY=") + kSecret);
    child = std::make_unique<test::Child>(argv, env, out.path(), err_path);
    REQUIRE(child->ok());
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline && test::http_get(url("/-/healthy")).status != 200)
      std::this_thread::sleep_for(50ms);
    REQUIRE_MESSAGE(test::http_get(url("/-/healthy")).status == 200, "serve did not answer: " << slurp(err_path));
  }
  std::string url(const std::string& path) const { return "http://" + address + path; }
  test::ChildExit stop() {
    child->send(SIGTERM);
    return child->wait(60s);
  }
};

}  // namespace

TEST_CASE("prometheus: run --prom is clean for promtool check metrics, names the planted cause, and holds no key") {
  const auto* fault = fake::find_demo_fault("model_specific");
  REQUIRE(fault != nullptr);
  auto server = test::start_fake(fault->scenario);
  test::TempFile prom("", "infdoctor.prom");
  ::setenv("PROMTEST_API_KEY", kSecret, 1);
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(),
                             "--api-key-env", "PROMTEST_API_KEY", "--model", fake::kDemoModel, "--small-model", fake::kDemoSmallModel,
                             "--quick", "-s", "--prom", prom.path(), "--vantage", "lab-1"},
                            180s);
  REQUIRE(r.ok());
  CAPTURE(r->err);
  CHECK(r->exit_code == 1);
  const std::string text = slurp(prom.path());
  REQUIRE(!text.empty());
  CHECK(text.find(kSecret) == std::string::npos);
  // Written under a temporary name and renamed: nothing else is left beside it.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(prom.dir())) ++files;
  CHECK(files == 1);

  auto check = net::run_command({"sh", "-c", "promtool check metrics < '" + prom.path() + "'"}, 30s);
  REQUIRE(check.ok());
  MESSAGE("promtool check metrics: exit " << check->exit_code << ", said '" << check->out << check->err << "'");
  CHECK(check->exit_code == 0);
  CHECK(check->out + check->err == "");

  const std::string labels = "target=\"" + server->base_url() + "\",model=\"" + std::string(fake::kDemoModel) + "\",module=\"quick\",vantage=\"lab-1\"";
  CHECK(text.find("infdoctor_probe_success{" + labels + "} 1\n") != std::string::npos);
  CHECK(text.find("infdoctor_finding{" + labels + ",cause=\"model_specific\",scope=\"target_model\",severity=\"warning\"} 1\n") !=
        std::string::npos);
  // Every cause is there, found or not, so no series vanishes when its finding clears.
  for (const char* cause : {"network_rtt", "dns_slow", "tls_slow", "cold_start", "prefill_bound", "decode_bound",
                            "provider_wide", "queueing", "serialization", "rate_limited", "noisy_neighbour", "buffering"})
    CHECK_MESSAGE(text.find(",cause=\"" + std::string(cause) + "\"") != std::string::npos, cause);
  // Base units: the planted 900 ms before the target's first token, as seconds.
  const auto at = text.find("infdoctor_finding_impact_seconds{" + labels + ",cause=\"model_specific\"} ");
  REQUIRE(at != std::string::npos);
  const double impact = std::stod(text.substr(text.find("} ", at) + 2));
  MESSAGE("model_specific impact " << impact << " s (planted 0.9 s less the small model's 0.03 s)");
  CHECK(impact == doctest::Approx(0.87).epsilon(0.1));
  CHECK(text.find("_ms{") == std::string::npos);
  CHECK(text.find("infdoctor_time_to_first_token_seconds_bucket{" + labels + ",le=\"+Inf\"} ") != std::string::npos);
}

TEST_CASE("prometheus: run --push replaces the target's group in a real Pushgateway, and a dead gateway is exit 3") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 2}}})");
  test::Pushgateway gateway;
  // The grouping key (job, target, model, module, vantage) on every pushed series.
  const std::string labels = "job=\"infdoctor\",model=\"m\",module=\"quick\",target=\"local/fake\",vantage=\"ci\"";
  const auto requests_ok = [&] {
    const std::string body = test::http_get(gateway.url() + "/metrics").body;
    // The gateway sorts labels by name.
    const std::string needle = "infdoctor_requests_total{instance=\"\",job=\"infdoctor\",model=\"m\",module=\"quick\","
                               "outcome=\"ok\",target=\"local/fake\",vantage=\"ci\"} ";
    const auto at = body.find(needle);
    return at == std::string::npos ? -1.0 : std::stod(body.substr(at + needle.size()));
  };
  std::vector<double> counted;
  for (int i = 0; i < 2; ++i) {  // twice: the second replaces the first, and the gateway keeps one group
    auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--quick",
                               "--checks", "baseline", "-s", "--push", gateway.url(), "--target-name", "local/fake",
                               "--vantage", "ci"},
                              120s);
    REQUIRE(r.ok());
    CAPTURE(r->err);
    CHECK(r->exit_code == 0);
    CHECK(r->err.find("warning") == std::string::npos);
    counted.push_back(requests_ok());
  }
  // The counters go on from what the group held: the second push counts both runs' requests.
  MESSAGE("requests_total{outcome=ok} in the gateway after each push: " << counted[0] << ", " << counted[1]);
  CHECK(counted[0] > 0);
  CHECK(counted[1] == 2 * counted[0]);
  const test::Fetched got = test::http_get(gateway.url() + "/metrics");
  REQUIRE(got.status == 200);
  std::size_t groups = 0;
  for (std::size_t at = 0; (at = got.body.find("push_time_seconds{", at)) != std::string::npos; ++at) ++groups;
  MESSAGE("the gateway holds " << groups << " group(s)");
  CHECK(groups == 1);
  CHECK(got.body.find("infdoctor_probe_success{" + std::string("instance=\"\",") + labels + "} 1") != std::string::npos);
  CHECK(got.body.find("infdoctor_requests_total{instance=\"\",") != std::string::npos);

  auto dead = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--quick",
                                "--checks", "baseline", "-s", "--push", "http://user:pw@127.0.0.1:9/"},
                               120s);
  REQUIRE(dead.ok());
  CHECK(dead->exit_code == 3);
  CHECK(dead->err.find("cannot push to the Pushgateway http://REDACTED@127.0.0.1:9/") != std::string::npos);
  CHECK(dead->err.find("pw") == std::string::npos);
}

TEST_CASE("prometheus: a cron job's --prom file keeps its counters counting from run to run, and starts again when removed") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 20, "decode_ms_per_token": 2}}})");
  test::TempFile prom("", "infdoctor.prom");
  const auto run = [&] {
    auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--quick",
                               "--checks", "baseline", "-s", "--prom", prom.path()},
                              120s);
    REQUIRE(r.ok());
    CAPTURE(r->err);
    CHECK(r->exit_code == 0);
    auto e = prom::parse_exposition(slurp(prom.path()));
    REQUIRE(e.ok());
    return std::pair{prom::sum(*e, "infdoctor_requests_total", {{"outcome", "ok"}}).value_or(-1),
                     prom::sum(*e, "infdoctor_time_to_first_token_seconds_count").value_or(-1)};
  };
  const auto first = run();
  const auto second = run();
  MESSAGE("requests ok " << first.first << " then " << second.first << "; TTFT observations " << first.second << " then "
                         << second.second);
  CHECK(first.first > 0);
  CHECK(second.first == 2 * first.first);
  CHECK(second.second == 2 * first.second);
  fs::remove(prom.path());
  CHECK(run().first == first.first);
  // Not Prometheus text where the file goes: said, and counted from this run.
  std::ofstream(prom.path()) << "<html>a login page</html>\n";
  auto r = net::run_command({test::infdoctor_bin(), "run", "--base-url", server->base_url(), "--model", "m", "--quick",
                             "--checks", "baseline", "-s", "--prom", prom.path()},
                            120s);
  REQUIRE(r.ok());
  CHECK(r->exit_code == 0);
  CHECK(r->err.find("held no Prometheus text") != std::string::npos);
  auto check = net::run_command({"sh", "-c", "promtool check metrics < '" + prom.path() + "'"}, 30s);
  REQUIRE(check.ok());
  CHECK(check->exit_code == 0);
}

TEST_CASE("prometheus: a real Prometheus scrapes infdoctor serve before a fake with a planted fault and reads the cause") {
  const auto* fault = fake::find_demo_fault("model_specific");
  REQUIRE(fault != nullptr);
  auto server = test::start_fake(fault->scenario);
  test::TempFile bundles("", "bundles");
  Serve serve({"--vantage", "ci", "--bundles", bundles.dir() + "/b", "--keep-bundles", "1", "--target",
               "slow=" + server->base_url() + ",model=" + std::string(fake::kDemoModel) + ",small=" + fake::kDemoSmallModel + ",module=quick,interval=60s,key_env=PROMTEST_API_KEY",
               "--target", "ping=" + server->base_url() + ",model=" + std::string(fake::kDemoSmallModel) + ",module=probe,interval=1h"});
  const std::string exporter = serve.address;
  test::Prometheus prom("  - job_name: infdoctor\n    static_configs:\n      - targets: ['" + exporter +
                        "']\n"
                        "  - job_name: infdoctor_probe\n    metrics_path: /probe\n    params:\n      target: [ping]\n"
                        "      module: [probe]\n    static_configs:\n      - targets: ['" + exporter + "']\n");
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(eventually(prom, "infdoctor_probe_success{job=\"infdoctor\",target=\"slow\"}", 1, 150s));
  CHECK(eventually(prom,
                   "infdoctor_finding{job=\"infdoctor\",target=\"slow\",cause=\"model_specific\",scope=\"target_model\","
                   "vantage=\"ci\",module=\"quick\"}",
                   1, 10s));
  MESSAGE("Prometheus read probe_success 1 and the planted cause after "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  // Every other cause is there as 0.
  CHECK(first_value(prom.query("count(infdoctor_finding{job=\"infdoctor\",target=\"slow\"} == 0)")) >= 20);
  // /probe, scraped the way blackbox_exporter's is: one streamed request at each scrape.
  CHECK(eventually(prom, "infdoctor_probe_success{job=\"infdoctor_probe\",target=\"ping\",module=\"probe\"}", 1, 20s));
  CHECK(eventually(prom, "up{job=\"infdoctor_probe\"}", 1, 5s));
  const auto ttft = first_value(prom.query(
      "histogram_quantile(0.5, sum by (le) (infdoctor_time_to_first_token_seconds_bucket{job=\"infdoctor\",target=\"slow\"}))"));
  REQUIRE(ttft.has_value());
  MESSAGE("median TTFT of the target from the histogram: " << *ttft << " s (planted 0.9 s; histogram_quantile interpolates within the 0.75-1 s bucket)");
  CHECK(*ttft > 0.8);
  CHECK(*ttft < 1.0);

  // The dashboard's and the alerts' expressions are valid PromQL against these series.
  const auto dashboard = nlohmann::json::parse(slurp(INFDOCTOR_SOURCE_DIR "/rules/deploy/grafana-dashboard.json"));
  int exprs = 0;
  for (const auto& panel : dashboard["panels"])
    for (const auto& target : panel.value("targets", nlohmann::json::array())) {
      std::string expr = target["expr"];
      for (const auto& [var, value] : {std::pair{"$vantage", "ci"}, {"$target", "slow"}})
        for (std::size_t at; (at = expr.find(var)) != std::string::npos;) expr.replace(at, std::string(var).size(), value);
      const auto answer = prom.query(expr);
      CHECK_MESSAGE(answer.value("status", "") == "success", expr << ": " << answer.dump());
      ++exprs;
    }
  CHECK(exprs >= 4);

  // Runs rotate their bundles: with --keep-bundles 1, one is left, and /bundles serves it (the
  // second run is due in the target's slot, 30 to 90 s after the first began).
  CHECK(eventually(prom, "infdoctor_runs_total{job=\"infdoctor\",target=\"slow\",outcome=\"completed\"} >= bool 2", 1, 120s));
  const test::Fetched list = test::http_get(serve.url("/bundles/slow/"));
  CHECK(list.status == 200);
  std::size_t listed = 0;
  for (std::size_t at = 0; (at = list.body.find("<li>", at)) != std::string::npos; ++at) ++listed;
  CHECK(listed == 1);
  const test::Fetched summary = test::http_get(serve.url("/bundles/slow/latest/summary.md"));
  CHECK(summary.status == 200);
  CHECK(summary.body.find("model_specific") != std::string::npos);
  CHECK(test::http_get(serve.url("/bundles/slow/latest/..%2F..%2Fetc%2Fpasswd")).status == 404);
  // compare reads a run from an exporter's bundle URL: the latest run against itself is no gap.
  auto same = net::run_command({test::infdoctor_bin(), "compare", "--a-results", "here=" + serve.url("/bundles/slow/latest/"),
                                "--b-results", "there=" + serve.url("/bundles/slow/latest/")},
                               30s);
  REQUIRE(same.ok());
  CAPTURE(same->err);
  CHECK(same->exit_code == 0);
  CHECK(same->out.find("here: run of ") == 0);

  const test::Fetched metrics = test::http_get(serve.url("/metrics"));
  CHECK(metrics.body.find(kSecret) == std::string::npos);
  const auto exit = serve.stop();
  CHECK_FALSE(exit.timed_out);
  CHECK(exit.exit_code == 0);
  const std::string log = slurp(serve.err_path);
  CHECK(log.find(kSecret) == std::string::npos);
  const auto lines = log_lines(serve.err_path);
  REQUIRE(!lines.empty());
  for (const auto& l : lines) {
    CHECK(l.contains("time"));
    CHECK(l.contains("level"));
    CHECK(l.contains("msg"));
  }
  CHECK(lines.back()["msg"] == "stopped");
}

TEST_CASE("prometheus: serve keeps to each target's budget, reloads its config on SIGHUP, and keeps the old one when the new is wrong") {
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 10, "decode_ms_per_token": 1}}})");
  test::TempFile config("costly=" + server->base_url() + ",model=m,module=quick,budget=5\n", "targets.conf");
  Serve serve({"--config", config.path(), "--bundles", ""});
  const auto metric = [&](const std::string& needle) {
    const std::string body = test::http_get(serve.url("/metrics")).body;
    const auto at = body.find(needle);
    return at == std::string::npos ? -1.0 : std::stod(body.substr(at + needle.size()));
  };
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline &&
         test::http_get(serve.url("/metrics")).body.find("outcome=\"skipped_budget\"} 1") == std::string::npos)
    std::this_thread::sleep_for(100ms);
  CHECK(test::http_get(serve.url("/metrics")).body.find("outcome=\"skipped_budget\"} 1") != std::string::npos);
  CHECK(server->served().empty());  // a quick run costs about 35 requests: none was sent

  // On-demand probes: an unknown target and a module that takes minutes are refused with the reason.
  const auto unknown = test::http_get(serve.url("/probe?target=nope"));
  CHECK(unknown.status == 400);
  CHECK(unknown.body.find("known: costly") != std::string::npos);
  CHECK(test::http_get(serve.url("/probe?target=costly&module=quick")).status == 400);
  const auto probed = test::http_get(serve.url("/probe?target=costly"), {"X-Prometheus-Scrape-Timeout-Seconds: 5"});
  CHECK(probed.status == 200);
  CHECK(probed.body.find("infdoctor_probe_success{target=\"costly\",model=\"m\",module=\"probe\",") != std::string::npos);
  CHECK(server->served().size() == 1);
  CHECK(test::http_get(serve.url("/-/ready")).status == 200);
  CHECK(test::http_get(serve.url("/nothing")).status == 404);

  // A new target by SIGHUP; then a broken file, which leaves the targets as they were.
  std::ofstream(config.path()) << "fast=" << server->base_url() << ",model=m,module=probe,interval=10s\n";
  serve.child->send(SIGHUP);
  const auto d2 = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < d2 &&
         test::http_get(serve.url("/metrics")).body.find("infdoctor_probe_success{target=\"fast\"") == std::string::npos)
    std::this_thread::sleep_for(100ms);
  std::string body = test::http_get(serve.url("/metrics")).body;
  CHECK(body.find("infdoctor_probe_success{target=\"fast\",model=\"m\",module=\"probe\",") != std::string::npos);
  CHECK(body.find("target=\"costly\"") == std::string::npos);
  CHECK(metric("\ninfdoctor_config_last_reload_successful ") == 1);

  std::ofstream(config.path()) << "fast=" << server->base_url() << ",model=m,module=sometimes\n";
  serve.child->send(SIGHUP);
  const auto d3 = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < d3 && metric("\ninfdoctor_config_last_reload_successful ") != 0)
    std::this_thread::sleep_for(100ms);
  CHECK(metric("\ninfdoctor_config_last_reload_successful ") == 0);
  body = test::http_get(serve.url("/metrics")).body;
  CHECK(body.find("infdoctor_probe_success{target=\"fast\"") != std::string::npos);

  const auto exit = serve.stop();
  CHECK(exit.exit_code == 0);
  bool said = false;
  for (const auto& l : log_lines(serve.err_path))
    said = said || (l["level"] == "error" && l["msg"].get<std::string>().find("module 'sometimes'") != std::string::npos);
  CHECK(said);
}

// The line of an exposition that starts with `prefix` ("infdoctor_probe_success{target=\"a\""), or "".
std::string sample_line(const std::string& body, const std::string& prefix) {
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return {};
}

double sample_value(const std::string& line) {
  const auto space = line.rfind(' ');
  return space == std::string::npos ? -1 : std::stod(line.substr(space + 1));
}

std::string percent_encoded(const std::string& s) {
  std::string out;
  for (const unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

TEST_CASE("prometheus: serve as a blackbox user expects: series from the start, runs within their interval, a probe's bundle, "
          "/probe?target=URL only where allowed, typed log fields") {
  // One model answers; the other sends its headers and then nothing for a minute.
  auto server = test::start_fake(R"({"models": {
      "Qwen2.5-7B-Instruct": {"overhead_ms": 20, "decode_ms_per_token": 2},
      "gpt-4o-mini": {"overhead_ms": 300, "decode_ms_per_token": 20},
      "Llama-3.1-70B-Instruct": {"overhead_ms": 20, "faults": [{"kind": "stall", "every": 1, "after_tokens": 0, "stall_ms": 60000}]}}})");
  test::TempFile bundles("", "bundles");
  const auto t0 = std::chrono::steady_clock::now();
  // The runs go one at a time, by name: "hung", "ping", then "slowrun", a quick checklist longer
  // than its interval.
  Serve serve({"--bundles", bundles.dir() + "/b", "--allow-target", R"(http://127\.0\.0\.1:[0-9]+/v1)", "--target",
               "hung=" + server->base_url() + ",model=Llama-3.1-70B-Instruct,module=probe,interval=10s", "--target",
               "ping=" + server->base_url() + ",model=Qwen2.5-7B-Instruct,module=probe,interval=1h", "--target",
               "slowrun=" + server->base_url() + ",model=gpt-4o-mini,module=quick,interval=10s"},
              {std::string("OPENAI_API_KEY=") + kSecret});
  const auto body = [&] { return test::http_get(serve.url("/metrics")).body; };

  // Every configured target's series are there before its first run ends.
  std::string first = body();
  CHECK(sample_value(sample_line(first, "infdoctor_probe_success{target=\"hung\",")) == 0);
  CHECK(sample_value(sample_line(first, "infdoctor_probe_success{target=\"ping\",")) == 0);
  CHECK(sample_line(first, "infdoctor_requests_total{target=\"ping\",") != "");
  CHECK(sample_line(first, "infdoctor_last_run_timestamp_seconds{target=\"hung\",") == "");  // no run yet: no staleness

  // The hung target's run ends by its interval (10 s), not the request timeout (60 s).
  std::string now;
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until) {
    now = body();
    if (sample_value(sample_line(now, "infdoctor_probe_success{target=\"ping\",")) == 1) break;
    std::this_thread::sleep_for(100ms);
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("ping answered " << waited << " s after serve started, behind hung's run of "
                           << sample_value(sample_line(now, "infdoctor_probe_duration_seconds{target=\"hung\",")) << " s");
  CHECK(sample_value(sample_line(now, "infdoctor_probe_success{target=\"ping\",")) == 1);
  CHECK(sample_value(sample_line(now, "infdoctor_probe_success{target=\"hung\",")) == 0);
  const double hung_s = sample_value(sample_line(now, "infdoctor_probe_duration_seconds{target=\"hung\","));
  CHECK(hung_s > 9.0);
  CHECK(hung_s < 11.0);
  CHECK(waited < 16.0);
  // The exporter times its own scrapes: the previous one's build, the CPU it used, its wait for a CPU.
  CHECK(sample_line(first, "infdoctor_metrics_build_seconds ") == "");
  const double build_s = sample_value(sample_line(now, "infdoctor_metrics_build_seconds "));
  const double build_cpu_s = sample_value(sample_line(now, "infdoctor_metrics_build_cpu_seconds "));
  const double build_queue_s = sample_value(sample_line(now, "infdoctor_metrics_build_runqueue_seconds "));
  CHECK(build_s > 0);
  CHECK(build_s < 1);
  CHECK(build_cpu_s > 0);
  CHECK(build_cpu_s <= build_s + 0.001);  // clocks read a microsecond apart
  CHECK(build_queue_s >= 0);
  CHECK(build_queue_s <= build_s + 0.001);

  // A probe target keeps its last bundle, so an alert's link to it works.
  const test::Fetched summary = test::http_get(serve.url("/bundles/ping/latest/summary.md"));
  CHECK(summary.status == 200);
  CHECK(summary.body.find("Qwen2.5-7B-Instruct") != std::string::npos);
  const test::Fetched results = test::http_get(serve.url("/bundles/ping/latest/results.json"));
  CHECK(results.status == 200);
  CHECK(test::http_get(serve.url("/bundles/hung/latest/summary.md")).status == 200);

  // /probe?target=URL, as Prometheus sends it (percent-encoded), for a URL --allow-target admits;
  // no key of this host's goes to it.
  // (Only the probes ask Qwen2.5-7B-Instruct: slowrun's checklist may be sending meanwhile.)
  const auto qwen = [&] {
    std::vector<fake::ServedRequest> out;
    for (const auto& r : server->served())
      if (r.model == "Qwen2.5-7B-Instruct") out.push_back(r);
    return out;
  };
  const std::size_t before = qwen().size();
  const auto probed = test::http_get(serve.url("/probe?target=" + percent_encoded(server->base_url()) + "&model=Qwen2.5-7B-Instruct"),
                                     {"X-Prometheus-Scrape-Timeout-Seconds: 5"});
  CHECK(probed.status == 200);
  CHECK_MESSAGE(sample_value(sample_line(probed.body, "infdoctor_probe_success{target=\"" + server->base_url() +
                                                          "\",model=\"Qwen2.5-7B-Instruct\",module=\"probe\",")) == 1,
                probed.body);
  const auto served = qwen();
  REQUIRE(served.size() == before + 1);
  CHECK(served.back().key_header == "");
  // A URL it does not admit, and one without its model, are refused before anything is sent.
  const auto outside = test::http_get(serve.url("/probe?target=" + percent_encoded("http://10.0.0.1:8000/v1") + "&model=m"));
  CHECK(outside.status == 403);
  CHECK(outside.body.find("not admitted by --allow-target") != std::string::npos);
  CHECK(test::http_get(serve.url("/probe?target=" + percent_encoded(server->base_url()))).status == 400);
  CHECK(qwen().size() == before + 1);

  // The checklist ends by its interval too: the checks it had no time for are skipped, saying why.
  const auto d2 = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < d2 &&
         sample_value(sample_line(body(), "infdoctor_runs_total{target=\"slowrun\",model=\"gpt-4o-mini\",module=\"quick\",")) < 1)
    std::this_thread::sleep_for(200ms);
  const std::string after = body();
  const double slow_s = sample_value(sample_line(after, "infdoctor_probe_duration_seconds{target=\"slowrun\","));
  MESSAGE("the quick run with a 10 s interval took " << slow_s << " s");
  // Unbounded, the same quick run takes about 18 s; diagnosing and writing the bundle come after
  // the deadline (slower under the sanitizers).
  CHECK(slow_s > 8.0);
  CHECK(slow_s < 14.0);
  const auto slow_results = nlohmann::json::parse(test::http_get(serve.url("/bundles/slowrun/latest/results.json")).body, nullptr, false);
  REQUIRE(slow_results.is_object());
  int cut = 0;
  for (const auto& [id, c] : slow_results["checks"].items()) {
    CAPTURE(id);
    if (c.value("error", nlohmann::json()).is_string() && c["error"] == "run_deadline") {
      ++cut;
      CHECK(c["status"] == "skipped");
    }
  }
  CHECK(cut >= 1);

  const auto exit = serve.stop();
  CHECK(exit.exit_code == 0);
  // Log fields keep their JSON types.
  int finished = 0;
  for (const auto& l : log_lines(serve.err_path)) {
    if (l["msg"] != "run finished") continue;
    ++finished;
    CHECK(l["exit_code"].is_number_integer());
    CHECK(l["seconds"].is_number());
    CHECK(l["target"].is_string());
  }
  CHECK(finished >= 3);
  CHECK(slurp(serve.err_path).find(kSecret) == std::string::npos);

  // Without --allow-target, a URL is not probed at all.
  Serve closed({"--bundles", "", "--target", "ping=" + server->base_url() + ",model=Qwen2.5-7B-Instruct,module=probe,interval=1h"});
  const auto refused = test::http_get(closed.url("/probe?target=" + percent_encoded(server->base_url()) + "&model=Qwen2.5-7B-Instruct"));
  CHECK(refused.status == 403);
  CHECK(refused.body.find("needs --allow-target") != std::string::npos);
  CHECK(closed.stop().exit_code == 0);
}

// The lines of a log being written: each whole JSON line, the last one skipped while it is half
// written (log_lines checks a finished log).
std::vector<nlohmann::json> log_so_far(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(path));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.push_back(j);
  }
  return out;
}

std::size_t count_msg(const std::vector<nlohmann::json>& lines, const std::string& msg, const std::string& target = "") {
  return static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [&](const nlohmann::json& l) {
    return l.value("msg", "") == msg && (target.empty() || l.value("target", "") == target);
  }));
}

// Polls the log until `done` holds of its lines, up to `limit`.
bool log_reaches(const std::string& path, std::chrono::seconds limit, const std::function<bool(const std::vector<nlohmann::json>&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done(log_so_far(path))) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done(log_so_far(path));
}

// Every file under `dir`: its path relative to `dir`.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    out.push_back(fs::relative(it->path(), dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

// The kept bundles of a target: DIR/NAME/STAMP directories.
std::vector<std::string> stamps_of(const std::string& bundles, const std::string& target) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(bundles + "/" + target, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory() && it->path().filename().string().size() == 16) out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("prometheus: serve on SIGTERM with many targets due starts no run after it, lets the one in flight end, and keeps "
          "no bundle saying interrupted") {
  // 100 probe targets, each run about 60 ms, all due at the start: they run one after another,
  // and SIGTERM comes when about 30 have, the rest still due.
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 40, "decode_ms_per_token": 1}}})");
  std::string conf;
  for (int i = 0; i < 100; ++i) conf += "p" + std::to_string(100 + i) + "=" + server->base_url() + ",model=m,module=probe,interval=10s\n";
  test::TempFile config(conf, "targets.conf");
  const std::string bundles = config.dir() + "/b";
  Serve serve({"--config", config.path(), "--bundles", bundles});
  REQUIRE(log_reaches(serve.err_path, 30s, [](const auto& l) { return count_msg(l, "run finished") >= 30; }));
  // /metrics joins each target's families as rendered when its run ended, some targets with a run
  // and some without: still one block a family, every target there, clean for promtool.
  test::TempFile scraped(test::http_get(serve.url("/metrics")).body, "metrics.txt");
  auto exposition = prom::parse_exposition(slurp(scraped.path()));
  REQUIRE(exposition.ok());
  std::set<std::string> with_success, with_timestamp;
  for (const auto& sample : exposition->samples) {
    if (sample.name == "infdoctor_probe_success") with_success.insert(sample.label("target").value_or(""));
    if (sample.name == "infdoctor_last_run_timestamp_seconds") with_timestamp.insert(sample.label("target").value_or(""));
  }
  CHECK(with_success.size() == 100);
  CHECK(with_timestamp.size() >= 30);
  CHECK(with_timestamp.size() < 100);
  auto promtool = net::run_command({"sh", "-c", "promtool check metrics < '" + scraped.path() + "'"}, 30s);
  REQUIRE(promtool.ok());
  CHECK(promtool->exit_code == 0);
  CHECK(promtool->out + promtool->err == "");
  const auto signalled = std::chrono::steady_clock::now();
  const double signalled_unix = core::unix_seconds_now();
  const auto exit = serve.stop();
  CHECK_FALSE(exit.timed_out);
  CHECK(exit.exit_code == 0);

  const auto lines = log_lines(serve.err_path);
  const std::size_t started = count_msg(lines, "run started"), finished = count_msg(lines, "run finished");
  std::size_t started_after = 0;
  for (const auto& l : lines)
    if (l.value("msg", "") == "run started" && core::parse_rfc3339_utc(l.value("time", "")).value_or(0) > signalled_unix) ++started_after;
  std::size_t sent_after = 0;
  for (const auto& r : server->served()) sent_after += r.arrived > signalled ? 1 : 0;
  MESSAGE(started << " runs started of 100 targets due; " << started_after << " log a start after SIGTERM, " << sent_after
                  << " request(s) reached the provider after it");
  CHECK(started < 90);  // many were still due: the signal stopped them
  // At most the run that had begun as the signal came: it goes on to its end, and is counted.
  CHECK(started_after <= 1);
  CHECK(sent_after <= 1);
  CHECK(finished == started);
  CHECK(count_msg(lines, "run stopped by the shutdown: its results and partial bundle are discarded") == 0);
  for (const auto& l : lines) {
    CAPTURE(l.dump());
    CHECK(l.value("level", "") != "error");
    CHECK(l.value("exit_code", 0) == 0);
    CHECK(l.dump().find("interrupted") == std::string::npos);
  }
  // Each run that finished kept its bundle (a target's first run): none half written, none interrupted.
  for (const auto& f : files_under(bundles)) {
    CAPTURE(f);
    CHECK(f.find(".partial-") == std::string::npos);
    if (f.ends_with(".md") || f.ends_with(".html")) CHECK(slurp(bundles + "/" + f).find("interrupted") == std::string::npos);
    if (f.ends_with("/results.json")) {
      const auto j = nlohmann::json::parse(slurp(bundles + "/" + f), nullptr, false);
      CHECK(j.value("partial", true) == false);
      CHECK(j.value("unreachable", nlohmann::json()).is_null());
    }
  }
  std::size_t stamps = 0;
  for (int i = 0; i < 100; ++i) stamps += stamps_of(bundles, "p" + std::to_string(100 + i)).size();
  CHECK(stamps == finished);
}

TEST_CASE("prometheus: serve cuts short a run still going after --shutdown-grace, discards it with its partial bundle, and "
          "answers /metrics meanwhile") {
  // "q" runs the quick checklist against a model that answers in about half a second; "a" probes
  // a fast one first (targets run in name order).
  auto server = test::start_fake(R"({"models": {"m": {"overhead_ms": 10, "decode_ms_per_token": 1},
                                                "slow": {"overhead_ms": 300, "decode_ms_per_token": 10}}})");
  test::TempFile bundles("", "bundles");
  const std::string dir = bundles.dir() + "/b";
  Serve serve({"--bundles", dir, "--shutdown-grace", "2s", "--target",
               "a=" + server->base_url() + ",model=m,module=probe,interval=1h", "--target",
               "q=" + server->base_url() + ",model=slow,small=m,module=quick,interval=10m"});
  REQUIRE(log_reaches(serve.err_path, 30s, [](const auto& l) { return count_msg(l, "run started", "q") == 1; }));
  std::this_thread::sleep_for(1s);  // well into q's run, which takes over ten seconds
  const auto signalled = std::chrono::steady_clock::now();
  serve.child->send(SIGTERM);
  // While the run has its grace the exporter still answers, and says it is stopping.
  REQUIRE(log_reaches(serve.err_path, 5s, [](const auto& l) { return count_msg(l, "stopping (SIGTERM)") == 1; }));
  CHECK(test::http_get(serve.url("/-/ready")).status == 503);
  CHECK(test::http_get(serve.url("/probe?target=a")).status == 503);
  const test::Fetched metrics = test::http_get(serve.url("/metrics"));
  CHECK(metrics.status == 200);
  CHECK(sample_value(sample_line(metrics.body, "infdoctor_run_in_progress{target=\"q\",")) == 1);
  const auto exit = serve.child->wait(30s);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  MESSAGE("exited " << took << " s after SIGTERM, with a grace of 2 s");
  CHECK_FALSE(exit.timed_out);
  CHECK(exit.exit_code == 0);
  CHECK(took > 1.9);
  CHECK(took < 2.0 + 5.0 * test::kTimingSlack);  // the cut run ends within moments, then the server stops

  const auto lines = log_lines(serve.err_path);
  CHECK(count_msg(lines, "run stopped by the shutdown: its results and partial bundle are discarded", "q") == 1);
  CHECK(count_msg(lines, "run finished", "q") == 0);
  CHECK(count_msg(lines, "run finished", "a") == 1);
  for (const auto& l : lines) {
    CAPTURE(l.dump());
    CHECK(l.value("level", "") != "error");
    CHECK(l.dump().find("interrupted") == std::string::npos);
  }
  CHECK(lines.back()["msg"] == "stopped");
  // q's partial bundle is gone; a's first run is kept, with why.
  CHECK(files_under(dir + "/q").empty());
  const auto kept = stamps_of(dir, "a");
  REQUIRE(kept.size() == 1);
  CHECK(slurp(dir + "/a/" + kept[0] + ".kept").find("\"reason\":\"first\"") != std::string::npos);
}

TEST_CASE("prometheus: serve keeps a probe target's bundle for a failure, its first run and a recovery, otherwise one per "
          "--probe-bundle-every, and /bundles says why") {
  // --probe-bundle-every 25s stands for the hour: probes every 10 s keep one bundle in 25 s.
  auto server = test::start_fake(R"({"models": {"ok": {"overhead_ms": 10, "decode_ms_per_token": 1},
      "down": {"overhead_ms": 5, "faults": [{"kind": "503", "every": 1}]},
      "flaky": {"overhead_ms": 5, "faults": [{"kind": "503", "first": 1}]}}})");
  test::TempFile bundles("", "bundles");
  const std::string dir = bundles.dir() + "/b";
  constexpr double kEvery = 25;
  Serve serve({"--bundles", dir, "--keep-bundles", "10", "--probe-bundle-every", "25s", "--target",
               "healthy=" + server->base_url() + ",model=ok,module=probe,interval=10s", "--target",
               "failing=" + server->base_url() + ",model=down,module=probe,interval=10s", "--target",
               "flaky=" + server->base_url() + ",model=flaky,module=probe,interval=10s"});
  // The first run at once, the second in the target's slot 5 to 15 s later, then every 10 s: the
  // fourth within 35 s.
  CHECK(log_reaches(serve.err_path, 60s, [](const auto& l) {
    return count_msg(l, "run finished", "healthy") >= 4 && count_msg(l, "run finished", "flaky") >= 3;
  }));
  const test::Fetched listing = test::http_get(serve.url("/bundles/healthy/"));
  const test::Fetched failing_listing = test::http_get(serve.url("/bundles/failing/"));
  const test::Fetched flaky_listing = test::http_get(serve.url("/bundles/flaky/"));
  CHECK(serve.stop().exit_code == 0);
  const auto lines = log_lines(serve.err_path);
  const auto runs_of = [&](const std::string& target) {
    std::vector<std::pair<double, std::string>> out;  // when each run finished, and why its bundle was kept ("" when not)
    for (const auto& l : lines)
      if (l.value("msg", "") == "run finished" && l.value("target", "") == target)
        out.emplace_back(core::parse_rfc3339_utc(l.value("time", "")).value_or(0), l.value("kept", ""));
    return out;
  };

  // Healthy: its first run, then one when 25 s have passed since the last kept (give or take the
  // 0.2 s between a run's end and its log line), and none between.
  const auto healthy = runs_of("healthy");
  REQUIRE(healthy.size() >= 4);
  CHECK(healthy[0].second == "first");
  double last_kept = healthy[0].first;
  std::size_t kept = 1;
  for (std::size_t i = 1; i < healthy.size(); ++i) {
    const double since = healthy[i].first - last_kept;
    CAPTURE(i);
    CAPTURE(since);
    if (healthy[i].second.empty()) {
      CHECK(since < kEvery + 0.2);
      continue;
    }
    CHECK(healthy[i].second == "periodic");
    CHECK(since > kEvery - 0.2);
    last_kept = healthy[i].first;
    ++kept;
  }
  MESSAGE("healthy: " << healthy.size() << " runs, " << kept << " bundles kept");
  CHECK(kept >= 2);
  CHECK(kept < healthy.size());
  CHECK(stamps_of(dir, "healthy").size() == kept);
  CHECK(listing.body.find("first: the target's first run since the exporter started") != std::string::npos);
  CHECK(listing.body.find("periodic: no bundle of the target was kept for 25 seconds") != std::string::npos);

  // Failing: every failure is kept.
  const auto failing = runs_of("failing");
  REQUIRE(failing.size() >= 3);
  for (const auto& [_, why] : failing) CHECK(why == "failure");
  CHECK(stamps_of(dir, "failing").size() == failing.size());
  CHECK(failing_listing.body.find("failure: the run failed: ") != std::string::npos);
  for (const auto& stamp : stamps_of(dir, "failing"))
    CHECK(slurp(dir + "/failing/" + stamp + ".kept").find("\"reason\":\"failure\"") != std::string::npos);

  // Flaky: its failure, then the recovery; the next healthy run within 25 s tells nothing new.
  const auto flaky = runs_of("flaky");
  REQUIRE(flaky.size() >= 3);
  CHECK(flaky[0].second == "failure");
  CHECK(flaky[1].second == "recovered");
  if (flaky[2].first - flaky[1].first < kEvery - 0.2) CHECK(flaky[2].second.empty());
  CHECK(flaky_listing.body.find("recovered: the first run to succeed after a failure") != std::string::npos);
}

TEST_CASE("prometheus: serve refuses a wrong target or listen address before it starts") {
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--target", "a=http://127.0.0.1:9/v1"}, "needs model="},
           {{"--target", "a=http://127.0.0.1:9/v1,model=m,interval=5s"}, "under 10 s"},
           {{"--target", "a=http://127.0.0.1:9/v1,model=m,budget=lots"}, "budget 'lots'"},
           {{"--target", "a=http://127.0.0.1:9/v1,model=m", "--target", "a=http://127.0.0.1:9/v1,model=n"}, "given twice"},
           {{"--listen", "localhost", "--target", "a=http://127.0.0.1:9/v1,model=m"}, "want HOST:PORT"},
           {{}, "no target"},
           {{"--config", "/nonexistent/targets.conf"}, "cannot read --config"}}) {
    std::vector<std::string> argv = {test::infdoctor_bin(), "serve", "--bundles", ""};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = net::run_command(argv, 20s);
    REQUIRE(r.ok());
    CAPTURE(r->err);
    CHECK_FALSE(r->timed_out);
    CHECK(r->exit_code != 0);
    CHECK(r->err.find(says) != std::string::npos);
  }
}

}  // namespace infdoctor
