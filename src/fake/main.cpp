// infdoctor-fake: the fake provider as a process. Prints `listening on HOST:PORT` as its first
// stdout line, then serves until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "fake/server.h"

namespace {
constexpr const char* kDefaultScenario = R"({"models": {"fake-model": {"overhead_ms": 50, "decode_ms_per_token": 10}}})";
}

int main(int argc, char** argv) {
  using namespace infdoctor;
  CLI::App app{"infdoctor-fake: an OpenAI-compatible server with planted delays and faults, for tests and demos."};
  std::string listen = "127.0.0.1:0";
  std::string scenario_path, cert, key;
  app.add_option("--listen", listen, "HOST:PORT to listen on; port 0 picks a free one")->capture_default_str();
  app.add_option("--scenario", scenario_path, "scenario JSON: per model delays and faults (default: one model, "
                                              "fake-model, 50 ms to first token, 10 ms per token)");
  app.add_option("--tls-cert", cert, "PEM certificate chain: serve HTTPS");
  app.add_option("--tls-key", key, "PEM private key for --tls-cert");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::cerr << "infdoctor-fake: error: " << e.what() << '\n';
    return 3;
  }
  if (cert.empty() != key.empty()) {
    std::cerr << "infdoctor-fake: error: --tls-cert and --tls-key go together\n";
    return 3;
  }
  const auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    std::cerr << "infdoctor-fake: error: --listen wants HOST:PORT, got '" << listen << "'\n";
    return 3;
  }
  fake::ServerOptions opts;
  opts.host = listen.substr(0, colon);
  if (opts.host.size() >= 2 && opts.host.front() == '[') opts.host = opts.host.substr(1, opts.host.size() - 2);
  try {
    const int port = std::stoi(listen.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    opts.port = static_cast<std::uint16_t>(port);
  } catch (const std::exception&) {
    std::cerr << "infdoctor-fake: error: bad port in --listen '" << listen << "'\n";
    return 3;
  }
  opts.tls_cert = cert;
  opts.tls_key = key;
  auto scenario = scenario_path.empty() ? fake::parse_scenario(kDefaultScenario, "built-in scenario")
                                        : fake::load_scenario(scenario_path);
  if (!scenario.ok()) {
    std::cerr << "infdoctor-fake: error: " << scenario.error().message << '\n';
    return 3;
  }
  // Block the stop signals before any thread starts, so only sigwait below receives them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto server = fake::Server::start(std::move(scenario.value()), opts);
  if (!server.ok()) {
    std::cerr << "infdoctor-fake: error: " << server.error().message << ": " << server.error().detail << '\n';
    return 3;
  }
  const bool v6 = opts.host.find(':') != std::string::npos;
  std::printf("listening on %s%s%s:%u\n", v6 ? "[" : "", opts.host.c_str(), v6 ? "]" : "",
              static_cast<unsigned>((*server)->port()));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->stop();
  return 0;
}
