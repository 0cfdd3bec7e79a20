#include "run/target_spec.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/redact.h"
#include "core/strings.h"

namespace infdoctor::run {

core::Result<TargetSpec> parse_target_spec(const std::string& text, const std::string& flag,
                                           const api::EndpointSpec& shared, const std::vector<std::string>& more_keys,
                                           std::map<std::string, std::string>* more) {
  std::string want = "NAME=URL,model=M[,small=S][,preset=P][,key_env=VAR|,key_file=PATH]";
  for (const auto& k : more_keys) want += "[," + k + "=...]";
  auto bad = [&](const std::string& why) {
    return core::make_error(core::ErrorCode::InvalidArgument, flag + " " + why + " (want " + want + ")");
  };
  TargetSpec s;
  s.endpoint = shared;
  bool first = true;
  for (const auto& item : core::split(text)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) return bad("has '" + core::redact_url(item) + "' without '='");
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (first) {
      s.name = k;
      s.endpoint.base_url = v;
      first = false;
    } else if (k == "model") {
      s.models.target = v;
    } else if (k == "small") {
      s.models.small = v;
    } else if (k == "preset") {
      s.endpoint.preset = v;
    } else if (k == "key_env") {
      s.endpoint.api_key_env = v;
    } else if (k == "key_file") {
      s.endpoint.api_key_file = v;
    } else if (more && std::find(more_keys.begin(), more_keys.end(), k) != more_keys.end()) {
      (*more)[k] = v;
    } else {
      return bad("has an unknown key '" + k + "'");
    }
  }
  if (s.name.empty() || s.name.find_first_of("/ .") != std::string::npos)
    return bad("needs a NAME of letters, digits, - or _");
  if (s.models.target.empty()) return bad("needs model=");
  if (s.endpoint.base_url.empty() && s.endpoint.preset.empty()) return bad("needs a URL after NAME= (or preset=)");
  if (s.endpoint.api_key_env.empty() && s.endpoint.api_key_file.empty()) {
    std::string var;
    for (char c : s.name) var += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
    var += "_API_KEY";
    if (std::getenv(var.c_str()) || s.endpoint.preset.empty()) s.endpoint.api_key_env = var;
  }
  return s;
}

}  // namespace infdoctor::run
