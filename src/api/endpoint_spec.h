#pragma once
// What a user says about an endpoint (flags, a compare side, an exporter target) and the Endpoint
// it makes: the preset's defaults, the flavour, the key from the environment or a file.
#include <optional>
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
  std::vector<std::string> headers;  // -H "Name: value", sent with every request
  std::optional<std::string> proxy;  // --proxy URL ("" for none)
};

// The proxy every request of `ep` goes through, as libcurl chooses it: --proxy, else the
// environment's https_proxy / http_proxy / all_proxy unless no_proxy names the host. "" when
// none; else its URL (without credentials) and where it came from: "http://proxy:3128 (from
// $https_proxy)".
std::string proxy_in_use(const Endpoint& ep);

// Validates the spec and reads the key (environment or file); the key is registered as a secret
// at once. Errors name the flag they come from.
core::Result<Endpoint> make_endpoint(const EndpointSpec& f);

}  // namespace infdoctor::api
