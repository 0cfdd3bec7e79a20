// checks/coldstart.cpp. Measures: time to first token after rising idle gaps (coldstart.idle_gaps,
// seconds, ascending), against a baseline of back-to-back requests; the first request of the run
// (this check runs before the other model checks so that it is the one to pay any start-up).
// Each request asks for one token, so the time is start-up plus prefill, not generation. TTFT is
// taken without the request's own connection setup, so a kept-alive connection closed by the
// server during a long gap does not read as a cold model.
// A gap is "cold" when its TTFT exceeds the baseline median by more than max(5 MAD, 20 % of the
// median, 25 ms): robust to a noisy baseline, blind to penalties smaller than that. A cold start
// is a state, so it counts from the shortest gap after which every longer one was cold too. The
// longest gap goes first: warm, no shorter gap is waited; cold, the shorter ones follow from the
// shortest up until one is cold too (two cold gaps show the state). A lone slow request is a
// spike (a heavy tail): a longest gap cold alone is measured again.
// A model that answers 503 "loading" while it starts (Hugging Face, KServe, scale-to-zero gateways)
// is waited out by the pacer; the wait counts in the request's TTFT.
// Cannot tell: a cold model from a cold cache or autoscaler in front of it; idle caused by other
// clients' traffic (a busy shared endpoint never goes cold).
// Emits: coldstart.{baseline_ttft_p50_ms,first_request_ttft_ms,first_request_penalty_ms,
// penalty_ms,threshold_s,threshold_low_s,cold_gaps_count,gaps_count}.
#include <algorithm>
#include <cmath>

#include "checks/check.h"
#include "checks/coldstart.h"
#include "checks/registry.h"
#include "core/strings.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kColdstartInfo{
    "coldstart",
    "Cold starts",
    "Time to first token after rising idle gaps, against back-to-back requests.",
    {{coldstart_metric::baseline_ttft_p50_ms.name, "ms", "median TTFT of back-to-back requests", {.history = true}},
     {coldstart_metric::baseline_ttft_mad_ms.name, "ms", "their spread (scaled MAD)"},
     {coldstart_metric::first_request_ttft_ms.name, "ms", "TTFT of the run's first model request"},
     {coldstart_metric::first_request_penalty_ms.name, "ms", "first request's TTFT minus the baseline median", {.history = true}},
     {coldstart_metric::penalty_ms.name, "ms", "median TTFT excess over the baseline after the cold gaps",
      {.layer = "cold start after idle", .per = "requests after idle", .history = true, .slo = "cold_start_penalty_ms", .column = "cold ms"}},
     {coldstart_metric::threshold_s.name, "s", "shortest idle gap after which TTFT jumped"},
     {coldstart_metric::threshold_low_s.name, "s", "longest shorter gap after which it did not"},
     {coldstart_metric::cold_gaps_count.name, "count", "idle gaps after which TTFT jumped"},
     {coldstart_metric::gaps_count.name, "count", "idle gaps measured"},
     {coldstart_metric::samples_count.name, "count", "requests that succeeded"}},
    {{&coldstart_metric::penalty_ms, "TTFT +{penalty_ms} after {threshold_s} idle (not after {threshold_low_s}); baseline {baseline_ttft_p50_ms}"},
     {nullptr, "no jump after {gaps_count} idle gaps; baseline TTFT {baseline_ttft_p50_ms}, first request {first_request_ttft_ms}"}},
    {coldstart_setting::idle_gaps, coldstart_setting::baseline_samples, coldstart_setting::prompt_tokens}};

class ColdstartCheck final : public Check {
 public:
  explicit ColdstartCheck(const Options& o)
      : gaps_(o.numbers(coldstart_setting::idle_gaps)),
        baseline_samples_(o.whole(coldstart_setting::baseline_samples)),
        prompt_tokens_(o.whole(coldstart_setting::prompt_tokens)) {}
  const CheckInfo& info() const override { return kColdstartInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps = {{"the run's first model request", 1, "target", prompt_tokens_, 1},
                               {"back to back, the warm baseline", baseline_samples_, "target", prompt_tokens_, 1}};
    std::vector<double> ladder;
    for (const double g : gaps_)
      if (g > 0) ladder.push_back(g);
    std::sort(ladder.begin(), ladder.end());
    if (ladder.empty()) return steps;
    steps.push_back({"idle " + format_number(ladder.back()) + " s (the longest gap first), then one request", 1, "target",
                     prompt_tokens_, 1});
    for (std::size_t i = 0; i + 1 < ladder.size(); ++i)
      steps.push_back({"only if that was cold: idle " + format_number(ladder[i]) + " s, then one request (not once one was cold)",
                       1, "target", prompt_tokens_, 1});
    steps.push_back({"only if the longest gap alone was cold: idle " + format_number(ladder.back()) + " s again", 1, "target",
                     prompt_tokens_, 1});
    return steps;
  }
  std::chrono::milliseconds planned_wait() const override {
    double total = 0, longest = 0;
    for (const double g : gaps_) {
      total += std::max(0.0, g);
      longest = std::max(longest, g);
    }
    return std::chrono::milliseconds(static_cast<long long>((total + longest) * 1000));
  }
  // Time to first token after each idle gap, each request a point, against the back-to-back median.
  std::vector<Chart> charts(const CheckResult& r) const override {
    ChartSeries gap{"TTFT after the gap", SeriesKind::Line, {}}, base{"back-to-back baseline", SeriesKind::Reference, {}};
    for (const auto& [s, label] : r.requests)
      if (label.is_object() && label.contains("gap_s") && label["gap_s"].is_number())
        if (const auto t = server_ttft_ms(s))
          gap.points.push_back({label["gap_s"].get<double>(), *t + s.loading_wait_ms.value_or(0), s.request_id});
    // Sent longest gap first; drawn in the order of the gaps.
    std::stable_sort(gap.points.begin(), gap.points.end(), [](const auto& a, const auto& b) { return a.x < b.x; });
    if (const auto b = r.metric(coldstart_metric::baseline_ttft_p50_ms); b && !gap.points.empty())
      for (const double x : {gap.points.front().x, gap.points.back().x}) base.points.push_back({x, *b, ""});
    return {{"ttft-vs-idle-gap", "Time to first token after an idle gap, against back-to-back requests.", {"idle", "s"},
             {"TTFT", "ms"}, {gap, base}}};
  }
  // A finding on any of its metrics, shown again when a gap went cold: a warm-up (the model has
  // been idle since this check, so the first request only wakes it), one back to back, and one
  // after the gap from which every longer one was cold; each with the words the run sent.
  std::vector<ReproRequest> repro(const CheckResult& r, const std::string& metric, const Models&) const override {
    const auto threshold = r.metric(coldstart_metric::threshold_s);
    if (metric.empty() || !threshold) return {};
    const RunTtft warm = run_ttft(r, [](const LabelledSample& s) {
      return s.label.is_object() && s.label.value("phase", "") == "baseline";
    });
    const RunTtft cold = run_ttft(r, [&](const LabelledSample& s) {
      return s.label.is_object() && s.label.contains("gap_s") && s.label["gap_s"].is_number() && std::abs(s.label["gap_s"].get<double>() - *threshold) < 1e-9;
    });
    if (!warm.last || !cold.last) return {};
    const int words = cold.last->sample.prompt_words > 0 ? cold.last->sample.prompt_words : prompt_tokens_;
    return {{"warm-up", false, words, 1, 0, 0},
            {"back to back (warm)", false, words, 1, 0, warm.median_ms},
            {"after " + format_number(*threshold) + " s idle", false, words, 1, *threshold, cold.median_ms}};
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kColdstartInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    api::ChatRequest req = api::synthetic_request(ctx.models().target, prompt_tokens_, 1);
    RequestLoop loop(ctx, out);
    // A model that answered 503 "loading" first was answered after the run waited it out (the
    // pacer): the time it waited is part of this request's time to its first token.
    auto one = [&](const nlohmann::json& label) -> std::optional<double> {
      auto s = loop.send(req, label);
      const auto t = s ? server_ttft_ms(*s) : std::nullopt;
      return t ? std::optional<double>(*t + s->loading_wait_ms.value_or(0)) : std::nullopt;
    };

    ctx.progress("coldstart: the run's first model request");
    const auto first = one({{"phase", "first"}});
    std::vector<double> base;
    for (int i = 0; i < baseline_samples_ && !loop.stopped(); ++i) {
      ctx.progress("coldstart: back-to-back baseline " + std::to_string(i + 1) + "/" + std::to_string(baseline_samples_));
      if (auto t = one({{"phase", "baseline"}})) base.push_back(*t);
    }
    if (loop.stopped()) return out;
    if (base.empty()) return out.fail(core::make_error(core::ErrorCode::StreamError, "no baseline request succeeded"));
    const double base_med = *stats::median(base);
    const double base_mad = stats::mad(base);
    const double margin = std::max({5 * base_mad, 0.2 * base_med, 25.0});
    out.set(coldstart_metric::baseline_ttft_p50_ms, base_med);
    out.set(coldstart_metric::baseline_ttft_mad_ms, base_mad);
    if (first) {
      out.set(coldstart_metric::first_request_ttft_ms, *first);
      out.set(coldstart_metric::first_request_penalty_ms, *first - base_med);
    }

    // One request after `gap` seconds of idle: its TTFT's excess over the baseline, or nothing.
    struct Gap {
      double gap_s = 0;
      double ttft_ms = 0;
      double excess = 0;
      bool cold = false;
      bool spike = false;
    };
    std::vector<Gap> seen;  // in the order measured
    auto after_idle = [&](double gap, const char* phase) -> bool {
      ctx.progress("coldstart: idle " + std::to_string(static_cast<int>(gap)) + " s before the next request");
      if (!ctx.idle_until(ctx.clock().now() + std::chrono::milliseconds(static_cast<long long>(gap * 1000)))) {
        out.details["stopped"] = "the check's deadline came before the " + std::to_string(gap) + " s gap ended";
        return false;
      }
      const auto t = one({{"phase", phase}, {"gap_s", gap}});
      if (loop.stopped()) return false;
      if (t) seen.push_back({gap, *t, *t - base_med, *t - base_med > margin, false});
      return true;
    };
    // A cold model is a state: once idle long enough, every longer gap finds it cold too, and a
    // shorter one warm where a longer one was. So the longest gap goes first: warm, it answers for
    // every shorter one, and the check has waited one gap instead of all of them. Cold, the
    // shorter gaps follow from the shortest up until one is cold: that one and the longest, two
    // cold gaps, show the state, and the gaps between them are not waited.
    std::vector<double> ladder;
    for (const double g : gaps_)
      if (g > 0) ladder.push_back(g);
    std::sort(ladder.begin(), ladder.end());
    std::vector<double> not_waited;
    std::string why_not;
    if (!ladder.empty() && after_idle(ladder.back(), "gap")) {
      // The longest gap's request can fail: then two shorter cold gaps show the state.
      const bool longest_measured = !seen.empty();
      const bool longest_warm = longest_measured && !seen.back().cold;
      const auto two_cold = [&] {
        return !seen.empty() && seen.back().cold &&
               std::count_if(seen.begin(), seen.end(), [](const Gap& g) { return g.cold; }) >= 2;
      };
      for (std::size_t i = 0; i + 1 < ladder.size(); ++i) {
        if (longest_warm || two_cold()) {
          not_waited.push_back(ladder[i]);
          continue;
        }
        if (!after_idle(ladder[i], "gap")) break;
      }
      why_not = longest_warm       ? "the longest gap was warm: a shorter one finds it warm too"
                : longest_measured ? "a shorter gap and the longest were both cold: a gap between them finds it cold too"
                                   : "two shorter gaps were cold (the longest gap's request failed): a longer one finds "
                                     "it cold too";
    }
    // Where only the longest gap was cold, one request is no state: it is measured again, and a
    // warm repeat makes the first a spike (a heavy tail), not a cold start.
    const auto only_longest_cold = [&] {
      int cold = 0;
      for (const auto& g : seen) cold += g.cold ? 1 : 0;
      return cold == 1 && seen.front().cold && seen.front().gap_s == ladder.back();
    };
    if (!seen.empty() && only_longest_cold() && !loop.stopped()) {
      const std::size_t before = seen.size();
      if (after_idle(ladder.back(), "gap_again") && seen.size() > before && !seen.back().cold) {
        seen.front().cold = false;
        seen.front().spike = true;
      }
    }
    // Read in the order of the gaps (a repeat after its first): the threshold is the shortest gap
    // from which every measured gap was cold.
    std::stable_sort(seen.begin(), seen.end(), [](const Gap& a, const Gap& b) { return a.gap_s < b.gap_s; });
    std::optional<std::size_t> from;
    for (std::size_t i = seen.size(); i-- > 0;) {
      if (!seen[i].cold) break;
      from = i;
    }
    nlohmann::json table = nlohmann::json::array();
    Table gaps{"coldstart: TTFT after idle gaps (baseline " + cell(base_med, "ms") + ", cold above +" + cell(margin, "ms") + ")",
               {"idle", "TTFT", "excess", ""}, {}, ""};
    for (const auto& g : seen) {
      table.push_back({{"gap_s", g.gap_s}, {"ttft_ms", g.ttft_ms}, {"excess_ms", g.excess}, {"cold", g.cold}});
      gaps.rows.push_back({format_number(g.gap_s) + " s", cell(g.ttft_ms, "ms"), cell(g.excess, "ms"),
                           g.cold ? "cold" : g.spike ? "spike" : ""});
    }
    if (!not_waited.empty()) {
      std::vector<std::string> skipped;
      for (const double g : not_waited) {
        out.details["not_waited_s"].push_back(g);
        skipped.push_back(format_number(g) + " s");
      }
      gaps.note = "not waited: " + core::join(skipped, ", ") + " (" + why_not + ")";
    }
    std::vector<double> excess_cold;
    std::optional<double> threshold, threshold_low;
    int measured = static_cast<int>(seen.size());
    const std::size_t warm = from.value_or(seen.size());  // the gaps before the cold ones
    if (warm > 0) threshold_low = seen[warm - 1].gap_s;
    if (from) {
      threshold = seen[*from].gap_s;
      for (std::size_t i = *from; i < seen.size(); ++i) excess_cold.push_back(seen[i].excess);
    }
    out.details["gaps"] = table;
    if (!gaps.rows.empty()) out.tables.push_back(std::move(gaps));
    out.details["margin_ms"] = margin;
    out.set(coldstart_metric::gaps_count, measured);
    out.set(coldstart_metric::cold_gaps_count, static_cast<double>(excess_cold.size()));
    out.set(coldstart_metric::samples_count, static_cast<double>(std::count_if(out.requests.begin(), out.requests.end(),
                                                               [](const LabelledSample& r) { return r.sample.ok; })));
    if (threshold) {
      out.set(coldstart_metric::threshold_s, *threshold);
      out.set(coldstart_metric::penalty_ms, *stats::median(excess_cold));
    }
    if (threshold_low) out.set(coldstart_metric::threshold_low_s, *threshold_low);
    return out;
  }

 private:
  std::vector<double> gaps_;
  int baseline_samples_;
  int prompt_tokens_;
};

}  // namespace

CheckEntry coldstart_entry() { return entry_of<ColdstartCheck>(kColdstartInfo); }

}  // namespace infdoctor::checks
