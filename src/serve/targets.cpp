#include "serve/targets.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>

#include "core/strings.h"

namespace infdoctor::serve {

std::chrono::seconds default_interval(const std::string& module) {
  using namespace std::chrono_literals;
  if (module == "probe") return 60s;
  if (module == "quick") return 15min;
  if (module == "full") return 6h;
  return 1h;
}

core::Result<std::chrono::seconds> parse_duration(const std::string& text) {
  auto bad = [&] {
    return core::make_error(core::ErrorCode::InvalidArgument,
                            "'" + text + "' is not a duration (want e.g. 90s, 15m, 1h, 1h30m)");
  };
  if (text.empty()) return bad();
  long long total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    if (j == i || j - i > 9) return bad();
    const long long n = std::stoll(text.substr(i, j - i));
    long long unit = 1;
    if (j < text.size()) {
      switch (text[j]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default: return bad();
      }
      ++j;
    } else if (i != 0) {
      return bad();  // "1h30": the last number needs its unit
    }
    total += n * unit;
    i = j;
  }
  return std::chrono::seconds(total);
}

core::Result<ServeTarget> parse_serve_target(const std::string& text, const std::string& where,
                                             const api::EndpointSpec& shared) {
  std::map<std::string, std::string> more;
  auto spec = run::parse_target_spec(text, where, shared, {"module", "interval", "budget"}, &more);
  if (!spec.ok()) return spec.error();
  ServeTarget t;
  t.spec = std::move(spec.value());
  t.text = text;
  auto bad = [&](const std::string& why) {
    return core::make_error(core::ErrorCode::InvalidArgument, where + " " + t.spec.name + ": " + why);
  };
  if (auto it = more.find("module"); it != more.end()) {
    if (std::find(std::begin(kModules), std::end(kModules), it->second) == std::end(kModules))
      return bad("module '" + it->second + "' is not one of probe, quick, default, full");
    t.module = it->second;
  }
  t.interval = default_interval(t.module);
  if (auto it = more.find("interval"); it != more.end()) {
    auto d = parse_duration(it->second);
    if (!d.ok()) return bad("interval: " + d.error().message);
    if (d->count() < 10) return bad("interval " + it->second + " is under 10 s");
    t.interval = *d;
  }
  t.budget_per_hour = kDefaultBudget;
  if (auto it = more.find("budget"); it != more.end()) {
    char* end = nullptr;
    const long n = std::strtol(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || n < 1 || n > 1000000)
      return bad("budget '" + it->second + "' is not a number of requests an hour from 1 to 1000000");
    t.budget_per_hour = static_cast<int>(n);
  }
  return t;
}

core::Result<std::vector<ServeTarget>> read_config(const std::string& path, const api::EndpointSpec& shared) {
  std::ifstream in(path);
  if (!in) return core::make_error(core::ErrorCode::Io, "cannot read --config " + path);
  std::vector<ServeTarget> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const auto first = line.find_first_not_of(" \t\r");
    line = first == std::string::npos ? "" : line.substr(first, line.find_last_not_of(" \t\r") + 1 - first);
    if (line.empty()) continue;
    auto t = parse_serve_target(line, path + ":" + std::to_string(n) + ":", shared);
    if (!t.ok()) return t.error();
    for (const auto& o : out)
      if (o.spec.name == t->spec.name)
        return core::make_error(core::ErrorCode::InvalidArgument,
                                path + ":" + std::to_string(n) + ": target " + t->spec.name + " is named twice");
    out.push_back(std::move(t.value()));
  }
  return out;
}

}  // namespace infdoctor::serve
