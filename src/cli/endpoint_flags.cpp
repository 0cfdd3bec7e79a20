#include "cli/endpoint_flags.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/redact.h"

namespace infdoctor::cli {

void add_endpoint_flags(CLI::App& cmd, EndpointFlags& f) {
  if (const char* env = std::getenv("OPENAI_BASE_URL")) f.base_url = env;
  cmd.add_option("--base-url", f.base_url,
                 "API base URL including the version path, e.g. https://api.example.com/v1 "
                 "(default: $OPENAI_BASE_URL)");
  cmd.add_option("--api-key-env", f.api_key_env, "environment variable holding the API key")->capture_default_str();
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
  if (f.base_url.empty())
    return core::make_error(ErrorCode::InvalidArgument, "no endpoint: give --base-url or set OPENAI_BASE_URL");
  if (f.base_url.rfind("http://", 0) != 0 && f.base_url.rfind("https://", 0) != 0)
    return core::make_error(ErrorCode::InvalidArgument, "--base-url must start with http:// or https://");
  ep.base_url = f.base_url;
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
  } else if (const char* key = std::getenv(f.api_key_env.c_str())) {
    ep.api_key = key;
  }
  core::register_secret(ep.api_key);  // from here on, every saved or printed text is scrubbed of it
  return ep;
}

}  // namespace infdoctor::cli
