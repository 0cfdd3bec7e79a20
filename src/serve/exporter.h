#pragma once
// `infdoctor serve`: a long-running exporter in the manner of blackbox_exporter. Each target's
// checklist runs on its own schedule, one run at a time across the exporter (runs never overlap,
// so one run's load never shows in another's timings), within each target's request budget per
// hour. Prometheus scrapes the latest results at /metrics; /probe runs one streamed request on
// demand within the scrape's timeout; /-/healthy and /-/ready answer orchestrators; /bundles lists
// and serves each target's last evidence bundles, kept on disk in rotation.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/endpoint_spec.h"
#include "core/result.h"
#include "serve/http_server.h"
#include "serve/targets.h"

namespace infdoctor::serve {

// A log line's fields, each keeping its JSON type ("exit_code":0, "seconds":1.25).
using LogFields = std::vector<std::pair<std::string, nlohmann::json>>;

struct ExporterOptions {
  std::vector<ServeTarget> targets;  // from --target
  std::string config_path;           // more targets, read again on reload()
  api::EndpointSpec shared;          // --cacert, --insecure, timeouts: every target's
  std::string vantage;               // the vantage label
  std::string rules_dir;             // empty: the built-in rules
  std::string bundles_dir;           // empty: no bundles kept
  int keep_bundles = 5;              // per target
  // A probe target's bundle that tells nothing new is kept when none was for this long.
  std::chrono::seconds probe_bundle_every{std::chrono::hours(1)};
  // Once asked to stop, how long the run in flight may go on to its end before it is cut short.
  std::chrono::seconds shutdown_grace{10};
  // /probe?target=URL&model=M for a URL this ECMAScript regex matches whole; empty: only the
  // configured targets' names. The key sent to such URLs is read from allow_key_env (none if empty).
  std::string allow_target;
  std::string allow_key_env;
  // One JSON object a line; stderr when unset.
  std::function<void(const std::string& line)> log_sink;
};

// Every target of --target and the config file, each endpoint built: what start() and reload() read.
core::Result<std::vector<ServeTarget>> all_targets(const ExporterOptions& options);

class Exporter {
 public:
  // Fails when a target or the config file is wrong, or no target is given.
  static core::Result<std::unique_ptr<Exporter>> start(ExporterOptions options);
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  HttpResponse handle(const HttpRequest& request);
  // Reads the config file again (SIGHUP). A wrong file is logged and the targets stay as they were.
  core::Status reload();
  // Logs one JSON line: {"time", "level", "msg", and `fields`}.
  void log(const std::string& level, const std::string& msg, const LogFields& fields = {});
  // Stops: the scheduler starts nothing more and /probe refuses; the run in flight (and a /probe
  // under way) has `shutdown_grace` to end, and is then cut short and discarded with its partial
  // bundle, neither logged as an error nor kept as the target's result: the exporter stopped it,
  // the target did not fail. Idempotent.
  void stop();

 private:
  struct Impl;
  explicit Exporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace infdoctor::serve
