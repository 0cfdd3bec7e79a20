#include "api/target.h"

#include <cstdlib>

#include "dns/resolver.h"

namespace infdoctor::api {

core::Result<Target> parse_target(const std::string& base_url) {
  Target t;
  t.base_url = base_url;
  const auto sep = base_url.find("://");
  if (sep == std::string::npos)
    return core::make_error(core::ErrorCode::ConfigError, "--base-url must start with http:// or https://");
  t.scheme = base_url.substr(0, sep);
  if (t.scheme != "http" && t.scheme != "https")
    return core::make_error(core::ErrorCode::ConfigError, "--base-url must start with http:// or https://");
  std::string authority = base_url.substr(sep + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  std::string port;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos) return core::make_error(core::ErrorCode::ConfigError, "bad host in --base-url");
    t.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const auto colon = authority.rfind(':');
    t.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (t.host.empty()) return core::make_error(core::ErrorCode::ConfigError, "no host in --base-url");
  t.port = t.scheme == "https" ? 443 : 80;
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p < 1 || p > 65535)
      return core::make_error(core::ErrorCode::ConfigError, "bad port in --base-url: " + port);
    t.port = static_cast<int>(p);
  }
  t.host_is_ip = dns::is_ip_literal(t.host);
  return t;
}

}  // namespace infdoctor::api
