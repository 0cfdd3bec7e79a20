#include "cli/endpoint_flags.h"

#include "api/flavour.h"

namespace infdoctor::cli {

void add_endpoint_flags(CLI::App& cmd, api::EndpointSpec& f) {
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
  add_transport_flags(cmd, f);
}

void add_transport_flags(CLI::App& cmd, api::EndpointSpec& f) {
  cmd.add_option("--cacert", f.cacert, "PEM bundle of CA certificates to trust, as curl's --cacert");
  cmd.add_flag("--insecure,-k", f.insecure, "do not verify the server's certificate or host name");
  cmd.add_option("--max-time,-m,--timeout", f.timeout_s, "deadline for one request, in seconds, as curl's --max-time")
      ->capture_default_str();
  cmd.add_option("--connect-timeout", f.connect_timeout_s, "deadline for connecting, in seconds")
      ->capture_default_str();
  cmd.add_option("--header,-H", f.headers, "\"Name: value\": an extra header on every request, as curl's -H (repeatable)");
  cmd.add_option("--proxy,-x", f.proxy,
                 "[scheme://]HOST:PORT: send every request through this proxy, as curl's --proxy; '' for none "
                 "(default: $https_proxy / $http_proxy as curl reads them)");
  cmd.add_option("--resolve", f.resolve, "HOST:PORT:ADDRESS: pin a host to an address, as curl's --resolve");
}

}  // namespace infdoctor::cli
