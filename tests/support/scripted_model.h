#pragma once
// A model port that answers from a script on a fake clock: each request is answered by
// `answer(request, now)`, and the clock then moves on by the request's total time, as if it had
// been served. Checks' logic is tested at any magnitude without a server and without waiting.
#include <functional>
#include <vector>

#include "checks/ports.h"
#include "support/fake_clock.h"

namespace infdoctor::test {

// A successful streamed sample: the request left 0.1 ms after its start.
inline api::RequestSample answered(double ttft_ms, double total_ms) {
  api::RequestSample s;
  s.ok = true;
  s.http_status = 200;
  s.request_sent_ms = 0.1;
  s.ttfb_ms = ttft_ms;
  s.first_event_ms = ttft_ms;
  s.ttft_ms = ttft_ms;
  s.total_ms = total_ms;
  s.output_tokens = 1;
  return s;
}

class ScriptedModel final : public checks::ModelPort {
 public:
  using Answer = std::function<api::RequestSample(const api::ChatRequest&, core::SteadyTime now)>;
  ScriptedModel(FakeClock& clock, Answer answer) : clock_(clock), answer_(std::move(answer)) {}

  core::Result<std::vector<api::RequestSample>> chat(const api::Endpoint&, const std::vector<api::ChatRequest>& reqs,
                                                     core::SteadyTime deadline) override {
    if (clock_.now() >= deadline) return core::make_error(core::ErrorCode::DeadlineExceeded, "the check's deadline came first");
    std::vector<api::RequestSample> out;
    double longest_ms = 0;
    for (const auto& r : reqs) {
      out.push_back(answer_(r, clock_.now()));
      longest_ms = std::max(longest_ms, out.back().total_ms.value_or(0));
    }
    requests_ += static_cast<int>(reqs.size());
    clock_.advance(std::chrono::microseconds(static_cast<long long>(longest_ms * 1000)));
    return out;
  }
  int requests() const { return requests_; }

 private:
  FakeClock& clock_;
  Answer answer_;
  int requests_ = 0;
};

}  // namespace infdoctor::test
