#include "api/endpoint_spec.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/flavour.h"
#include "api/target.h"
#include "core/redact.h"
#include "core/strings.h"

namespace infdoctor::api {

namespace {

const char* env_any(std::initializer_list<const char*> names, std::string& which) {
  for (const char* n : names)
    if (const char* v = std::getenv(n); v && *v) {
      which = n;
      return v;
    }
  return nullptr;
}

// no_proxy as curl reads it: "*", or comma-separated hosts and domain suffixes.
bool bypassed(const std::string& host) {
  std::string which;
  const char* list = env_any({"no_proxy", "NO_PROXY"}, which);
  if (!list) return false;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) continue;
    if (item == "*") return true;
    if (item.front() == '.') item.erase(0, 1);
    if (host == item || (host.size() > item.size() && host.compare(host.size() - item.size(), item.size(), item) == 0 &&
                         host[host.size() - item.size() - 1] == '.'))
      return true;
  }
  return false;
}

}  // namespace

std::optional<ProxyRoute> proxy_route(const Endpoint& ep) {
  auto target = parse_target(ep.base_url);
  std::string text, which = "--proxy";
  if (ep.proxy) {
    text = *ep.proxy;
  } else {
    if (!target.ok() || bypassed(target->host)) return std::nullopt;
    const char* v = target->scheme == "https" ? env_any({"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}, which)
                                              : env_any({"http_proxy", "all_proxy", "ALL_PROXY"}, which);
    if (!v) return std::nullopt;
    text = v;
    which = "$" + which;
  }
  if (text.empty()) return std::nullopt;
  ProxyRoute r;
  r.source = which;
  // libcurl's reading of a proxy string: an optional scheme (http when none), optional user info,
  // the host (an IPv6 address in brackets), an optional port (1080 when none).
  const auto scheme_end = text.find("://");
  const std::string scheme = scheme_end == std::string::npos ? "http" : core::lower(text.substr(0, scheme_end));
  std::string rest = scheme_end == std::string::npos ? text : text.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const auto at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    r.host = rest.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    r.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (!port.empty()) r.port = std::atoi(port.c_str());
  if (scheme == "https" && port.empty()) r.port = 443;
  r.url = core::redact_url(scheme_end == std::string::npos ? "http://" + text : text);
  r.tunnel = target.ok() && target->scheme == "https" && scheme.rfind("socks", 0) != 0;
  return r;
}

std::string proxy_in_use(const Endpoint& ep) {
  const auto r = proxy_route(ep);
  return r ? r->url + " (from " + r->source + ")" : "";
}

core::Result<Endpoint> make_endpoint(const EndpointSpec& f) {
  using core::ErrorCode;
  Endpoint ep;
  const Preset* preset = nullptr;
  if (!f.preset.empty()) {
    preset = find_preset(f.preset);
    if (!preset)
      return core::make_error(ErrorCode::InvalidArgument,
                              "unknown --preset '" + f.preset + "' (known: " + preset_names() + ")");
    ep.flavour = preset->flavour;
    ep.auth = preset->auth;
    ep.query = preset->query;
    ep.headers = preset->headers;
  }
  if (f.flavour == "anthropic") {
    ep.flavour = Flavour::Anthropic;
    if (!preset) {  // the Messages API's own conventions, as the anthropic preset has them
      ep.auth = Auth::XApiKey;
      ep.headers = find_preset("anthropic")->headers;
    }
  } else if (f.flavour == "openai") {
    ep.flavour = Flavour::OpenAI;
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
  if (auto t = parse_target(ep.base_url); !t.ok())
    return core::make_error(ErrorCode::InvalidArgument, t.error().message, t.error().detail);
  if (!(f.timeout_s > 0 && f.timeout_s <= 86400))
    return core::make_error(ErrorCode::InvalidArgument, "--max-time must lie in (0, 86400] seconds");
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
  for (const auto& h : f.headers) {
    const auto colon = h.find(':');
    if (colon == std::string::npos || colon == 0 || h.find_first_of(" \t\r\n") < colon)
      // Not echoed: a malformed header may well be a credential ("Bearer sk-...").
      return core::make_error(ErrorCode::InvalidArgument,
                              "-H wants \"Name: value\": one of the headers given has no name before a colon");
    // A credential given as a header is a secret like the key: scrubbed from everything saved.
    const std::string name = core::lower(h.substr(0, colon));
    for (const char* word : {"auth", "key", "token", "secret", "cookie", "signature"})
      if (name.find(word) != std::string::npos) {
        std::string value = h.substr(colon + 1);
        value.erase(0, value.find_first_not_of(" \t"));
        core::register_secret(value);
        if (const auto sp = value.find(' '); sp != std::string::npos) core::register_secret(value.substr(sp + 1));
      }
    ep.headers.push_back(h);
  }
  ep.proxy = f.proxy;
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

}  // namespace infdoctor::api
