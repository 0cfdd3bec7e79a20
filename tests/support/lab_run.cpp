// lab_run: builds the network lab, starts the fake provider (TLS, 198.51.100.2:8443, name
// api.lab.test) and a DNS responder (192.0.2.1:53), runs one command in the client namespace,
// and tears everything down. For people reproducing the lab tests' numbers by hand:
//   build/tests/lab_run --delay-ms 20 [--loss 0.1] [--dns-delay-ms 150] -- $PWD/build/infdoctor run
//     --base-url https://api.lab.test:8443/v1 --cacert $PWD/build/tests/certs/ca.pem
//     --resolver 192.0.2.1:53 --no-system-resolvers --checks dns,path,transport
// Needs root.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "fake/server.h"
#include "net/subprocess.h"
#include "fake/dns_server.h"
#include "fake/lab.h"

int main(int argc, char** argv) {
  using namespace infdoctor;
  double delay_ms = 20, loss = 0, dns_delay_ms = 0;
  std::vector<std::string> cmd;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      cmd.assign(argv + i + 1, argv + argc);
      break;
    }
    if (i + 1 >= argc) {
      std::cerr << "lab_run: " << a << " needs a value\n";
      return 3;
    }
    if (a == "--delay-ms") delay_ms = std::atof(argv[++i]);
    else if (a == "--loss") loss = std::atof(argv[++i]);
    else if (a == "--dns-delay-ms") dns_delay_ms = std::atof(argv[++i]);
    else {
      std::cerr << "lab_run: unknown option " << a << "\n";
      return 3;
    }
  }
  if (cmd.empty()) {
    std::cerr << "usage: lab_run [--delay-ms MS] [--loss RATIO] [--dns-delay-ms MS] -- COMMAND...\n";
    return 3;
  }
  if (auto why = fake::Lab::unavailable_reason()) {
    std::cerr << "lab_run: " << *why << "\n";
    return 3;
  }
  fake::Lab lab({delay_ms, loss});
  if (!lab.ok()) {
    std::cerr << "lab_run: " << lab.error() << "\n";
    return 3;
  }
  std::unique_ptr<fake::Server> server;
  std::unique_ptr<fake::DnsResponder> dns;
  try {
    fake::in_netns(lab.server_ns(), [&] {
      auto scenario = fake::parse_scenario(R"({"models": {"m": {"overhead_ms": 100, "decode_ms_per_token": 10}}})", "lab");
      fake::ServerOptions o;
      o.host = fake::Lab::kServerIp;
      o.port = 8443;
      o.tls_cert = std::string(INFDOCTOR_TEST_CERTS) + "/server.pem";
      o.tls_key = std::string(INFDOCTOR_TEST_CERTS) + "/server.key";
      auto s = fake::Server::start(std::move(scenario.value()), o);
      if (!s.ok()) throw std::runtime_error(s.error().message);
      server = std::move(s.value());
    });
    fake::in_netns(lab.router_ns(), [&] {
      dns = std::make_unique<fake::DnsResponder>(
          fake::Lab::kRouterIp, 53,
          std::map<std::string, fake::DnsName>{
              {"api.lab.test", fake::DnsName{fake::DnsMode::Answer, {fake::Lab::kServerIp}, {}, 60}}},
          dns_delay_ms);
    });
  } catch (const std::exception& e) {
    std::cerr << "lab_run: " << e.what() << "\n";
    return 3;
  }
  std::vector<std::string> argv2 = {"ip", "netns", "exec", lab.client_ns()};
  argv2.insert(argv2.end(), cmd.begin(), cmd.end());
  auto r = net::run_command(argv2, std::chrono::minutes(10));
  if (!r.ok()) {
    std::cerr << "lab_run: " << r.error().message << "\n";
    return 3;
  }
  std::cout << r->out;
  std::cerr << r->err;
  return r->exit_code;
}
