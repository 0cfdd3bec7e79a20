#pragma once
// The base URL taken apart once: scheme, host and port, for the checks that reach the host
// itself (DNS, path, transport). The one place a base URL is validated.
#include <string>

#include "core/result.h"

namespace infdoctor::api {

struct Target {
  std::string base_url;
  std::string scheme;  // http or https
  std::string host;    // without brackets
  int port = 0;
  bool host_is_ip = false;
};
core::Result<Target> parse_target(const std::string& base_url);

}  // namespace infdoctor::api
