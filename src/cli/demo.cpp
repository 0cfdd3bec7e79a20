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
#include "fake/demo_faults.h"
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
  char path[] = "/tmp/infdoctor-demo-XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    std::cerr << "infdoctor: error: cannot create a temporary scenario file\n";
    return kExitCouldNotRun;
  }
  ::close(fd);
  std::ofstream(path) << fault->scenario;
  struct Cleanup {
    const char* p;
    ~Cleanup() { ::unlink(p); }
  } cleanup{path};
  auto proc = net::Process::start({self_dir() + "/infdoctor-fake", "--listen", "127.0.0.1:0", "--scenario", path});
  if (!proc.ok()) {
    std::cerr << "infdoctor: error: cannot start infdoctor-fake next to infdoctor: " << proc.error().message << '\n';
    return kExitCouldNotRun;
  }
  auto line = (*proc)->read_line(std::chrono::seconds(10));
  if (!line.ok() || line->rfind("listening on ", 0) != 0) {
    std::cerr << "infdoctor: error: the fake provider did not start\n";
    return kExitCouldNotRun;
  }
  const std::string base_url = "http://" + line->substr(13) + "/v1";
  std::cerr << "infdoctor: demo: fake provider at " << base_url << " with fault '" << fault->name << "': "
            << fault->description << "; expected: " << expect_text(*fault) << '\n';
  RunOptions r;
  r.endpoint.base_url = base_url;
  r.endpoint.api_key_env = "INFDOCTOR_DEMO_NO_KEY";
  r.model = "demo-model";
  r.small_model = "demo-small";
  r.quick = true;
  r.checks = fault->checks;
  r.bundle = o.bundle;
  r.json_out = o.json_out;
  for (const auto& [k, v] : fault->settings) r.sets.push_back(k + "=" + v);
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
