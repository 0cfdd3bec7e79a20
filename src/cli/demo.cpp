// infdoctor demo: starts the fake provider with a planted fault, runs the quick checklist against
// it and prints the diagnosis: a real diagnosis with no API key and no network.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/run.h"
#include "fake/certs.h"
#include "fake/demo_faults.h"
#include "fake/dns_server.h"
#include "fake/lab.h"
#include "fake/server.h"
#include "net/subprocess.h"

namespace infdoctor::cli {
namespace {

struct DemoOptions {
  std::string fault = fake::kDefaultDemoFault;
  bool list = false;
  std::string bundle;
  std::string json_out;
};

std::string self_dir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  return std::filesystem::path(buf).parent_path().string();
}

std::string expect_text(const fake::DemoFault& f) {
  if (f.expect.empty()) return "no finding above info";
  std::string s;
  for (const auto& c : f.expect) s += (s.empty() ? "" : ", then ") + c;
  return s;
}

RunOptions demo_run_options(const DemoOptions& o, const fake::DemoFault& fault, const std::string& base_url) {
  RunOptions r;
  r.endpoint.base_url = base_url;
  r.endpoint.api_key_env = "INFDOCTOR_DEMO_NO_KEY";
  r.model = "demo-model";
  r.small_model = "demo-small";
  r.quick = true;
  r.checks = fault.checks;
  r.bundle = o.bundle;
  r.json_out = o.json_out;
  for (const auto& [k, v] : fault.settings) r.sets.push_back(k + "=" + v);
  return r;
}

// A real round trip needs a real path: the namespace lab, with the fake provider behind the
// delaying wire and infdoctor run from the client namespace.
int run_lab_demo(const DemoOptions& o, const fake::DemoFault& fault) {
  if (auto why = fake::Lab::unavailable_reason()) {
    std::cerr << "infdoctor: error: the demo plants " << fault.name << " on a lab of network namespaces: " << *why
              << '\n';
    return kExitCouldNotRun;
  }
  fake::Lab lab({fault.lab_delay_ms, 0.0});
  if (!lab.ok()) {
    std::cerr << "infdoctor: error: cannot build the lab: " << lab.error() << '\n';
    return kExitCouldNotRun;
  }
  auto scenario = fake::parse_scenario(fault.scenario, "demo scenario " + fault.name);
  if (!scenario.ok()) {
    std::cerr << "infdoctor: error: " << scenario.error().message << '\n';
    return kExitCouldNotRun;
  }
  std::unique_ptr<fake::Server> server;
  int code = kExitCouldNotRun;
  try {
    fake::in_netns(lab.server_ns(), [&] {
      fake::ServerOptions so;
      so.host = fake::Lab::kServerIp;
      so.port = 8080;
      auto s = fake::Server::start(std::move(scenario.value()), so);
      if (s.ok()) server = std::move(s.value());
    });
    if (!server) {
      std::cerr << "infdoctor: error: the fake provider did not start in the lab\n";
      return kExitCouldNotRun;
    }
    const std::string base_url = "http://" + std::string(fake::Lab::kServerIp) + ":8080/v1";
    std::cerr << "infdoctor: demo: fake provider at " << base_url << " across the lab with fault '" << fault.name
              << "': " << fault.description << "; expected: " << expect_text(fault) << '\n';
    const RunOptions r = demo_run_options(o, fault, base_url);
    fake::in_netns(lab.client_ns(), [&] { code = run_with(r, "infdoctor demo --fault " + fault.name); });
  } catch (const std::exception& e) {
    std::cerr << "infdoctor: error: " << e.what() << '\n';
  }
  if (server) server->stop();
  return code;
}

int run_demo(const DemoOptions& o) {
  if (o.list) {
    std::printf("%-28s %-36s %s\n", "fault", "expected diagnosis", "what is planted");
    for (const auto& f : fake::demo_faults())
      std::printf("%-28s %-36s %s%s\n", f.name.c_str(), expect_text(f).c_str(), f.description.c_str(),
                  f.unavailable.empty() ? "" : (" (not in the demo yet: " + f.unavailable + ")").c_str());
    return kExitOk;
  }
  const fake::DemoFault* fault = fake::find_demo_fault(o.fault);
  if (!fault) {
    std::cerr << "infdoctor: error: no demo fault '" << o.fault << "' (see 'infdoctor demo --list-faults')\n";
    return kExitCouldNotRun;
  }
  if (!fault->unavailable.empty()) {
    std::cerr << "infdoctor: error: the demo cannot plant " << fault->name << " yet: " << fault->unavailable << '\n';
    return kExitCouldNotRun;
  }
  if (fault->lab_delay_ms >= 0) return run_lab_demo(o, *fault);
  // Scenario, certificate and key live in a private temporary directory, removed at the end.
  char tmpl[] = "/tmp/infdoctor-demo-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::cerr << "infdoctor: error: cannot create a temporary directory\n";
    return kExitCouldNotRun;
  }
  const std::string dir = tmpl;
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  const std::string scenario = dir + "/scenario.json";
  std::ofstream(scenario) << fault->scenario;
  std::vector<std::string> argv = {self_dir() + "/infdoctor-fake", "--listen", "127.0.0.1:0", "--scenario", scenario};
  std::string cacert;
  if (fault->tls) {
    auto certs = fake::write_self_signed(dir, {"localhost", "api.demo.test"}, {"127.0.0.1"});
    if (!certs.ok()) {
      std::cerr << "infdoctor: error: " << certs.error().message << '\n';
      return kExitCouldNotRun;
    }
    argv.insert(argv.end(), {"--tls-cert", certs->cert, "--tls-key", certs->key});
    cacert = certs->cert;
  }
  auto proc = net::Process::start(argv);
  if (!proc.ok()) {
    std::cerr << "infdoctor: error: cannot start infdoctor-fake next to infdoctor: " << proc.error().message << '\n';
    return kExitCouldNotRun;
  }
  auto line = (*proc)->read_line(std::chrono::seconds(10));
  if (!line.ok() || line->rfind("listening on ", 0) != 0) {
    std::cerr << "infdoctor: error: the fake provider did not start\n";
    return kExitCouldNotRun;
  }
  const std::string port = line->substr(line->rfind(':') + 1);
  // With a DNS fault the API host is a name that only the demo's own resolver knows.
  std::unique_ptr<fake::DnsResponder> dns;
  std::string host = "127.0.0.1";
  if (fault->dns_delay_ms >= 0) {
    try {
      dns = std::make_unique<fake::DnsResponder>(
          "127.0.0.1", 0,
          std::map<std::string, fake::DnsName>{{"api.demo.test", fake::DnsName{fake::DnsMode::Answer, {"127.0.0.1"}, {}, 60}}},
          fault->dns_delay_ms);
    } catch (const std::exception& e) {
      std::cerr << "infdoctor: error: " << e.what() << '\n';
      return kExitCouldNotRun;
    }
    host = "api.demo.test";
  }
  const std::string base_url = std::string(fault->tls ? "https://" : "http://") + host + ":" + port + "/v1";
  std::cerr << "infdoctor: demo: fake provider at " << base_url << " with fault '" << fault->name << "': "
            << fault->description << "; expected: " << expect_text(*fault) << '\n';
  RunOptions r = demo_run_options(o, *fault, base_url);
  r.endpoint.cacert = cacert;
  if (dns) {
    r.resolvers.push_back(dns->address());
    r.no_system_resolvers = true;
  }
  const int code = run_with(r, "infdoctor demo --fault " + fault->name);
  (*proc)->stop();
  return code;
}

}  // namespace

void add_demo_command(CLI::App& app, std::function<int()>& chosen) {
  auto opts = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Start the fake provider on loopback with a planted fault, run the quick checklist against it and print the\n"
      "diagnosis. No API key, no network. --list-faults shows what can be planted and what must be found.");
  cmd->add_option("--fault", opts->fault, "the fault to plant")->capture_default_str();
  cmd->add_flag("--list-faults", opts->list, "list the faults and the diagnosis each must give");
  cmd->add_option("--bundle", opts->bundle, "write the evidence bundle to PATH (directory or .tar.gz)");
  cmd->add_option("--json", opts->json_out, "write results.json to FILE, or to stdout with '-'");
  cmd->callback([opts, &chosen] { chosen = [opts] { return run_demo(*opts); }; });
}

}  // namespace infdoctor::cli
