#include "core/progress.h"

#include <unistd.h>

#include <chrono>
#include <ctime>

#include "core/redact.h"

namespace infdoctor::core {

Progress::Mode Progress::mode_for(std::FILE* out, bool quiet) {
  if (quiet) return Mode::Off;
  return ::isatty(::fileno(out)) == 1 ? Mode::Live : Mode::Lines;
}

Progress::Progress(Mode mode, std::FILE* out) : mode_(mode), out_(out), started_(SteadyClock::now()) {}

void Progress::check(int n, int m, const std::string& id) {
  where_ = "[" + std::to_string(n) + "/" + std::to_string(m) + "]";
  step(id);
}

void Progress::step(const std::string& text) {
  if (mode_ == Mode::Off || text.empty()) return;
  const double elapsed_s = to_ms(elapsed_us(started_, SteadyClock::now())) / 1000.0;
  const std::string line = scrub(text);
  if (mode_ == Mode::Live) {
    std::fprintf(out_, "\r\033[K%s %5.1f s  %s", where_.c_str(), elapsed_s, line.c_str());
    std::fflush(out_);
    live_shown_ = true;
    return;
  }
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%SZ", &tm);
  std::fprintf(out_, "infdoctor: %s %s %.1f s: %s\n", stamp, where_.c_str(), elapsed_s, line.c_str());
  std::fflush(out_);
}

void Progress::done() {
  if (mode_ != Mode::Live || !live_shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  live_shown_ = false;
}

}  // namespace infdoctor::core
