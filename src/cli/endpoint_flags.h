#pragma once
// The flags every subcommand that talks to an endpoint shares, curl-like where curl has one.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "api/chat.h"
#include "core/result.h"

namespace infdoctor::cli {

struct EndpointFlags {
  std::string preset;       // api::presets(): base URL, key header, flavour
  std::string flavour;      // openai or anthropic; overrides the preset's
  std::string base_url;     // --base-url; else the preset's; else $OPENAI_BASE_URL
  std::string api_key_env;  // else the preset's; else OPENAI_API_KEY
  std::string api_key_file;
  std::string cacert;
  bool insecure = false;
  double timeout_s = 60;
  double connect_timeout_s = 10;
  std::vector<std::string> resolve;
};

void add_endpoint_flags(CLI::App& cmd, EndpointFlags& f);

// Validates the flags and reads the key (environment or file). Errors name the flag.
core::Result<api::Endpoint> make_endpoint(const EndpointFlags& f);

}  // namespace infdoctor::cli
