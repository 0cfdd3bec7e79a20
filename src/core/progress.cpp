#include "core/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>

#include "core/redact.h"

namespace infdoctor::core {

Progress::Mode Progress::mode_for(std::FILE* out, bool quiet) {
  if (quiet) return Mode::Off;
  return ::isatty(::fileno(out)) == 1 ? Mode::Live : Mode::Lines;
}

Progress::Progress(Mode mode, std::FILE* out) : mode_(mode), out_(out), started_(SteadyClock::now()) {
  if (mode_ == Mode::Live) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::check(int n, int m, const std::string& id) {
  {
    std::lock_guard lock(mu_);
    where_ = "[" + std::to_string(n) + "/" + std::to_string(m) + "]";
  }
  step(id);
}

void Progress::step(const std::string& text) {
  if (mode_ == Mode::Off || text.empty()) return;
  std::lock_guard lock(mu_);
  text_ = scrub(text);
  until_.reset();
  draw_locked();
}

void Progress::wait_until(SteadyTime until) {
  if (mode_ != Mode::Live) return;  // the step's own line already says how long
  std::lock_guard lock(mu_);
  until_ = until;
  draw_locked();
}

void Progress::note(const std::string& text) {
  if (mode_ == Mode::Off) return;
  std::lock_guard lock(mu_);
  if (mode_ == Mode::Live) std::fprintf(out_, "\r\033[K");
  std::fprintf(out_, "infdoctor: %s\n", scrub(text).c_str());
  if (mode_ == Mode::Live && live_shown_) draw_locked();
  std::fflush(out_);
}

void Progress::draw_locked() {
  const auto now = SteadyClock::now();
  const double elapsed_s = to_ms(elapsed_us(started_, now)) / 1000.0;
  if (mode_ == Mode::Live) {
    std::string left;
    if (until_ && *until_ > now)
      left = "  (" + std::to_string(static_cast<long>(std::ceil(to_ms(elapsed_us(now, *until_)) / 1000.0))) + " s left)";
    std::fprintf(out_, "\r\033[K%s %5.1f s  %s%s", where_.c_str(), elapsed_s, text_.c_str(), left.c_str());
    std::fflush(out_);
    live_shown_ = true;
    return;
  }
  const std::time_t wall = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&wall, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%H:%M:%SZ", &tm);
  std::fprintf(out_, "infdoctor: %s %s %.1f s: %s\n", stamp, where_.c_str(), elapsed_s, text_.c_str());
  std::fflush(out_);
}

void Progress::tick() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, std::chrono::seconds(1));
    if (!stopping_ && live_shown_) draw_locked();
  }
}

void Progress::done() {
  if (mode_ != Mode::Live) return;
  std::lock_guard lock(mu_);
  if (!live_shown_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  live_shown_ = false;
}

}  // namespace infdoctor::core
