// The run over the namespace lab where the instrument must measure what it used to assume: a
// corporate egress (the client's own route to the server closed, every request through squid on
// the router, given in $https_proxy), and a first request whose segment the wire drops. Needs root,
// /dev/net/tun, iproute2 and squid; elsewhere each test says why it skips.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "fake/forward_proxy.h"
#include "fake/lab.h"
#include "net/subprocess.h"
#include "support/fake_process.h"
#include "support/results.h"
#include "support/seed.h"

namespace infdoctor {
namespace {

using namespace std::chrono_literals;
using test::findings_of;
using test::top_cause;
using fake::Lab;

bool lab_available(bool proxy) {
  auto why = Lab::unavailable_reason();
  if (!why && proxy) why = fake::ForwardProxy::unavailable_reason();
  if (why) MESSAGE("skipped: " << *why);
  return !why;
}

double draw(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(test::rng()); }

// A healthy pair named as providers name them: a 70B decoding at `decode` ms a token and a 3B, both
// with timing headers (server-timing, openai-processing-ms), `extra` planted on both.
std::string pair_scenario(double decode, const std::string& extra = "") {
  const auto model = [&](double overhead, double prefill, double d) {
    return R"({"overhead_ms": )" + std::to_string(overhead) + R"(, "prefill_ms_per_token": )" + std::to_string(prefill) +
           R"(, "decode_ms_per_token": )" + std::to_string(d) + R"(, "jitter_ms": 4, "tokens_per_event": 2, "timing_headers": true)" +
           extra + "}";
  };
  return R"({"models": {"Llama-3.1-70B-Instruct": )" + model(80, 0.06, decode) + R"(, "Llama-3.2-3B-Instruct": )" +
         model(45, 0.012, decode / 4) + "}}";
}

std::unique_ptr<fake::Server> fake_in(const Lab& lab, const std::string& scenario_json, bool tls) {
  std::unique_ptr<fake::Server> server;
  fake::in_netns(lab.server_ns(), [&] {
    auto scenario = fake::parse_scenario(scenario_json, "lab");
    REQUIRE(scenario.ok());
    fake::ServerOptions o;
    o.host = Lab::kServerIp;
    o.port = 8443;
    if (tls) {
      o.tls_cert = test::certs_dir() + "/server.pem";
      o.tls_key = test::certs_dir() + "/server.key";
    }
    auto s = fake::Server::start(std::move(scenario.value()), o);
    REQUIRE_MESSAGE(s.ok(), (s.ok() ? "" : s.error().message + ": " + s.error().detail));
    server = std::move(s.value());
  });
  return server;
}

// `infdoctor run` in the client namespace with `env` (NAME=VALUE) in its environment.
nlohmann::json run_in(const Lab& lab, const std::vector<std::string>& env, std::vector<std::string> args) {
  std::vector<std::string> argv = {"ip", "netns", "exec", lab.client_ns(), "env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(), {test::infdoctor_bin(), "run", "--model", "Llama-3.1-70B-Instruct", "--small-model",
                           "Llama-3.2-3B-Instruct", "--api-key-env", "INFDOCTOR_LAB_NO_KEY", "--json", "-"});
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = net::run_command(argv, 240s);
  REQUIRE(r.ok());
  CHECK_FALSE(r->timed_out);
  auto j = nlohmann::json::parse(r->out, nullptr, false);
  REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << r->out << r->err);
  return j;
}

}  // namespace

TEST_CASE("lab: through a proxy from the environment, the direct route closed, a healthy endpoint stays healthy") {
  if (!lab_available(true)) return;
  const double one_way = draw(5, 30), decode = draw(15, 28);
  MESSAGE("planted: " << 2 * one_way << " ms round trip router-server, decode " << decode
                      << " ms a token; the client's direct route closed, squid on the router");
  Lab lab({one_way, 0, /*direct_closed=*/true, 0});
  REQUIRE_MESSAGE(lab.ok(), lab.error());
  auto server = fake_in(lab, pair_scenario(decode), /*tls=*/true);
  auto proxy = fake::ForwardProxy::start({{}, lab.router_ns(), Lab::kRouterIp, 0});
  REQUIRE_MESSAGE(proxy.ok(), (proxy.ok() ? "" : proxy.error().message));
  const auto j = run_in(lab, {"https_proxy=" + (*proxy)->url()},
                        {"--base-url", "https://" + std::string(Lab::kServerIp) + ":8443/v1", "--cacert",
                         test::certs_dir() + "/ca.pem", "--checks", "path,transport,coldstart,baseline,sweep,serialization",
                         "--set", "coldstart.idle_gaps=1", "--set", "sweep.prompt_tokens=64,512,2048",
                         "--set", "sweep.max_tokens=1,32,128", "--set", "serialization.repeats=1"});
  CAPTURE(findings_of(j));
  const auto& path = j["checks"]["path"]["metrics"];
  // The path the requests take is the proxy's; the direct one is a fact, not loss.
  CHECK(path["via_proxy_count"] == 1);
  CHECK(path["direct_answered_ratio"] == 0);
  CHECK(path["tcp_loss_ratio"] == 0);
  CHECK((*proxy)->tunnels() > 0);
  int via = 0, tunnels = 0;
  for (const auto& s : j["checks"]["baseline"]["samples"]) {
    via += s["proxy"].is_string();
    tunnels += s["tunnel_ms"].is_number();
  }
  CHECK(via > 0);
  // The network term is the endpoint's round trip through the tunnel, not the proxy's.
  CHECK(j["run"]["metrics"]["path_rtt_ms"].get<double>() >= 2 * one_way - 1);
  // So is the round trip slow start multiplies on the bodies' far side: read, not connected for
  // on the closed direct route.
  const auto& ser = j["checks"]["serialization"];
  CAPTURE(ser["details"]);
  REQUIRE(ser["metrics"].contains("path_rtt_ms"));
  CHECK(ser["metrics"]["path_rtt_ms"] == j["run"]["metrics"]["path_rtt_ms"]);
  CHECK(ser["details"]["round_trip"].get<std::string>().find("through the proxy") != std::string::npos);
  for (const auto& f : j["diagnosis"]) {
    CHECK_MESSAGE(f["severity"] == "info", f["rule"]);
    CHECK(f["cause"] != "network_loss");
  }
  CHECK(j["run"]["metrics"]["explained_ratio"].get<double>() >= 0.9);
  MESSAGE("found: " << (findings_of(j).empty() ? std::string("nothing") : findings_of(j)) << "; path to the proxy "
                    << path["tcp_rtt_p50_ms"] << " ms, through the tunnel " << j["run"]["metrics"]["path_rtt_ms"]
                    << " ms; the terms explain " << j["run"]["metrics"]["explained_ratio"] << " of the time; " << tunnels
                    << " baseline requests opened a tunnel");
}

TEST_CASE("lab: a segment lost before the run's first answer is the network's, not a cold start") {
  if (!lab_available(false)) return;
  // The wire drops the first two segments towards the server (the first request, then the tail loss
  // probe that sends it again): the request arrives after a retransmission timeout. The server's own
  // timing says it spent as long on it as on every other.
  Lab lab({10, 0, false, /*drop_payload_to_server=*/1, /*drop_payload_count=*/2});
  REQUIRE_MESSAGE(lab.ok(), lab.error());
  auto server = fake_in(lab, pair_scenario(draw(15, 28)), /*tls=*/false);
  const auto j = run_in(lab, {}, {"--base-url", "http://" + std::string(Lab::kServerIp) + ":8443/v1", "--checks",
                                  "coldstart,baseline", "--set", "coldstart.idle_gaps=1"});
  CAPTURE(findings_of(j));
  const auto& first = j["checks"]["coldstart"]["samples"][0];
  const auto& run = j["run"]["metrics"];
  MESSAGE("the first request waited " << first["server_wait_ms"] << " ms for its first byte; the server said "
                                      << first["server_processing_ms"] << " ms; segments lost before it: "
                                      << first["tcp_loss_before_first_byte_count"] << "; found: " << findings_of(j));
  REQUIRE(first["label"]["phase"] == "first");
  CHECK(first["server_wait_ms"].get<double>() >= 150);
  CHECK(run["first_request_loss_count"].get<double>() >= 1);
  CHECK(run["first_request_server_excess_ms"].get<double>() < 50);
  for (const auto& f : j["diagnosis"]) CHECK(f["cause"] != "cold_start");
}

}  // namespace infdoctor
