// `infdoctor run` through a real nginx in front of the fake provider: what the proxy users have
// does to a stream (gzip), to a large request (client_max_body_size) and to TLS.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "support/fronts.h"
#include "support/results.h"

namespace infdoctor {
namespace {

// 10 ms a token: the serialization check's 16 tokens (--quick) take 150 ms after the first.
const char* kEngine = R"({"models": {"big": {"overhead_ms": 40, "decode_ms_per_token": 10}}})";

nlohmann::json run_json(const std::string& base_url, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--base-url", base_url, "--model", "big", "--quick"};
  args.insert(args.end(), extra.begin(), extra.end());
  return test::run_results(args);
}

using test::finding;
using test::rules_fired;

const char* kGzipStreams = "gzip on; gzip_types text/event-stream application/json; client_max_body_size 8m;";

}  // namespace

TEST_CASE("nginx with gzip on for event streams: the stream held back is buffering at the intermediary, by compression, nginx named") {
  auto server = test::start_fake(kEngine);
  test::Nginx nginx({.upstream = test::address_of(*server), .server = kGzipStreams});
  const auto j = run_json(nginx.base_url(), {"--checks", "baseline,serialization"});
  CAPTURE(rules_fired(j));
  const auto& m = j["checks"]["serialization"]["metrics"];
  MESSAGE("gzip: first token " << m["compressed_ttft_p50_ms"] << " ms, arrivals per event "
                                << m["compressed_arrivals_per_event_ratio"] << "; without Accept-Encoding "
                                << m["identity_ttft_p50_ms"] << " ms, " << m["identity_arrivals_per_event_ratio"]
                                << "; held " << m["compression_held_ms"] << " ms (planted 150)");
  CHECK(m["compressed_ratio"].get<double>() == 1.0);
  CHECK(m["identity_arrivals_per_event_ratio"].get<double>() > 0.8);
  CHECK(m["compressed_arrivals_per_event_ratio"].get<double>() < 0.2);
  const auto* f = finding(j, "buffering.compression");
  REQUIRE(f != nullptr);
  CHECK((*f)["cause"] == "buffering");
  CHECK((*f)["scope"] == "intermediary");
  CHECK((*f)["severity"] == "warning");
  CHECK((*f)["where"].get<std::string>().find("server nginx/") != std::string::npos);
  CHECK((*f)["where"].get<std::string>().find("content-encoding gzip") != std::string::npos);
  // nginx holds the 16-token stream to its end: the first token waits for the other 15.
  CHECK((*f)["impact_ms"].get<double>() == doctest::Approx(150).epsilon(0.3));
  // The baseline's streams were held too (they accept gzip, as the SDKs do): the compression rule
  // speaks for them, and it is the only finding of its cause.
  CHECK(j["checks"]["baseline"]["metrics"]["arrivals_per_event_ratio"].get<double>() < 0.3);
  CHECK(finding(j, "buffering.clumped_stream") == nullptr);
}

TEST_CASE("nginx without gzip, or with gzip and proxy_buffering off, passes the stream as it comes: no finding") {
  auto server = test::start_fake(kEngine);
  struct Case {
    const char* name;
    test::NginxOptions options;
    double compressed;
  };
  const Case cases[] = {
      {"gzip off", {.upstream = test::address_of(*server), .server = "gzip off; client_max_body_size 8m;"}, 0.0},
      {"gzip on, proxy_buffering off",
       {.upstream = test::address_of(*server), .location = "proxy_buffering off;", .server = kGzipStreams}, 1.0},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    test::Nginx nginx(c.options);
    const auto j = run_json(nginx.base_url(), {"--checks", "baseline,serialization"});
    CAPTURE(rules_fired(j));
    const auto& m = j["checks"]["serialization"]["metrics"];
    MESSAGE(std::string(c.name) << ": compressed " << m["compressed_ratio"] << ", arrivals per event "
                   << m["compressed_arrivals_per_event_ratio"]);
    CHECK(m["compressed_ratio"].get<double>() == c.compressed);
    CHECK(m["compressed_arrivals_per_event_ratio"].get<double>() > 0.8);
    for (const auto& f : j["diagnosis"]) CHECK(f["cause"] != "buffering");
  }
}

TEST_CASE("nginx's default client_max_body_size (1 MB): the serialization check records the limit and measures below it") {
  auto server = test::start_fake(kEngine);
  test::Nginx nginx({.upstream = test::address_of(*server)});
  const auto j = run_json(nginx.base_url(), {"--checks", "serialization", "--set", "serialization.sizes_kb=1,512,2048,4096"});
  CAPTURE(rules_fired(j));
  const auto& c = j["checks"]["serialization"];
  CHECK(c["status"] == "ok");
  const auto& m = c["metrics"];
  MESSAGE("body limit " << m["body_limit_bytes"] << " bytes, largest answered " << m["largest_body_bytes"]);
  // The 2 MB body is the first refused; 4 MB is never sent.
  CHECK(m["body_limit_bytes"].get<double>() == doctest::Approx(2048 * 1024).epsilon(0.001));
  CHECK(m["largest_body_bytes"].get<double>() == doctest::Approx(512 * 1024).epsilon(0.001));
  CHECK(m["failures_count"].get<double>() == 0);
  int refused = 0, sent_4mb = 0;
  for (const auto& s : c["samples"]) {
    if (s["http_status"] == 413) ++refused;
    if (s["label"].contains("body_bytes") && s["label"]["body_bytes"].get<double>() > 3.5 * 1024 * 1024) ++sent_4mb;
  }
  CHECK(refused == 1);
  CHECK(sent_4mb == 0);
  CHECK(j["checks"]["serialization"]["metrics"].contains("upload_parse_overhead_ms"));
  for (const auto& f : j["diagnosis"]) CHECK(f["rule"] != "errors.failed_requests");
}

TEST_CASE("nginx terminating TLS: a session cache or tickets resume the handshake, and without either tls.no_resumption is noted") {
  auto server = test::start_fake(kEngine);
  struct Case {
    const char* name;
    const char* server;
    bool resumes;
  };
  // nginx 1.22 speaks TLS 1.2 unless told otherwise; TLS 1.2 resumes from its session cache, 1.3
  // from tickets.
  const Case cases[] = {
      {"TLS 1.2 with a session cache", "ssl_session_cache shared:SSL:1m;", true},
      {"TLS 1.3 with session tickets", "ssl_protocols TLSv1.3; ssl_session_tickets on;", true},
      {"TLS 1.2 without a session cache", "ssl_session_cache off; ssl_session_tickets off;", false},
      {"TLS 1.3 without tickets", "ssl_protocols TLSv1.3; ssl_session_tickets off;", false},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    test::Nginx nginx({.upstream = test::address_of(*server), .server = c.server, .tls = true});
    const auto j = run_json(nginx.base_url(), {"--checks", "transport", "--cacert", test::ca_pem()});
    CAPTURE(rules_fired(j));
    const auto& m = j["checks"]["transport"]["metrics"];
    MESSAGE(std::string(c.name) << ": full handshake " << m["tls_p50_ms"] << " ms, resumed " << m.value("resumed_tls_p50_ms", -1.0)
                   << " ms (-1: none), resumption ratio " << m["resumption_ratio"]);
    CHECK(m["resumption_tries_count"].get<double>() == 3);  // --quick: 3 fresh connections after the first
    CHECK(m["resumption_ratio"].get<double>() == (c.resumes ? 1.0 : 0.0));
    CHECK(m.contains("resumed_tls_p50_ms") == c.resumes);
    const auto* f = finding(j, "tls.no_resumption");
    CHECK((f != nullptr) == !c.resumes);
    if (f) {
      CHECK((*f)["severity"] == "info");
      CHECK((*f)["impact_ms"].get<double>() == doctest::Approx(m["tls_p50_ms"].get<double>() - m["connect_p50_ms"].get<double>()));
    }
  }
}

}  // namespace infdoctor
