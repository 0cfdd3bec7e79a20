#pragma once
// What `infdoctor serve` measures: its targets, from --target or a config file, each in the
// syntax of compare's sides plus the exporter's own keys:
//   NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR|,key_file=PATH][,module=M][,interval=D][,budget=N]
// module: probe (one streamed request), quick, default or full (the checklist at that size);
// interval: how often it runs (90s, 15m, 1h); budget: most model requests an hour, runs and
// on-demand probes together. A config file holds one target a line; '#' starts a comment.
#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "run/target_spec.h"

namespace infdoctor::serve {

inline constexpr const char* kModules[] = {"probe", "quick", "default", "full"};

struct ServeTarget {
  run::TargetSpec spec;
  std::string module = "quick";
  std::chrono::seconds interval{0};  // the module's default when not given (default_interval)
  int budget_per_hour = 0;           // the default (kDefaultBudget) when not given
  std::string text;                  // as written, to tell a changed target on reload
};

inline constexpr int kDefaultBudget = 300;  // a quick run costs about 35 requests
// A probe every minute, a quick run every 15 minutes, the default checklist hourly, full every 6 h.
std::chrono::seconds default_interval(const std::string& module);

// "90s", "15m", "1h", "1h30m", "2d"; a bare number is seconds.
core::Result<std::chrono::seconds> parse_duration(const std::string& text);

// `where` names the source in errors ("--target", "targets.conf:3").
core::Result<ServeTarget> parse_serve_target(const std::string& text, const std::string& where,
                                             const api::EndpointSpec& shared);
core::Result<std::vector<ServeTarget>> read_config(const std::string& path, const api::EndpointSpec& shared);

}  // namespace infdoctor::serve
