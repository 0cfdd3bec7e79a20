#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace infdoctor::core {

Status write_private_file(const std::string& path, const std::string& content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(ErrorCode::Io, "cannot write " + path, std::strerror(errno));
  ::fchmod(fd, 0600);
  std::size_t off = 0;
  while (off < content.size()) {
    const ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n <= 0) {
      ::close(fd);
      return make_error(ErrorCode::Io, "cannot write " + path, std::strerror(errno));
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return {};
}

Status write_replacing(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".infdoctor-" + std::to_string(::getpid()) + ".tmp";
  if (auto st = write_private_file(tmp, content); !st.ok()) return make_error(st.error().code, "cannot write " + path, st.error().detail);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return make_error(ErrorCode::Io, "cannot write " + path, why);
  }
  return {};
}

}  // namespace infdoctor::core
