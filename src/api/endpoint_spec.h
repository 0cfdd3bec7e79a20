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
// environment's https_proxy / http_proxy / all_proxy unless no_proxy names the host.
struct ProxyRoute {
  std::string url;     // without credentials: "http://proxy:3128"
  std::string source;  // "--proxy", "$https_proxy", ...
  std::string host;    // the proxy's host (a name or an address, brackets removed)
  int port = 1080;     // libcurl's default when the URL names none
  // An https target goes through an HTTP proxy in a tunnel (CONNECT) of its own per connection; a
  // plain one is forwarded request by request. SOCKS proxies relay a connection either way.
  bool tunnel = false;
};
std::optional<ProxyRoute> proxy_route(const Endpoint& ep);
// The same in words: "" when none, else "http://proxy:3128 (from $https_proxy)".
std::string proxy_in_use(const Endpoint& ep);

// Validates the spec and reads the key (environment or file); the key is registered as a secret
// at once. Errors name the flag they come from.
core::Result<Endpoint> make_endpoint(const EndpointSpec& f);

}  // namespace infdoctor::api
