#pragma once
// What a user says about an endpoint (flags, a compare side, an exporter target) and the Endpoint
// it makes: the preset's defaults, the flavour, the key from the environment or a file.
#include <string>
#include <vector>

#include "api/chat.h"
#include "core/result.h"

namespace infdoctor::api {

struct EndpointSpec {
  std::string preset;       // presets(): base URL, key header, flavour
  std::string flavour;      // openai or anthropic; overrides the preset's
  std::string base_url;     // else the preset's; else $OPENAI_BASE_URL
  std::string api_key_env;  // else the preset's; else OPENAI_API_KEY
  std::string api_key_file;
  std::string cacert;
  bool insecure = false;
  double timeout_s = 60;
  double connect_timeout_s = 10;
  std::vector<std::string> resolve;
};

// Validates the spec and reads the key (environment or file); the key is registered as a secret
// at once. Errors name the flag they come from.
core::Result<Endpoint> make_endpoint(const EndpointSpec& f);

}  // namespace infdoctor::api
