#pragma once
// infdoctor's version: CMake's project(VERSION), given to the build as INFDOCTOR_VERSION.
#include <string_view>

namespace infdoctor::core {
inline constexpr std::string_view kVersion = INFDOCTOR_VERSION;
}  // namespace infdoctor::core
