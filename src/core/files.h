#pragma once
// Files infdoctor writes for its user: private from the start, and whole when a reader sees them.
#include <string>

#include "core/result.h"

namespace infdoctor::core {

// A file created 0600 from the start, as every bundle file and every output is.
Status write_private_file(const std::string& path, const std::string& content);
// The same, written whole: to a temporary name beside `path`, then renamed over it, so a reader
// (a collector, a script) never sees half a file.
Status write_replacing(const std::string& path, const std::string& content);

}  // namespace infdoctor::core
