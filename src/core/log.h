#pragma once
// Messages for people go to stderr, prefixed `infdoctor: <level>: `; stdout carries only reports.
#include <string_view>

namespace infdoctor::core::log {

enum class Level { Debug, Info, Warn, Error };

void set_level(Level min_level);
void write(Level level, std::string_view message);
inline void debug(std::string_view m) { write(Level::Debug, m); }
inline void info(std::string_view m) { write(Level::Info, m); }
inline void warn(std::string_view m) { write(Level::Warn, m); }
inline void error(std::string_view m) { write(Level::Error, m); }

}  // namespace infdoctor::core::log
