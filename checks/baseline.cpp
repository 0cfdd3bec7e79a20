// checks/baseline.cpp. Measures: the same short streamed request to the small model (--small-model)
// and to the target model (--model), alternating so that drift and load hit both alike:
// TTFT, time per output token (TPOT), end-to-end and inter-token gaps, each over baseline.samples
// requests, with bootstrap 95 % intervals of the medians and the target/small ratios.
// Cannot tell: why a model is slow (engine, hardware, quantisation), only that it is, and whether
// the provider serves both models from the same fleet.
// Emits: baseline.{ttft_p50_ms,tpot_p50_ms,total_p50_ms,itl_p99_ms,...,small_*,ttft_ratio,tpot_ratio}.
#include "api/model_size.h"
#include "checks/baseline.h"
#include "checks/check.h"
#include "checks/registry.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kBaselineInfo{
    "baseline",
    "Small model against target model",
    "The same short request to a small model and to the target model: TTFT, time per token, total.",
    {{baseline_metric::ttft_p50_ms.name, "ms", "target model: median time to first token (without connection setup)",
      {.layer = "time to first token", .per = "every request", .explains = Explains::Whole, .history = true, .slo = "ttft_p50_ms", .column = "TTFT p50"}},
     {baseline_metric::ttft_p90_ms.name, "ms", "target model: 90th percentile TTFT",
      {.slo = "ttft_p90_ms"}},
     {baseline_metric::ttft_p50_ci_low_ms.name, "ms", "target model: 95 % interval of the median TTFT, low end"},
     {baseline_metric::ttft_p50_ci_high_ms.name, "ms", "target model: 95 % interval of the median TTFT, high end"},
     {baseline_metric::tpot_p50_ms.name, "ms", "target model: median time per output token",
      {.layer = "decode per output token", .per = "per output token", .explains = Explains::PerOutputToken, .history = true, .slo = "tpot_p50_ms", .column = "TPOT p50"}},
     {baseline_metric::tpot_p50_ci_low_ms.name, "ms", "target model: 95 % interval of the median TPOT, low end"},
     {baseline_metric::tpot_p50_ci_high_ms.name, "ms", "target model: 95 % interval of the median TPOT, high end"},
     {baseline_metric::total_p50_ms.name, "ms", "target model: median end-to-end time",
      {.history = true, .slo = "total_p50_ms", .typical = Typical::EndToEnd}},
     {baseline_metric::itl_p50_ms.name, "ms", "target model: median gap between content events",
      {.slo = "itl_p50_ms"}},
     {baseline_metric::itl_p99_ms.name, "ms", "target model: 99th percentile gap between content events",
      {.slo = "itl_p99_ms"}},
     {baseline_metric::output_tokens_p50_count.name, "count", "target model: median output tokens",
      {.typical = Typical::OutputTokens}},
     {baseline_metric::events_per_token_ratio.name, "ratio", "target model: content events per output token"},
     {baseline_metric::arrivals_per_token_ratio.name, "ratio", "target model: distinct moments content arrived, per output token"},
     {baseline_metric::arrivals_per_event_ratio.name, "ratio",
      "target model: distinct moments content arrived, per content event (1 when each event is passed on as sent, however many tokens it carries)"},
     {baseline_metric::clump_wait_p50_ms.name, "ms",
      "target model: median time its first token was held for the rest of its clump (0 for a stream that arrived as generated)"},
     {baseline_metric::clump_generation_ms_per_token.name, "ms",
      "target model, clumped streams: generation time per token from the clumps after the first (the last leaves when the stream ends)"},
     {baseline_metric::small_clump_wait_p50_ms.name, "ms", "small model: median time its first token was held for the rest of its clump"},
     {baseline_metric::samples_count.name, "count", "target model: successful requests"},
     {baseline_metric::reasoning_tokens_p50_count.name, "count", "target model: median reasoning tokens (usage), when it reasons"},
     {baseline_metric::hidden_reasoning_ratio.name, "ratio",
      "target model: share of its reasoning requests whose reasoning never arrived (usage counts it, the stream has none)"},
     {baseline_metric::reasoning_p50_ms.name, "ms",
      "target model: median time reasoning before the answer: first reasoning to first answer token when it streams, the hidden tokens times the time per token when not"},
     {baseline_metric::first_answer_p50_ms.name, "ms", "target model: median time to the first answer token (after any reasoning)"},
     {baseline_metric::small_ttft_p50_ms.name, "ms", "small model: median TTFT"},
     {baseline_metric::prompt_tokens_p50_count.name, "count", "median prompt tokens of the target's requests, as the server counted them"},
     {baseline_metric::small_tpot_p50_ms.name, "ms", "small model: median time per output token"},
     {baseline_metric::small_total_p50_ms.name, "ms", "small model: median end-to-end time"},
     {baseline_metric::small_samples_count.name, "count", "small model: successful requests"},
     {baseline_metric::ttft_ratio.name, "ratio", "target over small median TTFT"},
     {baseline_metric::tpot_ratio.name, "ratio", "target over small median TPOT"},
     {baseline_metric::total_ratio.name, "ratio", "target over small median end-to-end"},
     {baseline_metric::size_ratio.name, "ratio", "target over small parameters, as the models' names state them (active parameters of a mixture of experts)"},
     {baseline_metric::expected_tpot_ratio.name, "ratio",
      "the time per token ratio the sizes explain: size_ratio, or 70/8 (a 70B model beside an 8B, the widest pair commonly served together) when a name states no size"},
     {baseline_metric::unexplained_tpot_ratio.name, "ratio", "tpot_ratio over expected_tpot_ratio: 1 = as the sizes explain"},
     {baseline_metric::unexplained_tpot_ms_per_token.name, "ms",
      "target model: time per output token beyond what the small model's times expected_tpot_ratio explains"},
     {baseline_metric::failures_count.name, "count", "failed requests, both models"}},
    {{&baseline_metric::reasoning_tokens_p50_count, "TTFT {ttft_p50_ms}, first answer {first_answer_p50_ms} after {reasoning_tokens_p50_count} reasoning tokens, per token {tpot_p50_ms}, total {total_p50_ms}"},
     {&baseline_metric::tpot_ratio, "TTFT {ttft_p50_ms}, per token {tpot_p50_ms}, total {total_p50_ms}; against the small model x{ttft_ratio} TTFT, x{tpot_ratio} per token"},
     {nullptr, "TTFT {ttft_p50_ms}, per token {tpot_p50_ms}, total {total_p50_ms}"}},
    {baseline_setting::samples, baseline_setting::max_tokens, baseline_setting::prompt_tokens},
    /*off_unless=*/nullptr,
    /*opt_in=*/false,
    /*reference=*/true};

// A 70B dense model beside an 8B one: the widest pair of sizes commonly served side by side.
constexpr double kWidestCommonPair = 70.0 / 8.0;

struct Series {
  std::vector<double> ttft, tpot, total, itl, tokens, prompt, events_per_token, arrivals_per_token, arrivals_per_event;
  // A clumped stream's first-token wait (0 when it arrived as generated), and its clumps' own
  // generation time per token.
  std::vector<double> clump_wait, clump_generation;
  // A reasoning model's: usage's reasoning tokens, the first answer token (from the request
  // sent), the time spent reasoning before it, and the requests whose reasoning never arrived.
  std::vector<double> reasoning_tokens, first_answer, reasoning_ms;
  int hidden_reasoning = 0;
};

// The time a request spent reasoning before its answer: from its first reasoning token to its
// first answer token when the reasoning streamed; the hidden tokens at the stream's time per token
// when it did not.
std::optional<double> reasoning_ms(const api::RequestSample& s) {
  if (s.first_reasoning_ms && s.first_answer_ms) return *s.first_answer_ms - *s.first_reasoning_ms;
  if (s.hidden_reasoning_tokens > 0 && s.tpot_ms) return static_cast<double>(s.hidden_reasoning_tokens) * *s.tpot_ms;
  return std::nullopt;
}

class BaselineCheck final : public Check {
 public:
  explicit BaselineCheck(const Options& o)
      : samples_(o.whole(baseline_setting::samples)),
        max_tokens_(o.whole(baseline_setting::max_tokens)),
        prompt_tokens_(o.whole(baseline_setting::prompt_tokens)) {}
  const CheckInfo& info() const override { return kBaselineInfo; }
  std::vector<Step> plan() const override {
    // Alternating small and target model when --small-model is given.
    return {{"short prompt, one at a time", samples_, "target", prompt_tokens_, max_tokens_},
            {"the same to the small model (with --small-model)", samples_, "small", prompt_tokens_, max_tokens_}};
  }
  // Its own request to each model stands for the run: it shows a finding on any of its metrics,
  // and any finding whose evidence no other check's requests show.
  std::vector<ReproRequest> repro(const CheckResult& r, const std::string&, const Models& models) const override {
    std::vector<ReproRequest> out;
    for (const bool small : {false, true}) {
      const std::string& model = small ? models.small : models.target;
      if (model.empty()) continue;
      const RunTtft t = run_ttft(r, [&](const LabelledSample& s) { return s.sample.model == model; });
      if (!t.last) continue;
      const int words = t.last->sample.prompt_words > 0 ? t.last->sample.prompt_words : prompt_tokens_;
      out.push_back({small ? "the small model" : "the target model", small, words, max_tokens_, 0, t.median_ms});
    }
    return out;
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kBaselineInfo.id);
    const Models& m = ctx.models();
    if (m.target.empty()) return out.skip("no --model given");
    std::vector<std::string> models = {m.target};
    if (!m.small.empty() && m.small != m.target) models.insert(models.begin(), m.small);
    Series target, small;
    RequestLoop loop(ctx, out);
    for (int i = 0; i < samples_ && !loop.stopped(); ++i) {
      for (const auto& model : models) {
        ctx.progress("baseline: " + model + " " + std::to_string(i + 1) + "/" + std::to_string(samples_));
        api::ChatRequest req = api::synthetic_request(model, prompt_tokens_, max_tokens_);
        const auto sent = loop.send(req, {{"model_role", model == m.target ? "target" : "small"}});
        if (!sent || !sent->ok) continue;
        const api::RequestSample& s = *sent;
        Series& dst = model == m.target ? target : small;
        if (auto t = server_ttft_ms(s)) dst.ttft.push_back(*t);
        if (auto t = server_total_ms(s)) dst.total.push_back(*t);
        if (s.tpot_ms) dst.tpot.push_back(*s.tpot_ms);
        if (s.output_tokens) dst.tokens.push_back(static_cast<double>(*s.output_tokens));
        if (s.prompt_tokens) dst.prompt.push_back(static_cast<double>(*s.prompt_tokens));
        if (s.events_per_token) dst.events_per_token.push_back(*s.events_per_token);
        if (auto a = api::arrivals_per_token(s)) dst.arrivals_per_token.push_back(*a);
        if (auto a = api::arrivals_per_event(s)) dst.arrivals_per_event.push_back(*a);
        const auto c = api::clumps(s);
        dst.clump_wait.push_back(c ? c->first_token_wait_ms : 0.0);
        if (c) dst.clump_generation.push_back(c->generation_ms_per_token);
        dst.itl.insert(dst.itl.end(), s.itl_ms.begin(), s.itl_ms.end());
        if (s.reasoning_tokens && *s.reasoning_tokens > 0) {
          dst.reasoning_tokens.push_back(static_cast<double>(*s.reasoning_tokens));
          if (s.hidden_reasoning_tokens > 0) ++dst.hidden_reasoning;
          if (auto r = reasoning_ms(s)) dst.reasoning_ms.push_back(*r);
        }
        if (auto t = server_ttft_ms(s); t && s.first_answer_ms && s.ttft_ms)
          dst.first_answer.push_back(*t + (*s.first_answer_ms - *s.ttft_ms));
      }
    }
    out.set(baseline_metric::failures_count, loop.failures());
    out.set(baseline_metric::samples_count, static_cast<double>(target.ttft.size()));
    if (auto v = stats::median(target.prompt)) out.set(baseline_metric::prompt_tokens_p50_count, *v);
    const stats::Summary tt = stats::summarize(target.ttft), tp = stats::summarize(target.tpot),
                         to = stats::summarize(target.total), ti = stats::summarize(target.itl);
    if (tt.p50) {
      out.set(baseline_metric::ttft_p50_ms, *tt.p50);
      out.set(baseline_metric::ttft_p90_ms, *tt.p90);
    }
    if (auto ci = stats::bootstrap_median_ci(target.ttft)) {
      out.set(baseline_metric::ttft_p50_ci_low_ms, ci->low);
      out.set(baseline_metric::ttft_p50_ci_high_ms, ci->high);
    }
    if (tp.p50) out.set(baseline_metric::tpot_p50_ms, *tp.p50);
    if (auto ci = stats::bootstrap_median_ci(target.tpot)) {
      out.set(baseline_metric::tpot_p50_ci_low_ms, ci->low);
      out.set(baseline_metric::tpot_p50_ci_high_ms, ci->high);
    }
    if (to.p50) out.set(baseline_metric::total_p50_ms, *to.p50);
    if (ti.p50) {
      out.set(baseline_metric::itl_p50_ms, *ti.p50);
      out.set(baseline_metric::itl_p99_ms, *ti.p99);
    }
    if (auto v = stats::median(target.tokens)) out.set(baseline_metric::output_tokens_p50_count, *v);
    if (auto v = stats::median(target.events_per_token)) out.set(baseline_metric::events_per_token_ratio, *v);
    if (auto v = stats::median(target.arrivals_per_token)) out.set(baseline_metric::arrivals_per_token_ratio, *v);
    if (auto v = stats::median(target.arrivals_per_event)) out.set(baseline_metric::arrivals_per_event_ratio, *v);
    if (auto v = stats::median(target.clump_wait)) out.set(baseline_metric::clump_wait_p50_ms, *v);
    if (auto v = stats::median(target.clump_generation)) out.set(baseline_metric::clump_generation_ms_per_token, *v);
    if (!target.reasoning_tokens.empty()) {
      out.set(baseline_metric::reasoning_tokens_p50_count, *stats::median(target.reasoning_tokens));
      out.set(baseline_metric::hidden_reasoning_ratio, static_cast<double>(target.hidden_reasoning) / target.reasoning_tokens.size());
      if (auto v = stats::median(target.reasoning_ms)) out.set(baseline_metric::reasoning_p50_ms, *v);
      if (auto v = stats::median(target.first_answer)) out.set(baseline_metric::first_answer_p50_ms, *v);
    }
    if (models.size() == 2) {
      const auto st = stats::median(small.ttft), sp = stats::median(small.tpot), so = stats::median(small.total);
      out.set(baseline_metric::small_samples_count, static_cast<double>(small.ttft.size()));
      if (st) out.set(baseline_metric::small_ttft_p50_ms, *st);
      if (sp) out.set(baseline_metric::small_tpot_p50_ms, *sp);
      if (so) out.set(baseline_metric::small_total_p50_ms, *so);
      if (auto v = stats::median(small.clump_wait)) out.set(baseline_metric::small_clump_wait_p50_ms, *v);
      if (st && tt.p50 && *st > 0) out.set(baseline_metric::ttft_ratio, *tt.p50 / *st);
      if (sp && tp.p50 && *sp > 0) out.set(baseline_metric::tpot_ratio, *tp.p50 / *sp);
      if (so && to.p50 && *so > 0) out.set(baseline_metric::total_ratio, *to.p50 / *so);
      // Decode is memory-bound: each token reads every (active) weight once, so on the same
      // endpoint and hardware class time per token grows with the parameters.
      const auto target_b = api::parameters_from_name(m.target), small_b = api::parameters_from_name(m.small);
      const std::optional<double> size_ratio =
          target_b && small_b && *small_b > 0 ? std::optional<double>(*target_b / *small_b) : std::nullopt;
      if (size_ratio) out.set(baseline_metric::size_ratio, *size_ratio);
      const double expected = size_ratio ? std::max(1.0, *size_ratio) : kWidestCommonPair;
      out.set(baseline_metric::expected_tpot_ratio, expected);
      if (sp && tp.p50 && *sp > 0) {
        out.set(baseline_metric::unexplained_tpot_ratio, *tp.p50 / *sp / expected);
        out.set(baseline_metric::unexplained_tpot_ms_per_token, std::max(0.0, *tp.p50 - expected * *sp));
      }
    } else {
      out.details["small_model"] = "not given (--small-model): no ratios";
    }
    if (out.status == CheckStatus::Ok && target.ttft.empty())
      return out.fail(core::make_error(core::ErrorCode::StreamError,
                                       "no request to the target model succeeded" +
                                           (loop.last_failure().empty() ? "" : "; the last: " + loop.last_failure())));
    return out;
  }

 private:
  int samples_, max_tokens_, prompt_tokens_;
};

}  // namespace

CheckEntry baseline_entry() { return entry_of<BaselineCheck>(kBaselineInfo); }

}  // namespace infdoctor::checks
