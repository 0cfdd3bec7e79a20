#include "core/redact.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <mutex>
#include <vector>

#include "core/strings.h"

namespace infdoctor::core {
namespace {

// A query parameter or header whose name speaks of a secret.
bool secret_name(std::string_view name) {
  const std::string n = lower(name);
  static constexpr std::array<std::string_view, 8> kWords = {"key",  "token", "secret",     "sig",
                                                             "password", "auth", "credential", "cookie"};
  return std::any_of(kWords.begin(), kWords.end(), [&](std::string_view w) { return n.find(w) != std::string::npos; });
}

std::mutex g_secrets_mu;
std::vector<std::string> g_secrets;

}  // namespace

bool is_secret_header(std::string_view name) { return secret_name(name); }

std::string redact_header_line(std::string_view line) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || !is_secret_header(line.substr(0, colon))) return std::string(line);
  return std::string(line.substr(0, colon)) + ": REDACTED";
}

void register_secret(std::string secret) {
  // A very short "secret" would blank out ordinary words; keys are far longer.
  if (secret.size() < 6) return;
  std::lock_guard lock(g_secrets_mu);
  if (std::find(g_secrets.begin(), g_secrets.end(), secret) == g_secrets.end()) g_secrets.push_back(std::move(secret));
}

std::string scrub(std::string_view text) {
  std::string out(text);
  std::lock_guard lock(g_secrets_mu);
  for (const auto& s : g_secrets) {
    for (auto pos = out.find(s); pos != std::string::npos; pos = out.find(s, pos + 8))
      out.replace(pos, s.size(), "REDACTED");
  }
  return out;
}

std::string redact_url(std::string_view url) {
  std::string out(url);
  // userinfo: scheme://user:pass@host
  if (const auto scheme_end = out.find("://"); scheme_end != std::string::npos) {
    const auto host_start = scheme_end + 3;
    const auto path_start = out.find_first_of("/?#", host_start);
    const auto at = out.rfind('@', path_start == std::string::npos ? out.size() : path_start);
    if (at != std::string::npos && at >= host_start) out.replace(host_start, at - host_start, "REDACTED");
  }
  const auto q = out.find('?');
  if (q == std::string::npos) return out;
  std::string result = out.substr(0, q + 1);
  std::string_view rest = std::string_view(out).substr(q + 1);
  std::string_view fragment;
  if (const auto h = rest.find('#'); h != std::string_view::npos) {
    fragment = rest.substr(h);
    rest = rest.substr(0, h);
  }
  bool first = true;
  while (true) {
    const auto amp = rest.find('&');
    std::string_view part = rest.substr(0, amp);
    if (!first) result += '&';
    first = false;
    const auto eq = part.find('=');
    if (eq != std::string_view::npos && secret_name(part.substr(0, eq))) {
      result.append(part.substr(0, eq + 1));
      result += "REDACTED";
    } else {
      result.append(part);
    }
    if (amp == std::string_view::npos) break;
    rest = rest.substr(amp + 1);
  }
  result.append(fragment);
  return result;
}

}  // namespace infdoctor::core
