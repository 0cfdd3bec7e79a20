// checks/soak.cpp. Off unless soak.minutes > 0 (--soak-minutes). Measures: one request every
// soak.interval_ms to the target model for the given minutes; the trend of TTFT and time per
// token over the run (Theil-Sen slope times the duration: the drift), their variance (coefficient
// of variation), and the share of requests slower than twice the median (periodic slowdowns).
// Cannot tell: whose load causes a slowdown (a noisy neighbour, a deploy, our own soak).
// Emits: soak.{ttft_p50_ms,ttft_p99_ms,ttft_cv_ratio,ttft_drift_ms,tpot_p50_ms,tpot_drift_ms,
// slow_ratio,samples_count,duration_s}.
#include <cmath>

#include "checks/check.h"
#include "checks/soak.h"
#include "checks/registry.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kSoakInfo{
    "soak",
    "Soak",
    "Steady load for some minutes: drift, variance and periodic slowdowns over time.",
    {{soak_metric::ttft_p50_ms.name, "ms", "median TTFT"},
     {soak_metric::ttft_p99_ms.name, "ms", "99th percentile TTFT"},
     {soak_metric::ttft_cv_ratio.name, "ratio", "TTFT standard deviation over its mean"},
     {soak_metric::ttft_drift_ms.name, "ms", "fitted change of TTFT from the start to the end of the soak"},
     {soak_metric::tpot_p50_ms.name, "ms", "median time per output token"},
     {soak_metric::tpot_drift_ms.name, "ms", "fitted change of TPOT over the soak"},
     {soak_metric::slow_ratio.name, "ratio", "requests slower than twice the median TTFT"},
     {soak_metric::samples_count.name, "count", "successful requests"},
     {soak_metric::failures_count.name, "count", "failed requests"},
     {soak_metric::duration_s.name, "s", "how long the soak ran"}},
    {{nullptr, "TTFT p50 {ttft_p50_ms}, drift {ttft_drift_ms}, slow {slow_ratio%}"}},
    {soak_setting::minutes, soak_setting::interval_ms, soak_setting::max_tokens, soak_setting::prompt_tokens},
    &soak_setting::minutes};

class SoakCheck final : public Check {
 public:
  explicit SoakCheck(const Options& o)
      : minutes_(o.number(soak_setting::minutes)),
        interval_ms_(o.whole(soak_setting::interval_ms)),
        max_tokens_(o.whole(soak_setting::max_tokens)),
        prompt_tokens_(o.whole(soak_setting::prompt_tokens)) {}
  const CheckInfo& info() const override { return kSoakInfo; }
  std::vector<Step> plan() const override {
    if (minutes_ <= 0) return {};
    const int n = static_cast<int>(std::ceil(minutes_ * 60000.0 / interval_ms_));
    return {{"one request every " + std::to_string(interval_ms_) + " ms for " + format_number(minutes_) + " min",
             n, "target", prompt_tokens_, max_tokens_}};
  }

  std::chrono::milliseconds planned_wait() const override {
    return std::chrono::milliseconds(static_cast<long long>(minutes_ * 60000));
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kSoakInfo.id);
    if (minutes_ <= 0) return out.skip("off: give --soak-minutes N to run it");
    if (ctx.models().target.empty()) return out.skip("no --model given");
    const auto t0 = ctx.clock().now();
    const auto end = t0 + std::chrono::milliseconds(static_cast<long long>(minutes_ * 60000));
    std::vector<double> at_s, ttft, tpot_at_s, tpot;
    RequestLoop loop(ctx, out);
    auto next = t0;
    while (next < end && !loop.stopped() && ctx.before_deadline()) {
      if (!ctx.idle_until(next)) break;
      next += std::chrono::milliseconds(interval_ms_);
      ctx.progress("soak: request " + std::to_string(out.requests.size() + 1));
      api::ChatRequest req = api::synthetic_request(ctx.models().target, prompt_tokens_, max_tokens_);
      const double when = core::to_ms(core::elapsed_us(t0, ctx.clock().now())) / 1000.0;
      const auto sent = loop.send(req, {{"at_s", when}});
      if (!sent || !sent->ok) continue;
      const api::RequestSample& s = *sent;
      if (auto t = server_ttft_ms(s)) {
        at_s.push_back(when);
        ttft.push_back(*t);
      }
      if (s.tpot_ms) {
        tpot_at_s.push_back(when);
        tpot.push_back(*s.tpot_ms);
      }
    }
    const double duration = core::to_ms(core::elapsed_us(t0, ctx.clock().now())) / 1000.0;
    out.set(soak_metric::duration_s, duration);
    out.set(soak_metric::samples_count, static_cast<double>(ttft.size()));
    out.set(soak_metric::failures_count, loop.failures());
    const auto s = stats::summarize(ttft);
    if (s.p50) {
      out.set(soak_metric::ttft_p50_ms, *s.p50);
      out.set(soak_metric::ttft_p99_ms, *s.p99);
      const double slow = static_cast<double>(std::count_if(ttft.begin(), ttft.end(), [&](double v) { return v > 2 * *s.p50; }));
      out.set(soak_metric::slow_ratio, slow / static_cast<double>(ttft.size()));
    }
    if (s.stddev && s.mean && *s.mean > 0) out.set(soak_metric::ttft_cv_ratio, *s.stddev / *s.mean);
    if (auto f = stats::theil_sen(at_s, ttft)) out.set(soak_metric::ttft_drift_ms, f->slope * duration);
    if (auto v = stats::median(tpot)) out.set(soak_metric::tpot_p50_ms, *v);
    if (auto f = stats::theil_sen(tpot_at_s, tpot)) out.set(soak_metric::tpot_drift_ms, f->slope * duration);
    return out;
  }

 private:
  double minutes_;
  int interval_ms_, max_tokens_, prompt_tokens_;
};

}  // namespace

CheckEntry soak_entry() { return entry_of<SoakCheck>(kSoakInfo); }

}  // namespace infdoctor::checks
