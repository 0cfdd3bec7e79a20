// checks/cache.cpp. Measures the provider's prompt cache (OpenAI from 1,024 tokens, Anthropic's
// cache_control, vLLM's and SGLang's block caches, llama.cpp's cache_prompt) on the target model:
// prompts of the suffix's length alone (what a prompt costs without the prefix: the rules price a
// cache that never hits against it, so the check needs no other); prompts of fresh prefixes as
// long (misses, the control); then a prompt whose first
// cache.prefix_tokens tokens are shared (unique to the run, so no earlier run or other client
// filled the cache), sent once to fill the cache and again back to back; then again after rising
// idle gaps (cache.idle_gaps), each counted from the shared prefix's last request.
// A request hit the cache when the provider's usage says so (cached_tokens,
// cache_read_input_tokens) for half the prefix or more; where no answer reports cached tokens,
// when its TTFT is below the misses' median by more than max(3 MAD, 10 % of that median).
// Each request asks for one token: the time is prefill (the cached part skipped), not generation;
// TTFT is taken without the request's own connection setup.
// How long the cache keeps a prefix is reported only when every back-to-back repeat hit.
// The idle before a gap's request is counted from the end of the last request of the shared
// prefix, so a miss sent in between does not shorten it.
// Cannot tell: a cache that holds a prefix only for some replicas (a hit depends on the replica
// the balancer picks: a hit ratio between 0 and 1), eviction by size from eviction by time.
// Emits: cache.{prompt_tokens_count,reported_ratio,hit_ratio,cached_tokens_p50_count,
// short_ttft_p50_ms,miss_ttft_p50_ms,hit_ttft_p50_ms,saves_ms,held_s,gone_s,gaps_count,samples_count,failures_count}.
#include <algorithm>
#include <cmath>

#include "checks/cache.h"
#include "checks/check.h"
#include "checks/registry.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kCacheInfo{
    "cache",
    "Prompt cache",
    "A long shared prefix sent again back to back and after idle gaps: whether the provider's prompt cache serves it, "
    "what a hit saves, and after how long idle it is gone.",
    {{cache_metric::prompt_tokens_count.name, "count", "prompt tokens of each request, as the server counted them"},
     {cache_metric::reported_ratio.name, "ratio",
      "share of answers whose usage said how many prompt tokens were cached (0: the provider does not say, and hits "
      "are read from the time to first token)"},
     {cache_metric::hit_ratio.name, "ratio", "share of the back-to-back requests of the shared prefix served from the cache"},
     {cache_metric::cached_tokens_p50_count.name, "count", "median cached prompt tokens the back-to-back requests reported"},
     {cache_metric::short_ttft_p50_ms.name, "ms", "median TTFT of prompts of the suffix's length alone: a prompt without the prefix"},
     {cache_metric::miss_ttft_p50_ms.name, "ms", "median TTFT of the requests of a fresh prefix (misses)"},
     {cache_metric::hit_ttft_p50_ms.name, "ms", "median TTFT of the back-to-back requests that hit"},
     {cache_metric::saves_ms.name, "ms", "what a hit saves: the misses' median TTFT minus the hits'"},
     {cache_metric::held_s.name, "s", "longest idle after which the shared prefix still hit"},
     {cache_metric::gone_s.name, "s", "shortest idle after which it missed: the cache had let it go"},
     {cache_metric::gaps_count.name, "count", "idle gaps measured"},
     {cache_metric::samples_count.name, "count", "requests that succeeded"},
     {cache_metric::failures_count.name, "count", "failed requests"}},
    {{&cache_metric::gone_s, "a hit saves {saves_ms} ({hit_ratio%} of repeats hit, {cached_tokens_p50_count|token} cached); gone "
                "after {gone_s} idle, held after {held_s}"},
     {&cache_metric::saves_ms, "a hit saves {saves_ms} on {prompt_tokens_count|prompt token} ({hit_ratio%} of repeats hit); held "
                  "after {held_s} idle"},
     {nullptr, "the shared prefix was not served from the cache: TTFT {miss_ttft_p50_ms} on a fresh prefix, "
               "{prompt_tokens_count|prompt token}, {hit_ratio%} of repeats hit"}},
    {cache_setting::prefix_tokens, cache_setting::suffix_tokens, cache_setting::repeats, cache_setting::idle_gaps},
    nullptr,
    /*opt_in=*/true};

constexpr std::uint64_t kShared = 1;  // the prefix key of the shared prefix; fresh ones count from 2

// A request the check sent and its answer, with its time to first token.
struct Sent {
  std::string phase;  // fresh, fill, repeat, gap
  double idle_s = 0;  // a gap's: since the shared prefix's last request
  double ttft_ms = 0;
  api::RequestSample sample;
};

class CacheCheck final : public Check {
 public:
  explicit CacheCheck(const Options& o)
      : prefix_tokens_(o.whole(cache_setting::prefix_tokens)),
        suffix_tokens_(o.whole(cache_setting::suffix_tokens)),
        repeats_(o.whole(cache_setting::repeats)),
        gaps_(o.numbers(cache_setting::idle_gaps)) {}
  const CheckInfo& info() const override { return kCacheInfo; }
  std::vector<Step> plan() const override {
    const long long prompt = prefix_tokens_ + suffix_tokens_;
    std::vector<Step> steps = {
        {"the suffix alone, " + std::to_string(suffix_tokens_) + " tokens: a prompt without the prefix", repeats_, "target",
         suffix_tokens_, 1},
        {"a fresh prefix of " + std::to_string(prefix_tokens_) + " tokens each: the misses", repeats_, "target", prompt, 1},
        {"the shared prefix, once: the cache fills", 1, "target", prompt, 1},
        {"the shared prefix again, back to back", repeats_, "target", prompt, 1}};
    for (const double g : gaps_)
      steps.push_back({"idle " + format_number(g) + " s, then the shared prefix again", 1, "target", prompt, 1});
    return steps;
  }
  std::chrono::milliseconds planned_wait() const override {
    double total = 0;
    for (const double g : gaps_) total += g;
    return std::chrono::milliseconds(static_cast<long long>(total * 1000));
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kCacheInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    api::ChatRequest req = api::synthetic_request(ctx.models().target, prefix_tokens_ + suffix_tokens_, 1);
    // Hits and misses are held to each other: every prompt keeps the words it is written with.
    req.prompt_tokens_wanted = 0;
    req.shared_words = prefix_tokens_;
    RequestLoop loop(ctx, out);
    std::vector<Sent> sent;
    core::SteadyTime shared_last = ctx.clock().now();
    std::uint64_t fresh = kShared;
    auto one = [&](std::uint64_t key, const std::string& phase, double idle_s) {
      req.prefix_key = key;
      nlohmann::json label = {{"phase", phase}};
      if (phase == "gap") label["idle_s"] = idle_s;
      auto s = loop.send(req, label);
      if (key == kShared) shared_last = ctx.clock().now();
      // Without the request's own connection setup: a kept-alive connection the server closed
      // during a gap, or the first request's handshakes, are no part of the prefill.
      if (const auto t = s && s->ok ? server_ttft_ms(*s) : std::nullopt) sent.push_back({phase, idle_s, *t, *s});
    };

    // A prompt without the prefix, the misses, then the shared prefix: nothing comes between the
    // shared prefix's requests but their own time (back to back means that), and each idle gap is
    // counted from the last of them.
    std::vector<double> short_ttft;
    for (int i = 0; i < repeats_ && !loop.stopped(); ++i) {
      ctx.progress("cache: the suffix alone " + std::to_string(i + 1) + "/" + std::to_string(repeats_));
      api::ChatRequest alone = api::synthetic_request(ctx.models().target, suffix_tokens_, 1);
      alone.prompt_tokens_wanted = 0;
      auto s = loop.send(alone, {{"phase", "short"}});
      if (const auto t = s && s->ok ? server_ttft_ms(*s) : std::nullopt) short_ttft.push_back(*t);
    }
    if (const auto v = stats::median(short_ttft)) out.set(cache_metric::short_ttft_p50_ms, *v);
    for (int i = 0; i < repeats_ && !loop.stopped(); ++i) {
      ctx.progress("cache: a fresh prefix " + std::to_string(i + 1) + "/" + std::to_string(repeats_));
      one(++fresh, "fresh", 0);
    }
    ctx.progress("cache: the shared prefix, once");
    one(kShared, "fill", 0);
    for (int i = 0; i < repeats_ && !loop.stopped(); ++i) {
      ctx.progress("cache: the shared prefix back to back " + std::to_string(i + 1) + "/" + std::to_string(repeats_));
      one(kShared, "repeat", 0);
    }
    for (const double gap : gaps_) {
      if (loop.stopped()) break;
      ctx.progress("cache: idle " + format_number(gap) + " s before the shared prefix again");
      if (!ctx.idle_until(shared_last + std::chrono::milliseconds(static_cast<long long>(gap * 1000)))) {
        out.details["stopped"] = "the check's deadline came before the " + format_number(gap) + " s gap ended";
        break;
      }
      one(kShared, "gap", core::to_ms(core::elapsed_us(shared_last, ctx.clock().now())) / 1000);
    }
    out.set(cache_metric::failures_count, loop.failures());
    out.set(cache_metric::samples_count, static_cast<double>(sent.size() + short_ttft.size()));
    if (sent.empty()) return out;
    summarize(sent, out);
    return out;
  }

 private:
  void summarize(const std::vector<Sent>& sent, CheckResult& out) const {
    std::vector<double> prompt, miss_ttft;
    int reported = 0;
    for (const auto& s : sent) {
      if (s.sample.prompt_tokens) prompt.push_back(static_cast<double>(*s.sample.prompt_tokens));
      if (s.sample.cached_tokens) ++reported;
      if (s.phase == "fresh") miss_ttft.push_back(s.ttft_ms);
    }
    const auto prompt_p50 = stats::median(prompt);
    if (prompt_p50) out.set(cache_metric::prompt_tokens_count, *prompt_p50);
    out.set(cache_metric::reported_ratio, static_cast<double>(reported) / static_cast<double>(sent.size()));
    const auto miss_p50 = stats::median(miss_ttft);
    if (miss_p50) out.set(cache_metric::miss_ttft_p50_ms, *miss_p50);
    // A hit by the provider's word when it gives one, else by the time to first token.
    const double prefix_share = static_cast<double>(prefix_tokens_) / (prefix_tokens_ + suffix_tokens_);
    const double margin = miss_p50 ? std::max(3 * stats::mad(miss_ttft), 0.1 * *miss_p50) : 0;
    auto hit = [&](const Sent& s) -> std::optional<bool> {
      if (reported > 0) {
        if (!s.sample.cached_tokens || !s.sample.prompt_tokens) return std::nullopt;
        return static_cast<double>(*s.sample.cached_tokens) >=
               0.5 * prefix_share * static_cast<double>(*s.sample.prompt_tokens);
      }
      if (!miss_p50 || miss_ttft.size() < 2) return std::nullopt;
      return s.ttft_ms < *miss_p50 - margin;
    };
    std::vector<double> hit_ttft, cached;
    int repeats = 0, hits = 0;
    std::optional<double> held, gone;
    Table table{"cache: the shared prefix and fresh ones (" + cell(prefix_share * 100, "%") + " of each prompt shared)",
                {"request", "idle", "TTFT", "prompt tokens", "cached", "hit"}, {}, ""};
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& s : sent) {
      const auto h = hit(s);
      if (s.phase == "repeat" && h) {
        ++repeats;
        if (*h) {
          ++hits;
          hit_ttft.push_back(s.ttft_ms);
        }
        if (s.sample.cached_tokens) cached.push_back(static_cast<double>(*s.sample.cached_tokens));
      }
      if (s.phase == "gap" && h) {
        if (*h) held = std::max(held.value_or(0), s.idle_s);
        else gone = std::min(gone.value_or(s.idle_s), s.idle_s);
      }
      const std::string verdict = !h ? "?" : (*h ? "hit" : "miss");
      table.rows.push_back({s.phase, s.phase == "gap" ? format_number(std::round(s.idle_s * 10) / 10) + " s" : "",
                            cell(s.ttft_ms, "ms"),
                            s.sample.prompt_tokens ? std::to_string(*s.sample.prompt_tokens) : "-",
                            s.sample.cached_tokens ? std::to_string(*s.sample.cached_tokens) : "-", verdict});
      rows.push_back({{"phase", s.phase}, {"idle_s", s.idle_s}, {"ttft_ms", s.ttft_ms}, {"hit", verdict}});
    }
    out.details["requests"] = rows;
    out.details["hit_by"] = reported > 0 ? "the provider's usage (cached tokens)" : "the time to first token";
    out.details["miss_margin_ms"] = margin;
    out.tables.push_back(std::move(table));
    if (repeats > 0) out.set(cache_metric::hit_ratio, static_cast<double>(hits) / repeats);
    if (const auto c = stats::median(cached)) out.set(cache_metric::cached_tokens_p50_count, *c);
    if (const auto h = stats::median(hit_ttft)) {
      out.set(cache_metric::hit_ttft_p50_ms, *h);
      if (miss_p50) out.set(cache_metric::saves_ms, *miss_p50 - *h);
    }
    out.set(cache_metric::gaps_count, static_cast<double>(std::count_if(sent.begin(), sent.end(), [](const Sent& s) {
              return s.phase == "gap";
            })));
    // How long it holds means something only for a cache that served every back-to-back repeat:
    // where some missed, a gap's miss may be another replica's or the first tokens' noise, not an
    // eviction.
    if (repeats > 0 && hits == repeats) {
      if (held) out.set(cache_metric::held_s, *held);
      if (gone) out.set(cache_metric::gone_s, *gone);
    }
  }

  int prefix_tokens_;
  int suffix_tokens_;
  int repeats_;
  std::vector<double> gaps_;
};

}  // namespace

CheckEntry cache_entry() { return entry_of<CacheCheck>(kCacheInfo); }

}  // namespace infdoctor::checks
