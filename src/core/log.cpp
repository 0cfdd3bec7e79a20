#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace infdoctor::core::log {
namespace {
std::atomic<Level> g_min{Level::Info};
std::mutex g_mu;
const char* name(Level l) {
  switch (l) {
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warning";
    case Level::Error: return "error";
  }
  return "?";
}
}  // namespace

void set_level(Level min_level) { g_min = min_level; }

void write(Level level, std::string_view message) {
  if (level < g_min.load()) return;
  std::string line = "infdoctor: ";
  line += name(level);
  line += ": ";
  line += message;
  line += '\n';
  std::lock_guard lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace infdoctor::core::log
