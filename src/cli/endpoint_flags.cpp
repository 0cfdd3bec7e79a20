#include "cli/endpoint_flags.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/redact.h"

namespace infdoctor::cli {

void add_endpoint_flags(CLI::App& cmd, EndpointFlags& f) {
  cmd.add_option("--base-url", f.base_url,
                 "API base URL including the version path, e.g. https://api.example.com/v1 "
                 "(default: the preset's, else $OPENAI_BASE_URL)");
  cmd.add_option("--preset", f.preset,
                 "a known endpoint kind: its base URL, key header and API flavour (" + api::preset_names() + ")");
  cmd.add_option("--api-flavour", f.flavour, "the API's wire format: openai (chat completions) or anthropic (Messages)")
      ->check(CLI::IsMember({"openai", "anthropic"}));
  cmd.add_option("--api-key-env", f.api_key_env,
                 "environment variable holding the API key (default: the preset's, else OPENAI_API_KEY)");
  cmd.add_option("--api-key-file", f.api_key_file, "file holding the API key (overrides --api-key-env)");
  cmd.add_option("--cacert", f.cacert, "PEM bundle of CA certificates to trust, as curl's --cacert");
  cmd.add_flag("--insecure,-k", f.insecure, "do not verify the server's certificate or host name");
  cmd.add_option("--timeout", f.timeout_s, "deadline for one request, in seconds")->capture_default_str();
  cmd.add_option("--connect-timeout", f.connect_timeout_s, "deadline for connecting, in seconds")
      ->capture_default_str();
  cmd.add_option("--resolve", f.resolve, "HOST:PORT:ADDRESS: pin a host to an address, as curl's --resolve");
}

core::Result<api::Endpoint> make_endpoint(const EndpointFlags& f) {
  using core::ErrorCode;
  api::Endpoint ep;
  const api::Preset* preset = nullptr;
  if (!f.preset.empty()) {
    preset = api::find_preset(f.preset);
    if (!preset)
      return core::make_error(ErrorCode::InvalidArgument,
                              "unknown --preset '" + f.preset + "' (known: " + api::preset_names() + ")");
    ep.flavour = preset->flavour;
    ep.auth = preset->auth;
    ep.query = preset->query;
    ep.headers = preset->headers;
  }
  if (f.flavour == "anthropic") {
    ep.flavour = api::Flavour::Anthropic;
    if (!preset) {  // the Messages API's own conventions, as the anthropic preset has them
      ep.auth = api::Auth::XApiKey;
      ep.headers = api::find_preset("anthropic")->headers;
    }
  } else if (f.flavour == "openai") {
    ep.flavour = api::Flavour::OpenAI;
  }
  ep.base_url = f.base_url;
  if (ep.base_url.empty() && preset) ep.base_url = preset->base_url;
  if (ep.base_url.empty() && !preset)
    if (const char* env = std::getenv("OPENAI_BASE_URL")) ep.base_url = env;
  if (ep.base_url.empty()) {
    if (preset)
      return core::make_error(ErrorCode::InvalidArgument, "--preset " + preset->name + " has no default base URL: " + preset->note);
    return core::make_error(ErrorCode::InvalidArgument, "no endpoint: give --base-url or --preset, or set OPENAI_BASE_URL");
  }
  if (ep.base_url.rfind("http://", 0) != 0 && ep.base_url.rfind("https://", 0) != 0)
    return core::make_error(ErrorCode::InvalidArgument, "--base-url must start with http:// or https://");
  if (!(f.timeout_s > 0 && f.timeout_s <= 86400))
    return core::make_error(ErrorCode::InvalidArgument, "--timeout must lie in (0, 86400] seconds");
  if (!(f.connect_timeout_s > 0 && f.connect_timeout_s <= 86400))
    return core::make_error(ErrorCode::InvalidArgument, "--connect-timeout must lie in (0, 86400] seconds");
  ep.timeout = std::chrono::milliseconds(static_cast<long long>(f.timeout_s * 1000));
  ep.connect_timeout = std::chrono::milliseconds(static_cast<long long>(f.connect_timeout_s * 1000));
  ep.tls.cacert = f.cacert;
  ep.tls.insecure = f.insecure;
  for (const auto& r : f.resolve) {
    if (std::count(r.begin(), r.end(), ':') < 2)
      return core::make_error(ErrorCode::InvalidArgument, "--resolve wants HOST:PORT:ADDRESS, got '" + r + "'");
  }
  ep.resolve = f.resolve;
  if (!f.api_key_file.empty()) {
    std::ifstream in(f.api_key_file);
    if (!in) return core::make_error(ErrorCode::InvalidArgument, "cannot read --api-key-file " + f.api_key_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string key = ss.str();
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    ep.api_key = key;
  } else {
    std::string var = f.api_key_env;
    if (var.empty()) var = preset ? preset->key_env : "OPENAI_API_KEY";
    ep.key_env = var;
    if (const char* key = var.empty() ? nullptr : std::getenv(var.c_str())) ep.api_key = key;
  }
  core::register_secret(ep.api_key);  // from here on, every saved or printed text is scrubbed of it
  return ep;
}

}  // namespace infdoctor::cli
