#include "run/pacer.h"

#include <algorithm>

#include "core/interrupt.h"

namespace infdoctor::run {

core::Result<std::vector<api::RequestSample>> Pacer::chat(const api::Endpoint& ep,
                                                          const std::vector<api::ChatRequest>& reqs,
                                                          core::SteadyTime deadline) {
  using core::ErrorCode;
  const int n = static_cast<int>(reqs.size());
  if (core::interrupted()) return core::interrupted_error();
  if (streak_.stop()) {
    core::Error e = streak_.error();
    e.message = "the run sends no more model requests: " + e.message;
    return e;
  }
  if (n > max_requests_ - spent_)
    return core::make_error(ErrorCode::BudgetExhausted, "the request budget is spent",
                            std::to_string(spent_) + " of " + std::to_string(max_requests_) +
                                " requests sent; this step needs " + std::to_string(n) + " more (--max-requests)");
  if (const auto now = clock_.now(); now < not_before_) {
    if (progress_) progress_("waiting out the provider's Retry-After");
    const auto until = std::min(not_before_, deadline);
    retry_wait_ms_ += core::to_ms(core::elapsed_us(now, until));
    if (!clock_.sleep_until(until)) return core::interrupted_error();
    if (not_before_ > deadline)
      return core::make_error(ErrorCode::DeadlineExceeded, "the provider's Retry-After outlasts the check's deadline");
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
  if (left <= std::chrono::milliseconds(0))
    return core::make_error(ErrorCode::DeadlineExceeded, "the check's deadline came first");
  api::Endpoint bounded = ep;
  bounded.timeout = std::min(bounded.timeout, left);
  bounded.connect_timeout = std::min(bounded.connect_timeout, bounded.timeout);
  spent_ += n;
  std::vector<api::RequestSample> out = api::run_chats(http_, bounded, reqs);
  const auto now_wall = std::chrono::system_clock::now();
  for (const auto& s : out) after(s, now_wall);
  return out;
}

void Pacer::after(const api::RequestSample& s, std::chrono::system_clock::time_point now_wall) {
  if (sample_sink_) {
    nlohmann::json line = api::to_json(s);
    line["check"] = current_check_;
    sample_sink_(line);
  }
  streak_.record(s);
  if (!s.ok) ++failures_[s.error.empty() ? "unknown" : s.error];
  if (s.http_status >= 500) ++server_errors_;
  if (s.http_status != 429 && s.http_status != 503) {
    if (s.ok) backoff_ = {};
    return;
  }
  if (s.http_status == 429) ++rate_limited_;
  // The provider's Retry-After when it sends one; otherwise a backoff that doubles with every
  // refusal in a row (0.5 s up to 8 s), so a throttled run does not hammer.
  std::optional<std::chrono::milliseconds> wait;
  if (auto it = s.headers.find("retry-after"); it != s.headers.end()) wait = http::parse_retry_after(it->second, now_wall);
  if (!wait) {
    backoff_ = std::min(std::chrono::milliseconds(8000),
                        backoff_.count() == 0 ? std::chrono::milliseconds(500) : backoff_ * 2);
    wait = backoff_;
  }
  not_before_ = std::max(not_before_, clock_.now() + *wait);
}

}  // namespace infdoctor::run
