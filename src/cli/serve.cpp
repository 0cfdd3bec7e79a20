// infdoctor serve: the exporter (src/serve/exporter.h) behind its HTTP server, until SIGTERM or
// SIGINT; SIGHUP reads the targets again.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <memory>
#include <thread>
#include <tuple>

#include "cli/cli.h"
#include "cli/commands.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "report/prometheus.h"
#include "serve/exporter.h"

namespace infdoctor::cli {
namespace {

volatile std::sig_atomic_t g_hangup = 0;

void on_hangup(int) { g_hangup = 1; }

struct ServeOptions {
  std::string listen = "127.0.0.1:9474";
  bool check_config = false;
  std::vector<std::string> targets;
  std::string probe_bundle_every = "1h", shutdown_grace = "10s";
  serve::ExporterOptions exporter;
};

int serve_with(ServeOptions o) {
  for (auto [flag, text, into] : {std::tuple{"--probe-bundle-every", &o.probe_bundle_every, &o.exporter.probe_bundle_every},
                                  std::tuple{"--shutdown-grace", &o.shutdown_grace, &o.exporter.shutdown_grace}}) {
    auto d = serve::parse_duration(*text);
    if (!d.ok()) return fail_usage(std::string(flag) + ": " + d.error().message);
    *into = d.value();
  }
  for (const auto& text : o.targets) {
    auto t = serve::parse_serve_target(text, "--target", o.exporter.shared);
    if (!t.ok()) return fail(t.error());
    for (const auto& other : o.exporter.targets)
      if (other.spec.name == t->spec.name) return fail_usage("--target " + t->spec.name + " is given twice");
    o.exporter.targets.push_back(std::move(t.value()));
  }
  if (o.check_config) {
    auto all = serve::all_targets(o.exporter);
    if (!all.ok()) return fail(all.error());
    for (const auto& t : all.value())
      std::cout << t.spec.name << ": " << t.spec.models.target << " at " << core::redact_url(t.spec.endpoint.base_url)
                << ", module " << t.module << " every " << t.interval.count() << " s, budget " << t.budget_per_hour
                << " requests an hour\n";
    return kExitOk;
  }
  if (o.exporter.vantage.empty()) o.exporter.vantage = report::default_vantage();
  core::silence_interrupt_message();
  core::defer_interrupts();  // the run in flight has its grace (Exporter::stop)
  core::install_interrupt_handlers();
  struct sigaction sa {};
  sa.sa_handler = on_hangup;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGHUP, &sa, nullptr);

  // The listener first, so a wrong --listen fails before any request; it answers 503 until the
  // exporter is there.
  auto current = std::make_shared<std::atomic<serve::Exporter*>>(nullptr);
  auto server = serve::HttpServer::start(o.listen, [current](const serve::HttpRequest& r) {
    if (serve::Exporter* e = current->load()) return e->handle(r);
    return serve::HttpResponse{503, "text/plain; charset=utf-8", "starting\n"};
  });
  if (!server.ok()) return fail(server.error());
  auto exporter = serve::Exporter::start(o.exporter);
  if (!exporter.ok()) {
    (*server)->stop();
    return fail(exporter.error());
  }
  serve::Exporter* ex = exporter->get();
  current->store(ex);
  ex->log("info", "listening", {{"address", (*server)->address()},
                                {"vantage", o.exporter.vantage},
                                {"bundles", o.exporter.bundles_dir.empty() ? "none" : o.exporter.bundles_dir}});
  while (core::stop_requested() == 0) {
    if (g_hangup) {
      g_hangup = 0;
      ex->log("info", "SIGHUP: reading the targets again");
      (void)ex->reload();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // The scheduler has started nothing since the signal; /metrics goes on answering while the run in
  // flight ends, and /-/ready says the exporter is stopping.
  ex->log("info", std::string("stopping (") + core::interrupt_name() + ")",
          {{"grace_s", static_cast<double>(o.exporter.shutdown_grace.count())}});
  ex->stop();
  (*server)->stop();
  current->store(nullptr);
  ex->log("info", "stopped");
  return kExitOk;
}

}  // namespace

void add_serve_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, o] = add_command<ServeOptions>(
      app, chosen, "serve",
      "Run as a Prometheus exporter: each target's checklist on its own schedule (one run at a time, within each\n"
      "target's request budget per hour), the latest results at /metrics, one streamed request on demand at\n"
      "/probe?target=NAME&module=probe (within the scrape's timeout; target=URL&model=M for URLs --allow-target\n"
      "admits), /-/healthy, /-/ready, and each target's last evidence bundles at /bundles. SIGHUP reads --config\n"
      "again; SIGTERM stops: nothing new starts, and the run in flight ends within --shutdown-grace. Logs are one JSON\n"
      "object a line.\n"
      "A target: NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR|,key_file=PATH][,module=M][,interval=D][,budget=N]\n"
      "  module: probe (one request), quick (default), default or full; interval: e.g. 60s, 15m, 1h (default 1m for\n"
      "  probe, 15m for quick, 1h for default, 6h for full), also the longest a run may take; budget: model requests\n"
      "  an hour (default 300).\n"
      "Example: infdoctor serve --listen :9474 --vantage eu-west-1 --target prod=https://api.example.com/v1,model=big",
      serve_with);
  cmd->add_flag("--check-config", o->check_config,
                "read the targets (--target, --config), print them, and exit: 0 when they are right, as nginx -t");
  cmd->add_option("--listen", o->listen, "HOST:PORT to serve on; :PORT for every interface")->capture_default_str();
  cmd->add_option("--target", o->targets, "a target, as above (repeatable)");
  cmd->add_option("--config", o->exporter.config_path, "a file of targets, one a line as --target takes them; '#' comments");
  cmd->add_option("--vantage", o->exporter.vantage,
                  "the vantage label: where this exporter measures from, e.g. eu-west-1 (default: this host's name)");
  o->exporter.bundles_dir = "infdoctor-bundles";
  cmd->add_option("--bundles", o->exporter.bundles_dir,
                  "directory for each target's evidence bundles, DIR/NAME/STAMP; '' keeps none")
      ->capture_default_str();
  cmd->add_option("--keep-bundles", o->exporter.keep_bundles, "bundles kept per target, newest first")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--probe-bundle-every", o->probe_bundle_every,
                  "a probe target keeps the bundle of a failure, a finding, its first run and its first success after a "
                  "failure, and otherwise one when none was kept for this long (0: every run's)")
      ->capture_default_str();
  cmd->add_option("--shutdown-grace", o->shutdown_grace,
                  "on SIGTERM or SIGINT nothing new starts, and the run in flight has this long to end before it is cut "
                  "short and discarded (a second signal cuts it at once)")
      ->capture_default_str();
  cmd->add_option("--rules", o->exporter.rules_dir, "directory of rule files instead of the built-in rules");
  cmd->add_option("--allow-target", o->exporter.allow_target,
                  "also answer /probe?target=URL&model=M (blackbox_exporter's habit) for a URL this regular expression "
                  "matches whole, e.g. 'https://[a-z0-9.-]+\\.internal(:[0-9]+)?/v1'; off by default");
  cmd->add_option("--allow-target-key-env", o->exporter.allow_key_env,
                  "the environment variable whose key goes to the URLs --allow-target admits (default: no key)");
  api::EndpointSpec& shared = o->exporter.shared;
  cmd->add_option("--cacert", shared.cacert, "PEM bundle of CA certificates to trust, for every target");
  cmd->add_flag("--insecure,-k", shared.insecure, "do not verify certificates (every target)");
  cmd->add_option("--max-time,-m,--timeout", shared.timeout_s, "deadline for one request, in seconds")
      ->capture_default_str();
}

}  // namespace infdoctor::cli
