#pragma once
// A named target in one word, as `compare --a/--b` (and the exporter's --target) take it:
// NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR|,key_file=PATH]. The key comes from key_env, else from
// NAME_API_KEY (upper case, non-alphanumerics as _) when that is set, else from the preset's
// variable.
#include <map>
#include <string>
#include <vector>

#include "api/endpoint_spec.h"
#include "checks/check.h"
#include "core/result.h"

namespace infdoctor::run {

struct TargetSpec {
  std::string name;
  api::EndpointSpec endpoint;  // `shared` with this target's URL, preset and key variable
  checks::Models models;
};

// `flag` names where the text came from in errors ("--a"). `key_file=PATH` reads the key from a
// file instead of a variable. Keys of the caller's own (`more_keys`, e.g. the exporter's module
// and interval) go into `more`.
core::Result<TargetSpec> parse_target_spec(const std::string& text, const std::string& flag,
                                           const api::EndpointSpec& shared, const std::vector<std::string>& more_keys = {},
                                           std::map<std::string, std::string>* more = nullptr);

}  // namespace infdoctor::run
