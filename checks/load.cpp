// checks/load.cpp. Measures the target model under a load ramp, as a team sizing a provider
// does: first a few requests alone, one after another (the reference: one request's service time
// with nobody else's), then each level of load.levels with that many users, each sending its next
// request as its last answer ends (a closed loop); or, with load.rates, requests arriving at random
// at that many a second whether or not earlier answers ended (an open loop; the gaps are drawn
// from an exponential distribution, so arrivals are Poisson, from load.seed). Every request is of
// one shape, or, with load.mix, of a set drawn by the sets' shares, its prompt size drawn in the
// set's range; the reference then sends each set alone and weighs their medians by share.
// Per level: TTFT, time per output token and end-to-end p50/p90/p99 (each from the request's own
// start, as its user waits), requests and output tokens per second over the level's span (its
// first request sent to its last answer ended), failures, and goodput: the share of the level's
// requests that succeeded within every limit of load.slo_* (none given: every success counts).
// From those:
//   capacity_count = the highest requests per second of any level x the reference's
//   end-to-end time (Little's law on the service alone): requests served at once, in effect. A
//   server with k slots serves k; one that batches serves as many as it batches.
//   wait_share_ratio = of what a request at the highest level took beyond one alone (total p50
//   less the service time), the share spent before its first token (TTFT p50 less the alone
//   requests'): waiting for a slot. The rest is slower generation beside the others, as an engine
//   that batches slows each token; only the share waited is a queue.
//   knee_level_count = the first level that no higher level beats by 20 % in requests per second
//   (the concurrency check's bar): load past it queues instead of being served.
//   arrival_ks_ratio = with rates, the largest Kolmogorov-Smirnov distance between a level's sent
//   gaps and the exponential distribution of its rate: below 1.36 / sqrt(gaps) the arrivals pass
//   as Poisson at 5 %.
// Cannot tell: our load from other tenants'; a rate limit from a queue, but by the 429s counted.
// Emits: load.{capacity_count,wait_share_ratio,knee_level_count,peak_requests_per_s,reference_total_p50_ms,
// ttft_p99_at_max_ms,total_p99_at_max_ms,throughput_at_max_tokens_per_s,goodput_at_max_ratio,
// goodput_level_count,arrival_ks_ratio,max_level_count,failures_count,rate_limited_count}.
#include <algorithm>
#include <cmath>
#include <map>

#include "checks/check.h"
#include "checks/load.h"
#include "checks/registry.h"
#include "core/digest.h"
#include "core/strings.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kLoadInfo{
    "load",
    "Load ramp",
    "Rising load on the target model, as users or as arrivals a second: latency percentiles, throughput and "
    "goodput at each level, the knee, and how many requests it serves at once.",
    {{load_metric::reference_total_p50_ms.name, "ms", "median end-to-end time of a request sent alone: the service time"},
     {load_metric::capacity_count.name, "count",
      "the highest requests per second of any level times the service time: requests served at once, in effect"},
     {load_metric::wait_share_ratio.name, "ratio",
      "of the time a request at the highest level took beyond one alone, the share before its first token: the "
      "queue's share (the rest is slower generation beside the others)"},
     {load_metric::peak_requests_per_s.name, "requests/s", "the highest requests per second any level completed"},
     {load_metric::knee_level_count.name, "count",
      "the first level no higher level beats by 20 % in requests per second (absent: still growing at the highest)",
      {.layer = "load knee (users or requests/s)", .per = "under load", .history = true}},
     {load_metric::max_level_count.name, "count", "the highest level measured (users, or requests per second)"},
     {load_metric::ttft_p99_at_max_ms.name, "ms", "99th percentile TTFT at the highest level"},
     {load_metric::total_p99_at_max_ms.name, "ms", "99th percentile end-to-end time at the highest level"},
     {load_metric::throughput_at_max_tokens_per_s.name, "tokens/s", "output tokens per second at the highest level"},
     {load_metric::goodput_at_max_ratio.name, "ratio",
      "share of the highest level's requests that succeeded within the load.slo_* limits"},
     {load_metric::goodput_level_count.name, "count",
      "the highest level at which 90 % of requests or more met the limits (absent: none did)"},
     {load_metric::slo_limits_count.name, "count", "limits a request had to meet to count in the goodput (load.slo_*, which --slo sets)"},
     {load_metric::arrival_ks_ratio.name, "ratio",
      "with rates: the largest Kolmogorov-Smirnov distance of a level's sent gaps from its exponential distribution"},
     {load_metric::failures_count.name, "count", "failed requests"},
     {load_metric::rate_limited_count.name, "count", "429 answers"}},
    {{&load_metric::knee_level_count, "about {capacity_count|request} served at once, {peak_requests_per_s} requests/s at most; "
                          "past {knee_level_count} more load queues; goodput {goodput_at_max_ratio%} at "
                          "{max_level_count}"},
     {nullptr, "about {capacity_count|request} served at once, {peak_requests_per_s} requests/s at most, still growing "
               "at {max_level_count}; goodput {goodput_at_max_ratio%} there"}},
    {load_setting::levels, load_setting::rates, load_setting::requests, load_setting::prompt_tokens,
     load_setting::max_tokens, load_setting::mix, load_setting::slo_ttft_ms, load_setting::slo_tpot_ms, load_setting::slo_total_ms,
     load_setting::seed},
    nullptr,
    /*opt_in=*/true};

constexpr int kLoadReference = 3;  // requests alone, one after another

// One set of a mix: its share of the requests, its prompt (a size, or a range drawn from evenly)
// and its max_tokens.
struct RequestSet {
  std::string name;
  double share = 1;
  int prompt_lo = 0, prompt_hi = 0, output = 0;
  double mean_prompt() const { return (prompt_lo + prompt_hi) / 2.0; }
};

// "chat:0.7:100-500:128,docs:0.3:4000-16000:512"; a problem in `o` for a set that does not read.
std::vector<RequestSet> parse_mix(const std::string& text, const Options& o) {
  std::vector<RequestSet> out;
  const auto number = [](const std::string& t) -> std::optional<double> {
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
    return v;
  };
  const auto whole = [&](const std::string& t, int lo, int hi) -> std::optional<int> {
    const auto v = number(t);
    if (!v || *v != std::floor(*v) || *v < lo || *v > hi) return std::nullopt;
    return static_cast<int>(*v);
  };
  for (const auto& item : core::split(text, ',')) {
    const std::vector<std::string> f = core::split(item, ':');
    const auto bad = [&](const std::string& why) {
      o.problem(std::string(load_setting::mix.key) + ": '" + item + "': " + why);
    };
    if (f.size() != 4 || f[0].empty()) {
      bad("a set is NAME:SHARE:PROMPT:OUTPUT");
      continue;
    }
    const auto share = number(f[1]);
    const auto dash = f[2].find('-');
    const auto lo = whole(f[2].substr(0, dash), 1, 1000000);
    const auto hi = dash == std::string::npos ? lo : whole(f[2].substr(dash + 1), 1, 1000000);
    const auto output = whole(f[3], 1, 100000);
    if (!share || *share <= 0) bad("the share is a number above 0");
    else if (!lo || !hi || *hi < *lo) bad("the prompt is a number of tokens, or LOW-HIGH");
    else if (!output) bad("the output is a number of tokens in [1, 100000]");
    else out.push_back({f[0], *share, *lo, *hi, *output});
  }
  double total = 0;
  for (const auto& s : out) total += s.share;
  for (auto& s : out) s.share /= total;  // shares in any unit: 7 and 3 are 70 % and 30 %
  return out;
}

struct LoadLevel {
  double level = 0;  // users, or requests per second
  int sent = 0, ok = 0, failures = 0, rate_limited = 0, met = 0;
  std::vector<double> ttft, tpot, total;
  double tokens = 0, span_ms = 0;
  std::optional<double> ks;  // open loop: the sent gaps against the exponential
  struct Set {  // a mix's set at this level
    int sent = 0, met = 0;
    std::vector<double> ttft, total;
  };
  std::map<std::string, Set> sets;
  double requests_per_s() const { return span_ms > 0 ? ok / (span_ms / 1000) : 0; }
  double goodput() const { return sent > 0 ? static_cast<double>(met) / sent : 0; }
};

// The Kolmogorov-Smirnov distance between `gaps` (ms) and the exponential distribution of mean
// `mean_ms`: the largest gap between their cumulative distributions.
double load_ks_exponential(std::vector<double> gaps, double mean_ms) {
  std::sort(gaps.begin(), gaps.end());
  const double n = static_cast<double>(gaps.size());
  double d = 0;
  for (std::size_t i = 0; i < gaps.size(); ++i) {
    const double f = 1 - std::exp(-gaps[i] / mean_ms);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  return d;
}

class LoadCheck final : public Check {
 public:
  explicit LoadCheck(const Options& o) : LoadCheck(o, o.numbers(load_setting::rates)) {}
  // Rates given make an open loop at those rates; none, a closed loop at load.levels.
  LoadCheck(const Options& o, std::vector<double> rates)
      : open_(!rates.empty()),
        levels_(open_ ? std::move(rates) : o.numbers(load_setting::levels)),
        requests_(o.whole(load_setting::requests)),
        prompt_tokens_(o.whole(load_setting::prompt_tokens)),
        max_tokens_(o.whole(load_setting::max_tokens)),
        slo_ttft_ms_(o.number(load_setting::slo_ttft_ms)),
        slo_tpot_ms_(o.number(load_setting::slo_tpot_ms)),
        slo_total_ms_(o.number(load_setting::slo_total_ms)),
        seed_(static_cast<std::uint64_t>(o.whole(load_setting::seed))),
        mix_(parse_mix(o.text(load_setting::mix), o)) {
    if (mix_.empty()) mix_.push_back({"", 1, prompt_tokens_, prompt_tokens_, max_tokens_});
  }
  const CheckInfo& info() const override { return kLoadInfo; }
  std::vector<Step> plan() const override {
    // A mix's steps at its mean prompt and output, each set's weighed by its share.
    double prompt = 0, output = 0;
    for (const auto& set : mix_) {
      prompt += set.share * set.mean_prompt();
      output += set.share * set.output;
    }
    const auto p = std::llround(prompt), o = std::llround(output);
    const int alone = kLoadReference * static_cast<int>(mix_.size());
    std::vector<Step> steps = {{std::to_string(alone) + " requests alone, one after another", alone, "target", p, o}};
    for (const double l : levels_)
      steps.push_back({std::to_string(requests_) + " requests " +
                           (open_ ? "arriving at " + format_number(l) + " a second" : "from " + format_number(l) + " users"),
                       requests_, "target", p, o});
    return steps;
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kLoadInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    const std::string& model = ctx.models().target;

    // The service time: each set's requests alone, one after another, at the set's mean prompt;
    // a mix's is the sets' medians weighed by their shares.
    ctx.progress("load: " + std::to_string(kLoadReference * mix_.size()) + " requests alone");
    std::vector<api::ChatRequest> alone;
    for (const auto& set : mix_)
      for (int k = 0; k < kLoadReference; ++k) {
        alone.push_back(api::synthetic_request(model, static_cast<int>(std::lround(set.mean_prompt())), set.output));
        alone.back().lane = 0;
      }
    std::vector<LoadLevel> done;
    int failures = 0, rate_limited = 0;
    auto r = ctx.chat(alone);
    if (!r.ok()) return out.fail(r.error());
    double service = 0, first_alone = 0;
    for (std::size_t si = 0; si < mix_.size(); ++si) {
      std::vector<double> totals, firsts;
      for (int k = 0; k < kLoadReference; ++k) {
        const auto& s = r.value()[si * kLoadReference + static_cast<std::size_t>(k)];
        nlohmann::json label = {{"phase", "reference"}};
        if (!mix_[si].name.empty()) label["set"] = mix_[si].name;
        out.requests.push_back({s, label});
        if (s.ok && s.total_ms) totals.push_back(*s.total_ms);
        if (s.ok && s.ttft_ms) firsts.push_back(*s.ttft_ms);
        failures += api::is_failure(s);
      }
      const auto p50 = stats::summarize(totals).p50;
      if (!p50)
        return out.fail(core::make_error(core::ErrorCode::StreamError,
                                         "no request alone succeeded" +
                                             (mix_[si].name.empty() ? std::string() : " of set " + mix_[si].name)));
      service += mix_[si].share * *p50;
      first_alone += mix_[si].share * stats::summarize(firsts).p50.value_or(0);
    }
    out.set(load_metric::reference_total_p50_ms, service);

    for (std::size_t li = 0; li < levels_.size(); ++li) {
      const double lv = levels_[li];
      // A level the check's deadline cannot hold is not sent, as the sweep's sizes: even served as
      // fast as its users or its rate allow (the level before's requests a second, grown with the
      // users; the service time alone at the first), it would be cut short.
      const double fastest_per_s = open_ ? lv
                                   : done.empty() ? lv * 1000.0 / service
                                                  : done.back().requests_per_s() * lv / done.back().level;
      const double left_ms = core::to_ms(core::elapsed_us(ctx.clock().now(), ctx.deadline()));
      if (fastest_per_s > 0 && requests_ * 1000.0 / fastest_per_s > left_ms) {
        out.details["not_sent"] = std::string(open_ ? "rates " : "levels ") + format_number(lv) +
                                  " and above: at least " + format_number(requests_ / fastest_per_s) + " s each, " +
                                  format_number(std::max(0.0, left_ms) / 1000) +
                                  " s left before the check's deadline (--check-timeout, or fewer load.requests)";
        break;
      }
      ctx.progress("load: " + std::to_string(requests_) + " requests " +
                   (open_ ? "at " + format_number(lv) + " a second" : "from " + format_number(lv) + " users"));
      std::vector<api::ChatRequest> batch;
      std::vector<std::size_t> sets;
      for (std::size_t i = 0; i < static_cast<std::size_t>(requests_); ++i) {
        sets.push_back(draw_set(li, i));
        const RequestSet& set = mix_[sets.back()];
        const double u = uniform(li, i, 2);
        const int prompt = set.prompt_lo + static_cast<int>(u * (set.prompt_hi - set.prompt_lo + 1));
        batch.push_back(api::synthetic_request(model, std::min(prompt, set.prompt_hi), set.output));
      }
      double at_ms = 0;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (open_) {
          // Exponential gaps of mean 1/rate: a uniform draw from the seed, the level and the
          // request, through the inverse of the distribution.
          if (i > 0) at_ms += -std::log(1 - uniform(li, i, 0)) * 1000.0 / lv;
          batch[i].start_after = std::chrono::microseconds(static_cast<long long>(at_ms * 1000));
        } else {
          batch[i].lane = static_cast<int>(i % static_cast<std::size_t>(lv));
        }
      }
      auto got = ctx.chat(batch);
      if (!got.ok()) {
        out.fail(got.error());
        break;
      }
      LoadLevel level = measure(lv, got.value(), sets, out);
      failures += level.failures;
      rate_limited += level.rate_limited;
      const bool most_failed = level.failures * 2 > level.sent;
      done.push_back(std::move(level));
      if (most_failed) {
        out.fail(core::make_error(core::ErrorCode::StreamError, "stopped at level " + format_number(lv) + ": " +
                                                                    std::to_string(done.back().failures) + " of " +
                                                                    std::to_string(done.back().sent) + " failed"));
        break;
      }
    }
    out.set(load_metric::failures_count, failures);
    out.set(load_metric::rate_limited_count, rate_limited);
    if (done.empty()) return out;
    summarize(done, service, first_alone, out);
    return out;
  }

 private:
  // A draw in [0, 1) from the seed, the level, the request and what it is drawn for (`what`: 0 the
  // gap before it, 1 its set, 2 its prompt).
  double uniform(std::size_t level, std::size_t request, std::uint64_t what) const {
    const std::uint64_t z =
        core::mix64(seed_ + what * 0x632be59bd9b4e019ull + core::kGoldenGamma * (level * 1000003 + request + 1));
    return static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  // The set of request `i` of level `li`, by the sets' shares.
  std::size_t draw_set(std::size_t li, std::size_t i) const {
    double u = uniform(li, i, 1);
    for (std::size_t k = 0; k + 1 < mix_.size(); ++k) {
      if (u < mix_[k].share) return k;
      u -= mix_[k].share;
    }
    return mix_.size() - 1;
  }

  // A level's requests as its users met them; `sets[i]` is request i's set of the mix.
  LoadLevel measure(double lv, const std::vector<api::RequestSample>& samples, const std::vector<std::size_t>& sets,
                    CheckResult& out) const {
    LoadLevel l;
    l.level = lv;
    double first = 0, last = 0;
    std::vector<double> sent_at;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      const auto& s = samples[i];
      const RequestSet& set = mix_[sets[i]];
      nlohmann::json label = {{"phase", "level"}, {open_ ? "rate" : "users", lv}};
      if (!set.name.empty()) label["set"] = set.name;
      out.requests.push_back({s, label});
      LoadLevel::Set& per = l.sets[set.name];
      ++per.sent;
      ++l.sent;
      sent_at.push_back(s.sent_after_ms);
      if (!s.ok) {
        l.failures += api::is_failure(s);
        l.rate_limited += s.http_status == 429;
        continue;
      }
      ++l.ok;
      const double total = s.total_ms.value_or(0);
      if (s.ttft_ms) l.ttft.push_back(*s.ttft_ms);
      if (s.tpot_ms) l.tpot.push_back(*s.tpot_ms);
      l.total.push_back(total);
      l.tokens += s.output_tokens ? static_cast<double>(*s.output_tokens) : static_cast<double>(s.content_events);
      first = l.ok == 1 ? s.sent_after_ms : std::min(first, s.sent_after_ms);
      last = std::max(last, s.sent_after_ms + total);
      const bool met = (slo_ttft_ms_ <= 0 || (s.ttft_ms && *s.ttft_ms <= slo_ttft_ms_)) &&
                       (slo_tpot_ms_ <= 0 || !s.tpot_ms || *s.tpot_ms <= slo_tpot_ms_) &&
                       (slo_total_ms_ <= 0 || total <= slo_total_ms_);
      l.met += met;
      per.met += met;
      if (s.ttft_ms) per.ttft.push_back(*s.ttft_ms);
      per.total.push_back(total);
    }
    l.span_ms = last - first;
    if (open_ && sent_at.size() >= 2) {
      std::sort(sent_at.begin(), sent_at.end());
      std::vector<double> gaps;
      for (std::size_t i = 1; i < sent_at.size(); ++i) gaps.push_back(sent_at[i] - sent_at[i - 1]);
      l.ks = load_ks_exponential(gaps, 1000.0 / lv);
    }
    return l;
  }

  void summarize(const std::vector<LoadLevel>& done, double service_ms, double first_alone_ms, CheckResult& out) const {
    Table table{open_ ? "load: per rate" : "load: per level",
                {open_ ? "requests/s asked" : "users", "sent", "failed", "TTFT p50", "TTFT p99", "TPOT p50",
                 "total p50", "total p99", "requests/s", "tokens/s", "goodput"},
                {},
                "goodput: the share of requests that succeeded within the load.slo_* limits"};
    nlohmann::json rows = nlohmann::json::array();
    double peak = 0;
    std::optional<double> goodput_level;
    for (const auto& l : done) {
      const auto t = stats::summarize(l.ttft), p = stats::summarize(l.tpot), e = stats::summarize(l.total);
      const double tokens_per_s = l.span_ms > 0 ? l.tokens / (l.span_ms / 1000) : 0;
      peak = std::max(peak, l.requests_per_s());
      if (l.goodput() >= 0.9) goodput_level = l.level;
      table.rows.push_back({format_number(l.level), std::to_string(l.sent), std::to_string(l.failures),
                            cell(t.p50, "ms"), cell(t.p99, "ms"), cell(p.p50, "ms"), cell(e.p50, "ms"),
                            cell(e.p99, "ms"), cell(l.requests_per_s()), cell(tokens_per_s),
                            format_number(std::round(l.goodput() * 1000) / 10) + " %"});
      nlohmann::json row = {{open_ ? "rate_per_s" : "users", l.level},
                            {"sent_count", l.sent},
                            {"failures_count", l.failures},
                            {"rate_limited_count", l.rate_limited},
                            {"span_ms", l.span_ms},
                            {"requests_per_s", l.requests_per_s()},
                            {"throughput_tokens_per_s", tokens_per_s},
                            {"goodput_ratio", l.goodput()}};
      for (const auto& [name, s] : {std::pair{"ttft", t}, std::pair{"tpot", p}, std::pair{"total", e}})
        for (const auto& [q, v] : {std::pair{"p50", s.p50}, std::pair{"p90", s.p90}, std::pair{"p99", s.p99}})
          if (v) row[std::string(name) + "_" + q + "_ms"] = *v;
      if (mix_.size() > 1)
        for (const auto& [name, per] : l.sets) {
          nlohmann::json set = {{"sent_count", per.sent}, {"goodput_ratio", per.sent ? double(per.met) / per.sent : 0.0}};
          if (auto v = stats::summarize(per.ttft).p50) set["ttft_p50_ms"] = *v;
          if (auto v = stats::summarize(per.total).p50) set["total_p50_ms"] = *v;
          row["sets"][name] = set;
        }
      if (l.ks) {
        row["arrival_ks_ratio"] = *l.ks;
        row["arrival_ks_pass_below"] = 1.36 / std::sqrt(static_cast<double>(l.sent - 1));
      }
      rows.push_back(row);
    }
    out.details["levels"] = rows;
    out.details["slo"] = {{"ttft_ms", slo_ttft_ms_}, {"tpot_ms", slo_tpot_ms_}, {"total_ms", slo_total_ms_}};
    out.tables.push_back(std::move(table));

    const LoadLevel& last = done.back();
    out.set(load_metric::max_level_count, last.level);
    out.set(load_metric::peak_requests_per_s, peak);
    out.set(load_metric::capacity_count, peak * service_ms / 1000);
    const auto last_first = stats::summarize(last.ttft).p50, last_total = stats::summarize(last.total).p50;
    if (last_first && last_total && *last_total > service_ms)
      out.set(load_metric::wait_share_ratio,
              std::clamp((*last_first - first_alone_ms) / (*last_total - service_ms), 0.0, 1.0));
    if (auto v = stats::summarize(last.ttft).p99) out.set(load_metric::ttft_p99_at_max_ms, *v);
    if (auto v = stats::summarize(last.total).p99) out.set(load_metric::total_p99_at_max_ms, *v);
    if (last.span_ms > 0) out.set(load_metric::throughput_at_max_tokens_per_s, last.tokens / (last.span_ms / 1000));
    out.set(load_metric::goodput_at_max_ratio, last.goodput());
    out.set(load_metric::slo_limits_count, (slo_ttft_ms_ > 0) + (slo_tpot_ms_ > 0) + (slo_total_ms_ > 0));
    if (goodput_level) out.set(load_metric::goodput_level_count, *goodput_level);
    double ks = 0;
    for (const auto& l : done)
      if (l.ks) ks = std::max(ks, *l.ks);
    if (open_) out.set(load_metric::arrival_ks_ratio, ks);
    // The knee: where requests per second stopped growing, the first level no higher one beats
    // by 20 %; none while it grows at the highest.
    for (std::size_t i = 0; i + 1 < done.size(); ++i) {
      const bool grows = std::any_of(done.begin() + static_cast<std::ptrdiff_t>(i) + 1, done.end(),
                                     [&](const LoadLevel& l) { return l.requests_per_s() >= 1.2 * done[i].requests_per_s(); });
      if (!grows) {
        out.set(load_metric::knee_level_count, done[i].level);
        break;
      }
    }
  }

  bool open_;
  std::vector<double> levels_;
  int requests_, prompt_tokens_, max_tokens_;
  double slo_ttft_ms_, slo_tpot_ms_, slo_total_ms_;
  std::uint64_t seed_;
  std::vector<RequestSet> mix_;  // one set without a name when no mix is given
};

}  // namespace

CheckEntry load_entry() { return entry_of<LoadCheck>(kLoadInfo); }

}  // namespace infdoctor::checks
