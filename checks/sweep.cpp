// checks/sweep.cpp. Measures, on the target model:
//  - prefill: TTFT over rising prompt sizes (sweep.prompt_tokens), fitted as
//    TTFT = overhead + slope x prompt tokens (Theil-Sen). Sizes are the server's own usage counts:
//    the run sizes each synthetic prompt's words to the tokens asked from the answers it has had
//    (run/pacer.h), so no tokenizer is needed. A size
//    the model refuses (400, context too long) ends the sweep and sets the largest size accepted.
//    Each of these requests also decodes sweep.prefill_max_tokens tokens: their time per token
//    against the prompt's length is decode against context (each token's attention reads the keys
//    and values of the whole context), fitted the same way.
//  - decode: end-to-end time over rising max_tokens (sweep.max_tokens) with a short prompt,
//    fitted as total = overhead + slope x output tokens; responses that stop before max_tokens
//    are counted (their true lengths still feed the fit), and once every answer of a size ended
//    by itself the larger sizes are not sent (they would cap the same answer).
// TTFT and totals are taken without the request's own connection setup.
// Cannot tell: prefill from queueing when the server is busy (see concurrency), nor the
// tokenizer's treatment of our synthetic prompt versus real text.
// Emits: sweep.{prefill_ms_per_token,prefill_overhead_ms,prefill_fit_r2_ratio,decode_ms_per_token,
// decode_overhead_ms,decode_fit_r2_ratio,tpot_p50_ms,stopped_early_count,max_prompt_tokens_count}.
#include <algorithm>
#include <cmath>
#include <map>

#include "checks/check.h"
#include "checks/registry.h"
#include "checks/sweep.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kSweepInfo{
    "sweep",
    "Prompt-length and output-length sweeps",
    "TTFT against prompt tokens (prefill cost) and total time against output tokens (decode cost).",
    {{sweep_metric::prefill_ms_per_token.name, "ms", "fitted TTFT slope per prompt token",
      {.layer = "prefill per prompt token", .per = "per prompt token", .explains = Explains::PerPromptToken, .history = true,
       .fit_r2 = sweep_metric::prefill_fit_r2_ratio.name}},
     {sweep_metric::prefill_overhead_ms.name, "ms", "fitted TTFT at zero prompt tokens"},
     {sweep_metric::small_prefill_ms_per_token.name, "ms",
      "the small model's prefill per prompt token on the same endpoint (with --small-model): the hardware's balance of compute and bandwidth"},
     {sweep_metric::prefill_fit_r2_ratio.name, "ratio", "how well a line explains TTFT against prompt tokens"},
     {sweep_metric::prefill_samples_count.name, "count", "prefill requests that succeeded"},
     {sweep_metric::prefill_growth_ms_per_1k_tokens.name, "ms",
      "when TTFT grows faster than a line (a quadratic fits, its term beyond twice the points' scatter at the largest "
      "prompt): how much each prompt token's cost grows per 1,000 tokens of prompt, TTFT = a + (b + this x P / 1000) x P"},
     {sweep_metric::prefill_quad_ms_per_token.name, "ms", "that curve's cost per prompt token at a short prompt (b)"},
     {sweep_metric::prefill_quad_overhead_ms.name, "ms", "that curve's TTFT at zero prompt tokens (a)"},
     {sweep_metric::hidden_reasoning_count.name, "count",
      "prefill requests whose answer came after reasoning tokens that never arrived: their first token times the "
      "reasoning too, so no prefill is fitted"},
     {sweep_metric::max_prompt_tokens_count.name, "count", "largest prompt (server tokens) measured"},
     {sweep_metric::refused_prompt_tokens_count.name, "count",
      "smallest prompt (tokens asked) the model refused as longer than its context: a limit, not a failure; larger "
      "sizes are not sent"},
     {sweep_metric::ttft_at_max_prompt_ms.name, "ms", "median TTFT at the largest prompt"},
     {sweep_metric::tpot_at_min_prompt_ms.name, "ms", "median time per output token after the smallest prompt"},
     {sweep_metric::tpot_at_max_prompt_ms.name, "ms", "median time per output token after the largest prompt"},
     {sweep_metric::decode_context_ms_per_1k_tokens.name, "ms", "fitted growth of the time per output token per 1,000 tokens of context"},
     {sweep_metric::tpot_context_growth_ratio.name, "ratio", "time per output token after the largest prompt over after the smallest"},
     {sweep_metric::decode_ms_per_token.name, "ms", "fitted end-to-end slope per output token",
      {.history = true}},
     {sweep_metric::decode_overhead_ms.name, "ms", "fitted end-to-end time at zero output tokens"},
     {sweep_metric::decode_fit_r2_ratio.name, "ratio", "how well a line explains total time against output tokens"},
     {sweep_metric::decode_samples_count.name, "count", "decode requests that succeeded"},
     {sweep_metric::tpot_p50_ms.name, "ms", "median time per output token of the decode requests"},
     {sweep_metric::max_output_tokens_count.name, "count", "most output tokens any decode request produced"},
     {sweep_metric::stopped_early_count.name, "count", "decode requests that stopped before max_tokens"},
     {sweep_metric::failures_count.name, "count", "failed requests"}},
    {{&sweep_metric::hidden_reasoning_count, "prefill not fitted: the model reasoned unseen before its first token ({hidden_reasoning_count|request}), decode {decode_ms_per_token}, {stopped_early_count|answer} stopped early"},
     {nullptr, "prefill {prefill_ms_per_token} + {prefill_overhead_ms}, decode {decode_ms_per_token}, {stopped_early_count|answer} stopped early"}},
    {sweep_setting::prompt_tokens, sweep_setting::max_tokens, sweep_setting::repeats,
     sweep_setting::decode_prompt_tokens, sweep_setting::prefill_max_tokens, sweep_setting::workload_prompt_tokens,
     sweep_setting::workload_output_tokens}};

// A fitted cost or time that cannot be below zero: below it, it is the fit's scatter, not the
// server's, and it is read as zero and said (the fitted value kept in details.clamped).
void set_physical(CheckResult& out, const MetricKey& m, double v) {
  if (v < 0) out.details["clamped"][std::string(m.key())] = v;
  out.set(m, std::max(0.0, v));
}

class SweepCheck final : public Check {
 private:
  // The small model's prompt sizes: the sweep's smallest and one past it up to 2,048 tokens, where
  // prefill is most of the first token without costing much.
  std::vector<double> small_sizes() const {
    if (prompts_.size() < 2) return {};
    double large = prompts_[1];
    for (const double p : prompts_)
      if (p <= 2048) large = std::max(large, p);
    return {prompts_.front(), large};
  }

  // The same prompts to the small model on the same endpoint: on the same hardware a prompt token
  // costs about the same share of a decode token whatever the model's size (compute against
  // memory bandwidth), so the small model's share tells the hardware's balance from the target's.
  void small_prefill(CheckContext& ctx, RequestLoop& loop, CheckResult& out) const {
    const std::string& small = ctx.models().small;
    if (small.empty()) return;
    std::vector<double> x, y;
    for (const double p : small_sizes())
      for (int rep = 0; rep < repeats_ && !loop.stopped(); ++rep) {
        ctx.progress("sweep: the small model's prefill at about " + std::to_string(static_cast<int>(p)) + " prompt tokens");
        auto s = loop.send(api::synthetic_request(small, static_cast<int>(p), 1), {{"sweep", "small_prefill"}, {"prompt_tokens_asked", p}});
        if (!s || !s->ok || !s->prompt_tokens) continue;
        if (auto t = server_ttft_ms(*s)) {
          x.push_back(static_cast<double>(*s->prompt_tokens));
          y.push_back(*t);
        }
      }
    if (auto f = stats::theil_sen(x, y)) set_physical(out, sweep_metric::small_prefill_ms_per_token, f->slope);
  }

 public:
  explicit SweepCheck(const Options& o)
      : prompts_(o.numbers(sweep_setting::prompt_tokens)),
        max_tokens_(o.numbers(sweep_setting::max_tokens)),
        repeats_(o.whole(sweep_setting::repeats)),
        decode_prompt_(o.whole(sweep_setting::decode_prompt_tokens)),
        prefill_max_tokens_(o.whole(sweep_setting::prefill_max_tokens)),
        output_reach_(o.whole(sweep_setting::workload_output_tokens)) {
    // The reference request's prompt (--workload prompt=P): a size beyond the sweep's largest is
    // sent too, so a finding at that length is measured there and not extrapolated.
    const double reach = o.whole(sweep_setting::workload_prompt_tokens);
    if (!prompts_.empty() && reach > prompts_.back()) prompts_.push_back(reach);
  }
  const CheckInfo& info() const override { return kSweepInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps;
    for (double p : prompts_)
      steps.push_back({"prefill: prompt of " + std::to_string(static_cast<long long>(p)) + " tokens" +
                           (repeats_ > 1 ? " (repeated unless the first is on the smaller sizes' line)" : ""),
                       repeats_, "target",
                       static_cast<long long>(p), prefill_max_tokens_});
    for (double m : max_tokens_)
      steps.push_back({"decode: max_tokens " + std::to_string(static_cast<long long>(m)) +
                           (repeats_ > 1 ? " (repeated unless the first agrees with the answers before it)" : "") +
                           (m > max_tokens_.front() ? ", unless the answers before it ended by themselves" : "") +
                           (output_reach_ > 0 && m > output_reach_
                                ? ", or the time per token up to the reference request's " + std::to_string(output_reach_) +
                                      " tokens held steady"
                                : ""),
                       repeats_, "target",
                       decode_prompt_, static_cast<long long>(m)});
    for (const double p : small_sizes())
      steps.push_back({"the small model's prefill: prompt of " + std::to_string(static_cast<long long>(p)) + " tokens",
                       repeats_, "small", static_cast<long long>(p), 1});
    return steps;
  }
  // Time to first token against prompt tokens, each prefill request a point, with the fitted line.
  std::vector<Chart> charts(const CheckResult& r) const override {
    ChartSeries measured{"measured", SeriesKind::Points, {}}, fit{"fit", SeriesKind::Fit, {}};
    for (const auto& [s, label] : r.requests)
      if (label.is_object() && label.value("sweep", "") == "prefill" && s.ttft_ms && s.prompt_tokens)
        measured.points.push_back({static_cast<double>(*s.prompt_tokens), *s.ttft_ms, s.request_id});
    const auto slope = r.metric(sweep_metric::prefill_ms_per_token), overhead = r.metric(sweep_metric::prefill_overhead_ms);
    if (slope && overhead && !measured.points.empty()) {
      const auto [lo, hi] = std::minmax_element(measured.points.begin(), measured.points.end(),
                                                [](const ChartPoint& a, const ChartPoint& b) { return a.x < b.x; });
      for (const double x : {lo->x, hi->x}) fit.points.push_back({x, *overhead + *slope * x, ""});
    }
    return {{"ttft-vs-prompt", "Time to first token against prompt tokens, with the Theil-Sen fit.",
             {"prompt", "tokens", true}, {"TTFT", "ms"}, {measured, fit}}};
  }
  // A finding on the prefill's cost per token shown again: the shortest and the longest prompt
  // asked, each with the words and output the run sent it. Its overhead and the decode are not
  // shown by two prompt lengths.
  std::vector<ReproRequest> repro(const CheckResult& r, const std::string& metric, const Models&) const override {
    const bool shown = metric == sweep_metric::prefill_ms_per_token.name || metric == sweep_metric::prefill_growth_ms_per_1k_tokens.name ||
                       metric == sweep_metric::prefill_quad_ms_per_token.name || metric == sweep_metric::ttft_at_max_prompt_ms.name;
    if (!shown) return {};
    const auto asked = [](const LabelledSample& s) {
      return s.label.is_object() && s.label.value("sweep", "") == "prefill" && s.label.contains("prompt_tokens_asked");
    };
    int lo = 0, hi = 0;
    for (const auto& req : r.requests)
      if (asked(req) && req.sample.ok) {
        const int w = req.label["prompt_tokens_asked"].get<int>();
        if (lo == 0 || w < lo) lo = w;
        hi = std::max(hi, w);
      }
    if (lo == 0 || lo == hi) return {};
    std::vector<ReproRequest> out;
    for (const int size : {lo, hi}) {
      const RunTtft t = run_ttft(r, [&](const LabelledSample& s) { return asked(s) && s.label.value("prompt_tokens_asked", 0) == size; });
      if (!t.last) return {};
      const api::RequestSample& sent = t.last->sample;
      const int words = sent.prompt_words > 0 ? sent.prompt_words : size;
      out.push_back({std::to_string(sent.prompt_tokens.value_or(words)) + " prompt tokens", false, words,
                     std::max<long long>(1, sent.output_tokens.value_or(1)), 0, t.median_ms});
    }
    return out;
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kSweepInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    RequestLoop loop(ctx, out);
    // Prefill.
    std::vector<double> px, py;
    std::vector<std::size_t> pstep;  // which size each point was sent at
    std::vector<double> cx, cy;  // time per output token against prompt tokens
    std::optional<double> largest;
    std::vector<double> at_largest, tpot_first, tpot_largest, prompts_not_repeated;
    int hidden_reasoning = 0;
    for (std::size_t i = 0; i < prompts_.size() && !loop.stopped(); ++i) {
      const int want = static_cast<int>(prompts_[i]);
      bool refused = false;
      std::vector<double> here, tpot_here;
      double tokens_here = want;
      const std::size_t points_before = px.size(), tpots_before = cx.size();
      for (int rep = 0; rep < repeats_ && !loop.stopped(); ++rep) {
        // Sequential, as the decode sizes below: a size is repeated only while its first request
        // could be a one-off: its first token off the line the smaller sizes drew, or its pace off
        // both theirs and the line theirs draw against context (a pace that grows with context
        // grows along a line; a short answer's pace is too noisy to draw one far).
        if (rep == 1 && !here.empty() &&
            on_line(head(px, points_before), head(py, points_before), tokens_here, here.front()) &&
            (tpot_here.empty() || agrees(head(cy, tpots_before), tpot_here.front()) ||
             on_line(head(cx, tpots_before), head(cy, tpots_before), tokens_here, tpot_here.front()))) {
          prompts_not_repeated.push_back(want);
          break;
        }
        ctx.progress("sweep: prefill at about " + std::to_string(want) + " prompt tokens");
        api::ChatRequest req = api::synthetic_request(ctx.models().target, want, prefill_max_tokens_);
        auto s = loop.send(req, {{"sweep", "prefill"}, {"prompt_tokens_asked", want}});
        if (!s) break;
        if (!s->ok) {
          if (s->http_status == 400 || s->http_status == 413) refused = true;  // too long for the model
          if (s->limit == "context_length") out.set(sweep_metric::refused_prompt_tokens_count, want);
          break;
        }
        const double tokens = s->prompt_tokens ? static_cast<double>(*s->prompt_tokens) : want;
        tokens_here = tokens;
        if (s->hidden_reasoning_tokens > 0) ++hidden_reasoning;
        if (auto t = server_ttft_ms(*s)) {
          px.push_back(tokens);
          py.push_back(*t);
          pstep.push_back(i);
          here.push_back(*t);
        }
        // Decode against context only from streams that arrived as generated: clumps time the
        // intermediary that held them.
        if (s->tpot_ms && api::arrived_as_generated(*s)) {
          cx.push_back(tokens);
          cy.push_back(*s->tpot_ms);
          tpot_here.push_back(*s->tpot_ms);
        }
      }
      if (refused) {
        out.details["prompt_refused_at_tokens"] = want;
        break;
      }
      if (!here.empty()) {
        largest = tokens_here;
        at_largest = here;
      }
      if (!tpot_here.empty()) {
        if (tpot_first.empty()) tpot_first = tpot_here;
        tpot_largest = tpot_here;
      }
    }
    out.set(sweep_metric::prefill_samples_count, static_cast<double>(px.size()));
    if (largest) {
      out.set(sweep_metric::max_prompt_tokens_count, *largest);
      out.set(sweep_metric::ttft_at_max_prompt_ms, *stats::median(at_largest));
    }
    // Hidden reasoning puts the model's thinking, whose length the prompt changes, before the
    // first token: a line through those first tokens would fit the thinking, not the prefill.
    if (hidden_reasoning > 0) {
      out.set(sweep_metric::hidden_reasoning_count, hidden_reasoning);
      out.details["prefill_not_fitted"] =
          "the model reasons before its first visible token and does not stream the reasoning: time to first token "
          "is prefill plus reasoning, however small max_tokens is";
    } else if (auto f = stats::theil_sen(px, py)) {
      set_physical(out, sweep_metric::prefill_ms_per_token, f->slope);
      set_physical(out, sweep_metric::prefill_overhead_ms, f->intercept);
      out.set(sweep_metric::prefill_fit_r2_ratio, f->r2);
      // Faster than a line (attention's quadratic term, KV-cache pressure, preemption): a curve
      // through each size's fastest first token (a tail or a neighbour only adds time, and least
      // squares would follow it), kept when its quadratic term at the largest prompt is over
      // twice the points' scatter around it, the line fit's own bar for a measurable slope.
      std::map<std::size_t, std::pair<double, double>> fastest;  // by size: tokens, first token
      for (std::size_t k = 0; k < px.size(); ++k)
        if (auto it = fastest.find(pstep[k]); it == fastest.end() || py[k] < it->second.second) fastest[pstep[k]] = {px[k], py[k]};
      std::vector<double> qx, qy;
      for (const auto& [_, point] : fastest) {
        qx.push_back(point.first);
        qy.push_back(point.second);
      }
      if (const auto q = stats::quadratic_fit(qx, qy); q && q->c > 0 && largest && q->c * *largest * *largest > 2 * q->max_residual) {
        out.set(sweep_metric::prefill_growth_ms_per_1k_tokens, q->c * 1000);
        out.set(sweep_metric::prefill_quad_ms_per_token, q->b);
        out.set(sweep_metric::prefill_quad_overhead_ms, q->a);
      }
    }
    if (!tpot_first.empty()) {
      const double lo = *stats::median(tpot_first), hi = *stats::median(tpot_largest);
      out.set(sweep_metric::tpot_at_min_prompt_ms, lo);
      out.set(sweep_metric::tpot_at_max_prompt_ms, hi);
      if (lo > 0) out.set(sweep_metric::tpot_context_growth_ratio, hi / lo);
    }
    if (auto f = stats::theil_sen(cx, cy)) set_physical(out, sweep_metric::decode_context_ms_per_1k_tokens, f->slope * 1000);

    // Decode.
    std::vector<double> dx, dy, tpot, decode_ttft, not_repeated;
    int stopped_early = 0;
    double most = 0;
    // A size the check's deadline cannot hold is not sent: at the median time per token and to
    // first token seen so far (the prefill requests' to begin with), it would be cut short.
    std::vector<double> seen_tpot = cy, seen_ttft = py;
    // Whether the last size sent kept the pace of the answers before it (its fastest time per token
    // within 3 MAD or a tenth of their median), and what the two paces were. A pace that changes
    // with the answer's length changes every answer of the size; one slow answer among them is
    // the tail, and with two answers a median is their mean.
    bool steady = false;
    double pace_before = 0, pace_at = 0;
    double last_sent = 0;
    // The run's earlier answers to the decode prompt, one at a time (the baseline's to the target,
    // at their default shape): readings of the same prompt, so their first token and pace join the
    // smaller sizes' in deciding whether a size's first answer needs a repeat, and whether its pace
    // held (steady, above). They are not points of the fit.
    std::vector<double> earlier_tpot, earlier_ttft;
    const api::ChatRequest decode_request = api::synthetic_request(ctx.models().target, decode_prompt_, 1);
    for (const CheckResult& earlier : ctx.earlier_checks())
      for (const auto& [s, label] : earlier.requests) {
        if (!s.ok || s.in_flight > 1 || !api::same_prompt(s, decode_request)) continue;
        if (auto t = server_ttft_ms(s)) earlier_ttft.push_back(*t);
        if (s.tpot_ms) earlier_tpot.push_back(*s.tpot_ms);
      }
    if (!earlier_ttft.empty()) out.details["repeats_read_earlier_answers"] = earlier_ttft.size();
    for (double mt : max_tokens_) {
      if (loop.stopped()) break;
      // Past the reference request's output the fit prices nothing the run needs: a longer answer
      // only extends the line, unless the pace up to there changed with the answer's length.
      if (output_reach_ > 0 && mt > output_reach_ && last_sent >= output_reach_ && steady) {
        std::vector<double> beyond;
        for (const double m : max_tokens_)
          if (m >= mt) beyond.push_back(m);
        out.details["not_sent_beyond"] = {
            {"max_tokens", beyond},
            {"why", "the reference request answers in " + std::to_string(output_reach_) + " tokens, and the fastest time per token at max_tokens " +
                        format_number(last_sent) + " (" + format_number(pace_at) + " ms) kept the pace of the answers before it (" +
                        format_number(pace_before) + " ms): a longer answer would only extend the line"}};
        break;
      }
      const double left_ms = core::to_ms(core::elapsed_us(ctx.clock().now(), ctx.deadline()));
      const auto typical_tpot = stats::median(seen_tpot);
      const double needed_ms = stats::median(seen_ttft).value_or(0) + mt * typical_tpot.value_or(0);
      if (typical_tpot && needed_ms > left_ms) {
        out.details["not_sent"] = "max_tokens " + format_number(mt) + " and above: about " + format_number(needed_ms / 1000) +
                                  " s each at the speed seen, " + format_number(std::max(0.0, left_ms) / 1000) +
                                  " s left before the check's deadline (--check-timeout)";
        break;
      }
      const std::size_t own_before = tpot.size();
      std::vector<double> agree_tpot = earlier_tpot, agree_ttft = earlier_ttft;
      agree_tpot.insert(agree_tpot.end(), tpot.begin(), tpot.end());
      agree_ttft.insert(agree_ttft.end(), decode_ttft.begin(), decode_ttft.end());
      std::optional<double> first_tpot, first_ttft;
      int answered = 0, ended = 0;  // this size's answers, and those that ended before max_tokens
      for (int rep = 0; rep < repeats_ && !loop.stopped(); ++rep) {
        // Sequential: the repeats of a size go out only while its first request could be a
        // one-off; one whose pace and first token agree with the answers before it is not
        // repeated (a single token has no pace: its first token alone).
        if (rep == 1 && first_ttft && (first_tpot ? agrees(agree_tpot, *first_tpot) : mt <= 1) &&
            agrees(agree_ttft, *first_ttft)) {
          not_repeated.push_back(mt);
          break;
        }
        ctx.progress("sweep: decode with max_tokens " + std::to_string(static_cast<int>(mt)));
        api::ChatRequest req = api::synthetic_request(ctx.models().target, decode_prompt_, static_cast<int>(mt));
        auto s = loop.send(req, {{"sweep", "decode"}, {"max_tokens", mt}});
        if (!s || !s->ok) continue;
        // Stopping early is of what the model generated (reasoning included, which max_tokens
        // caps too); the fit is over what arrived, the tokens whose time the stream shows.
        const double tokens = api::arrived_tokens(*s).value_or(0);
        ++answered;
        if (s->output_tokens.value_or(static_cast<std::int64_t>(tokens)) < mt) ++stopped_early;
        if (api::ended_by_itself(*s, mt)) ++ended;
        most = std::max(most, tokens);
        if (auto t = server_total_ms(*s)) {
          dx.push_back(tokens);
          dy.push_back(*t);
        }
        if (s->tpot_ms) {
          tpot.push_back(*s->tpot_ms);
          seen_tpot.push_back(*s->tpot_ms);
          if (rep == 0) first_tpot = *s->tpot_ms;
        }
        if (auto t = server_ttft_ms(*s)) {
          seen_ttft.push_back(*t);
          decode_ttft.push_back(*t);
          if (rep == 0) first_ttft = *t;
        }
      }
      last_sent = mt;
      steady = false;
      const std::vector<double> this_size(tpot.begin() + static_cast<std::ptrdiff_t>(own_before), tpot.end());
      if (agree_tpot.size() >= 2 && !this_size.empty()) {
        const double before = *stats::median(agree_tpot), now = *std::min_element(this_size.begin(), this_size.end());
        steady = near(agree_tpot, before, now);
        pace_before = before;
        pace_at = now;
      }
      // Every answer of this size ended on its own before max_tokens: that is how long the model
      // answers this prompt, and a larger max_tokens only caps the same answer further off. The
      // larger sizes would measure this one again, so they are not sent.
      std::vector<double> larger;
      for (const double m : max_tokens_)
        if (m > mt) larger.push_back(m);
      if (answered > 0 && ended == answered && !larger.empty()) {
        out.details["not_sent_longer"] = {{"max_tokens", larger},
                                          {"why", "the answers at max_tokens " + format_number(mt) + " ended by themselves at " +
                                                      format_number(most) + " tokens or fewer: a larger max_tokens caps the same answer"}};
        break;
      }
    }
    if (!not_repeated.empty() || !prompts_not_repeated.empty()) {
      auto& said = out.details["not_repeated"];
      if (!prompts_not_repeated.empty()) said["prompt_tokens"] = prompts_not_repeated;
      if (!not_repeated.empty()) said["max_tokens"] = not_repeated;
      said["why"] =
          "the first request's first token and time per token each within 3 MAD or a tenth of what the requests before "
          "it predict for it (for a decode size the median of the smaller sizes' and the run's earlier answers to the "
          "same prompt, for a prompt the line through the smaller sizes'): a repeat would only have said it again";
    }
    out.set(sweep_metric::decode_samples_count, static_cast<double>(dx.size()));
    out.set(sweep_metric::stopped_early_count, stopped_early);
    out.set(sweep_metric::max_output_tokens_count, most);
    out.set(sweep_metric::failures_count, loop.failures());
    if (auto f = stats::theil_sen(dx, dy)) {
      set_physical(out, sweep_metric::decode_ms_per_token, f->slope);
      set_physical(out, sweep_metric::decode_overhead_ms, f->intercept);
      out.set(sweep_metric::decode_fit_r2_ratio, f->r2);
    }
    if (auto v = stats::median(tpot)) out.set(sweep_metric::tpot_p50_ms, *v);
    small_prefill(ctx, loop, out);
    if (out.status == CheckStatus::Ok && px.empty() && dx.empty())
      return out.fail(core::make_error(core::ErrorCode::StreamError, "no sweep request succeeded"));
    if (out.details.contains("clamped")) {
      out.tables.push_back({"sweep: fits read as zero", {"fitted", "as"}, {}, ""});
      for (const auto& [name, v] : out.details["clamped"].items()) out.tables.back().rows.push_back({name + " " + cell(v.get<double>()), "0"});
      out.tables.back().note = "a cost or a time below zero is none: the line crosses zero within the points' scatter";
    }
    return out;
  }

 private:
  // A request agrees with the earlier ones when its value is within 3 MAD or a tenth of what they
  // predict for it, from four of them at least: their median (a decode size's pace and first token
  // do not depend on max_tokens), or the line through them (a prompt size's first token, and its
  // pace where context slows it; the MAD is of their distances from the line).
  static bool agrees(const std::vector<double>& earlier, double v) {
    return earlier.size() >= 4 && near(earlier, *stats::median(earlier), v);
  }
  static bool on_line(const std::vector<double>& x, const std::vector<double>& y, double at, double v) {
    if (x.size() < 4) return false;
    const auto f = stats::theil_sen(x, y);
    if (!f) return false;
    std::vector<double> off;
    for (std::size_t k = 0; k < x.size(); ++k) off.push_back(y[k] - (f->intercept + f->slope * x[k]));
    const double predicted = f->intercept + f->slope * at;
    return predicted > 0 && near(off, predicted, v);
  }
  // `v` within 3 MAD of the earlier values (a MAD does not move with what they are measured from)
  // or a tenth of `predicted`.
  static bool near(const std::vector<double>& earlier, double predicted, double v) {
    return std::abs(v - predicted) <= std::max(3 * stats::mad(earlier), 0.1 * predicted);
  }
  static std::vector<double> head(const std::vector<double>& v, std::size_t n) {
    return {v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, v.size()))};
  }

  std::vector<double> prompts_, max_tokens_;
  int repeats_, decode_prompt_, prefill_max_tokens_;
  int output_reach_;  // the reference request's output tokens; 0: none
};

}  // namespace

CheckEntry sweep_entry() { return entry_of<SweepCheck>(kSweepInfo); }

}  // namespace infdoctor::checks
