// checks/concurrency.cpp. Measures, on the target model: batches of 1, 2, 4, ... parallel streams
// (concurrency.levels) through the libcurl multi interface, each batch started at once:
// per level TTFT and end-to-end percentiles, the batch's time and its output tokens per second.
// The batch's time is its slowest request's, from the request written to its last token: a wait
// for Retry-After before the batch, and connection setup, are not in it.
// From those:
//   parallelism_count = throughput at the highest level / throughput with one stream: how many
//   requests the server ran at once, in effect (the level itself when it batches them all).
//   queue wait = TTFT at the highest level - TTFT with one stream. A server that batches admits a
//   new sequence at its next step, so its streams wait a few tokens' time and the prefill of the
//   other prompts; a server with k slots makes the stream beyond k wait for a whole request to
//   finish. queue_wait_p90_services_ratio is that wait at the 90th percentile over one stream's
//   whole time: half a request or more is a wait for a slot, whatever k is.
//   throughput_scaling_ratio = parallelism / max level; latency_growth_ratio = (batch time at max /
//   batch time at 1) / max level: 1 = served one after another.
//   The knee is the first level that no higher level beats by 20 % or more in throughput.
// One stream is the request the run may already have sent alone (the sweep's decode size of the
// same prompt and output, at the defaults): its answers are that level's, and it is not sent again.
// Over HTTP/2 a level's streams share one connection; the highest level then runs again with each
// stream on a connection of its own, and a wait that only the shared connection has is a limit
// per connection (a gateway's streams per client connection), not the server's slots.
// Cannot tell: our streams from other tenants' load; a limit per connection over HTTP/1.1, where
// every stream has its own.
// Emits: concurrency.{parallelism_count,queue_wait_*,throughput_scaling_ratio,knee_level_count,
// multiplexed_ratio,separate_queue_wait_*,connection_wait_mean_ms,...}.
#include <algorithm>
#include <cmath>

#include "checks/check.h"
#include "checks/concurrency.h"
#include "checks/registry.h"
#include "core/json_text.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kConcurrencyInfo{
    "concurrency",
    "Concurrency and queueing",
    "Parallel streams at rising levels: does throughput grow, or does latency grow in proportion?",
    {{concurrency_metric::ttft_p50_at_1_ms.name, "ms", "median TTFT with one stream"},
     {concurrency_metric::ttft_p50_at_max_ms.name, "ms", "median TTFT at the highest level"},
     {concurrency_metric::ttft_p90_at_max_ms.name, "ms", "90th percentile TTFT at the highest level"},
     {concurrency_metric::total_p50_at_1_ms.name, "ms", "median end-to-end with one stream"},
     {concurrency_metric::total_p50_at_max_ms.name, "ms", "median end-to-end at the highest level"},
     {concurrency_metric::throughput_at_1_tokens_per_s.name, "tokens/s", "output tokens per second, one stream"},
     {concurrency_metric::throughput_at_max_tokens_per_s.name, "tokens/s", "output tokens per second, highest level"},
     {concurrency_metric::throughput_scaling_ratio.name, "ratio", "throughput gain over the level gain: 1 batches, 1/max serialises"},
     {concurrency_metric::latency_growth_ratio.name, "ratio", "growth of the time a whole batch takes over the growth of the batch: 1 = served one at a time"},
     {concurrency_metric::ttft_growth_ratio.name, "ratio", "median TTFT at the highest level over one stream's"},
     {concurrency_metric::parallelism_count.name, "count", "throughput at the highest level over one stream's: requests served at once, in effect"},
     {concurrency_metric::queue_wait_mean_at_max_ms.name, "ms", "mean TTFT at the highest level minus one stream's median: the average stream's wait"},
     {concurrency_metric::queue_wait_p90_at_max_ms.name, "ms", "90th percentile TTFT at the highest level minus one stream's median"},
     {concurrency_metric::queue_wait_p90_services_ratio.name, "ratio", "that wait over one stream's whole time: 0.5 and more is a wait for a slot"},
     {concurrency_metric::multiplexed_ratio.name, "ratio",
      "streams of the highest level answered over HTTP/2, so sharing a connection (HTTP/1.1 gives each its own)"},
     {concurrency_metric::separate_queue_wait_mean_at_max_ms.name, "ms",
      "over HTTP/2, the highest level again with each stream on a connection of its own: the average stream's wait"},
     {concurrency_metric::separate_queue_wait_p90_services_ratio.name, "ratio",
      "that pass's 90th percentile wait over one stream's whole time"},
     {concurrency_metric::connection_wait_mean_ms.name, "ms",
      "the average stream's wait on one shared connection minus on connections of their own: what sharing costs"},
     {concurrency_metric::knee_level_count.name, "count", "the first level no higher level beats by 20 % in throughput (absent: it still grows at the highest level)",
      {.layer = "concurrency knee (streams)", .per = "under load", .history = true}},
     {concurrency_metric::max_level_count.name, "count", "highest level measured"},
     {concurrency_metric::failures_count.name, "count", "failed requests"},
     {concurrency_metric::rate_limited_count.name, "count", "429 answers"}},
    {{&concurrency_metric::knee_level_count, "about {parallelism_count|stream} served at once ({throughput_scaling_ratio%} of perfect scaling); batch time (a batch's slowest request) grew {latency_growth_ratio} as fast as one at a time would; throughput stops growing past {knee_level_count|parallel stream} (the knee)"},
     {nullptr, "about {parallelism_count|stream} served at once ({throughput_scaling_ratio%} of perfect scaling); batch time (a batch's slowest request) grew {latency_growth_ratio} as fast as one at a time would; throughput still growing at {max_level_count|parallel stream}"}},
    {concurrency_setting::max_streams, concurrency_setting::levels, concurrency_setting::max_tokens,
     concurrency_setting::prompt_tokens, concurrency_setting::rounds},
    /*off_unless=*/nullptr,
    /*opt_in=*/false,
    /*reference=*/false,
    /*stream_levels=*/true};

struct Level {
  int streams = 0;
  std::vector<double> ttft, total;
  double tokens = 0;
  double makespan_ms = 0;
  double throughput = 0;  // tokens per second
  int answered = 0, over_http2 = 0;  // streams answered, and of those over HTTP/2
  bool own_connections = false;
};

struct Tally {
  int failures = 0, rate_limited = 0;
};

class ConcurrencyCheck final : public Check {
 public:
  explicit ConcurrencyCheck(const Options& o)
      // Levels above the cap on parallel streams (--max-concurrency) never reach here (run/plan.cpp).
      : levels_(o.numbers(concurrency_setting::levels)),
        max_tokens_(o.whole(concurrency_setting::max_tokens)),
        prompt_tokens_(o.whole(concurrency_setting::prompt_tokens)),
        rounds_(o.whole(concurrency_setting::rounds)) {}
  const CheckInfo& info() const override { return kConcurrencyInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps;
    for (double l : levels_)
      steps.push_back({std::to_string(static_cast<int>(l)) + (l == 1 ? " stream" : " streams at once") +
                           (rounds_ > 1 ? ", " + std::to_string(rounds_) + " rounds" : "") +
                           (l == 1 ? " (the run's earlier answers to the same request, sent alone, are read instead)" : ""),
                       static_cast<int>(l) * rounds_, "target", prompt_tokens_, max_tokens_});
    if (!levels_.empty() && levels_.back() > 1)
      steps.push_back({"over HTTP/2 only: " + std::to_string(static_cast<int>(levels_.back())) +
                           " streams again, each on a connection of its own",
                       static_cast<int>(levels_.back()) * rounds_, "target", prompt_tokens_, max_tokens_});
    return steps;
  }

  // Median time to first token and output tokens a second at each level, by its parallel streams.
  std::vector<Chart> charts(const CheckResult& r) const override {
    ChartSeries ttft{"TTFT p50", SeriesKind::Line, {}}, throughput{"tokens/s", SeriesKind::Line, {}};
    const auto levels = r.details.find("levels");
    if (levels != r.details.end() && levels->is_array())
      for (const auto& l : *levels) {
        const double streams = l.value("streams", 0.0);
        ttft.points.push_back({streams, l.value("ttft_p50_ms", 0.0), ""});
        throughput.points.push_back({streams, l.value("throughput_tokens_per_s", 0.0), ""});
      }
    const ChartAxis streams{"parallel streams", "", true};
    return {{"latency-vs-concurrency", "Median time to first token against parallel streams.", streams, {"TTFT", "ms"}, {ttft}},
            {"throughput-vs-concurrency", "Output tokens per second against parallel streams.", streams,
             {"output", "tokens/s"}, {throughput}}};
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kConcurrencyInfo.id);
    if (ctx.models().target.empty()) return out.skip("no --model given");
    std::vector<Level> done;
    Tally tally;
    for (const double lv : levels_) {
      Level level = run_level(ctx, out, static_cast<int>(lv), /*own_connections=*/false, tally);
      if (!level.ttft.empty()) done.push_back(std::move(level));
      if (out.status == CheckStatus::Error) break;
    }
    // Over HTTP/2 a level's streams share one connection. The highest level again, each stream on
    // a connection of its own, tells a limit per connection (a gateway's) from the server's
    // slots: only a limit per connection makes the streams of one connection wait longer.
    std::optional<Level> separate;
    if (!done.empty() && done.back().streams > 1 && done.back().over_http2 * 2 > done.back().answered &&
        out.status != CheckStatus::Error) {
      Level l = run_level(ctx, out, done.back().streams, /*own_connections=*/true, tally);
      if (!l.ttft.empty()) separate = std::move(l);
    }
    // A stream's wait for a slot at each level: its mean time to first token over one stream's.
    const double ttft_alone = done.empty() ? 0.0 : stats::summarize(done.front().ttft).p50.value_or(0.0);
    nlohmann::json table = nlohmann::json::array();
    Table levels{"concurrency: per level", {"streams", "TTFT p50", "TTFT p90", "total p50", "batch time", "tokens/s"}, {}, ""};
    std::vector<const Level*> shown;
    for (const auto& l : done) shown.push_back(&l);
    if (separate) shown.push_back(&*separate);
    for (const Level* lp : shown) {
      const Level& l = *lp;
      const auto t = stats::summarize(l.ttft), e = stats::summarize(l.total);
      levels.rows.push_back({std::to_string(l.streams) + (l.own_connections ? ", own connections" : ""), cell(t.p50, "ms"),
                             cell(t.p90, "ms"), cell(e.p50, "ms"), cell(l.makespan_ms / rounds_, "ms"), cell(l.throughput)});
      nlohmann::json row = {{"streams", l.streams},
                            {"over_http2_count", l.over_http2},
                            {"ttft_p50_ms", *t.p50},
                            {"ttft_p90_ms", *t.p90},
                            {"total_p50_ms", e.p50 ? nlohmann::json(*e.p50) : nlohmann::json(nullptr)},
                            {"makespan_ms", l.makespan_ms / rounds_},
                            {"throughput_tokens_per_s", l.throughput},
                            {"samples_count", t.count},
                            {"queue_wait_mean_ms", std::max(0.0, t.mean.value_or(0.0) - ttft_alone)}};
      // The levels are what the streams met on the connection they shared; the pass on
      // connections of their own is kept apart.
      if (l.own_connections) out.details["own_connections"] = row;
      else table.push_back(row);
    }
    out.details["levels"] = table;
    if (!levels.rows.empty()) out.tables.push_back(std::move(levels));
    out.set(concurrency_metric::failures_count, tally.failures);
    out.set(concurrency_metric::rate_limited_count, tally.rate_limited);
    if (done.empty()) {
      if (out.status == CheckStatus::Ok)
        return out.fail(core::make_error(core::ErrorCode::StreamError, "no concurrency level succeeded"));
      return out;
    }
    const Level& first = done.front();
    const Level& last = done.back();
    out.set(concurrency_metric::max_level_count, last.streams);
    const double ttft1 = *stats::summarize(first.ttft).p50;
    const auto service = stats::summarize(first.total).p50;  // one stream's whole time
    out.set(concurrency_metric::ttft_p50_at_1_ms, ttft1);
    const auto lt = stats::summarize(last.ttft);
    out.set(concurrency_metric::ttft_p50_at_max_ms, *lt.p50);
    out.set(concurrency_metric::ttft_p90_at_max_ms, *lt.p90);
    if (service) out.set(concurrency_metric::total_p50_at_1_ms, *service);
    if (auto v = stats::summarize(last.total).p50) out.set(concurrency_metric::total_p50_at_max_ms, *v);
    out.set(concurrency_metric::throughput_at_1_tokens_per_s, first.throughput);
    out.set(concurrency_metric::throughput_at_max_tokens_per_s, last.throughput);
    if (done.size() >= 2 && first.throughput > 0 && first.makespan_ms > 0) {
      const double level_gain = static_cast<double>(last.streams) / first.streams;
      const double parallelism = last.throughput / first.throughput * first.streams;
      out.set(concurrency_metric::parallelism_count, parallelism);
      out.set(concurrency_metric::throughput_scaling_ratio, parallelism / last.streams);
      out.set(concurrency_metric::latency_growth_ratio, (last.makespan_ms / first.makespan_ms) / level_gain);
      out.set(concurrency_metric::ttft_growth_ratio, *lt.p50 / std::max(1e-3, ttft1));
      const double wait_p90 = std::max(0.0, *lt.p90 - ttft1);
      const double wait_mean = std::max(0.0, *lt.mean - ttft1);
      out.set(concurrency_metric::queue_wait_mean_at_max_ms, wait_mean);
      out.set(concurrency_metric::queue_wait_p90_at_max_ms, wait_p90);
      if (service && *service > 0) out.set(concurrency_metric::queue_wait_p90_services_ratio, wait_p90 / *service);
      if (last.answered > 0) out.set(concurrency_metric::multiplexed_ratio, static_cast<double>(last.over_http2) / last.answered);
      if (separate) {
        const auto st = stats::summarize(separate->ttft);
        const double separate_mean = std::max(0.0, *st.mean - ttft1);
        out.set(concurrency_metric::separate_queue_wait_mean_at_max_ms, separate_mean);
        if (service && *service > 0)
          out.set(concurrency_metric::separate_queue_wait_p90_services_ratio, std::max(0.0, *st.p90 - ttft1) / *service);
        out.set(concurrency_metric::connection_wait_mean_ms, wait_mean - separate_mean);
      }
      // The knee is where throughput stopped growing: the first level that no higher one beats by
      // 20 %. A level that adds little before one that adds again is no knee (the server did serve
      // more at once later); while it still grows at the highest level there is none to name.
      for (std::size_t i = 0; i + 1 < done.size(); ++i) {
        const bool grows = std::any_of(done.begin() + static_cast<std::ptrdiff_t>(i) + 1, done.end(),
                                       [&](const auto& l) { return l.throughput >= 1.2 * done[i].throughput; });
        if (!grows) {
          out.set(concurrency_metric::knee_level_count, done[i].streams);
          break;
        }
      }
    }
    return out;
  }

 private:
  // `streams` parallel streams, concurrency.rounds times; sets `out` failed when most of a batch failed.
  Level run_level(CheckContext& ctx, CheckResult& out, int streams, bool own_connections, Tally& tally) const {
    Level level;
    level.streams = streams;
    level.own_connections = own_connections;
    api::ChatRequest req = api::synthetic_request(ctx.models().target, prompt_tokens_, max_tokens_);
    req.own_connection = own_connections;
    // One stream on a shared connection is the request the run may have sent already, alone (the
    // sweep's decode size of the same prompt and output, at the defaults): its answers are this
    // level's rounds, newest first, and only the rounds they do not cover are sent.
    const std::vector<ReadAnswer> read = streams == 1 && !own_connections ? earlier_answers(ctx, req) : std::vector<ReadAnswer>{};
    if (!read.empty()) {
      nlohmann::json said = nlohmann::json::array();
      for (const ReadAnswer& a : read)  // as many as the rounds at most
        said.push_back({{"check", a.check}, {"seq", a.sample->seq}, {"request_id", core::text_or_null(a.sample->request_id)}});
      out.details["one_stream_read"] = {
          {"answers", said},
          {"why", "the run had sent this request alone already: the same model, prompt, max_tokens, streaming and "
                  "Accept-Encoding, one in flight"}};
    }
    for (int round = 0; round < rounds_; ++round) {
      const bool was_read = static_cast<std::size_t>(round) < read.size();
      std::vector<api::RequestSample> batch;
      if (was_read) {
        batch.push_back(*read[static_cast<std::size_t>(round)].sample);
      } else {
        ctx.progress("concurrency: " + std::to_string(streams) + " parallel streams" +
                     (own_connections ? ", each on a connection of its own" : ""));
        auto r = ctx.chat(std::vector<api::ChatRequest>(static_cast<std::size_t>(streams), req));
        if (!r.ok()) {
          out.fail(r.error());
          break;
        }
        batch = std::move(r.value());
      }
      double batch_ms = 0;
      for (const auto& s : batch)
        if (auto t = server_total_ms(s)) batch_ms = std::max(batch_ms, *t);
      level.makespan_ms += batch_ms;
      int failed_here = 0, limited_here = 0;
      for (const auto& s : batch) {
        nlohmann::json label = {{"streams", streams}, {"round", round}};
        if (own_connections) label["own_connections"] = true;
        if (!was_read) out.requests.push_back({s, label});
        if (s.http_status > 0) {
          ++level.answered;
          if (s.http_version == "2") ++level.over_http2;
        }
        if (!s.ok) {
          ++failed_here;
          if (s.http_status == 429) {
            ++tally.rate_limited;
            ++limited_here;
          }
          continue;
        }
        if (auto t = server_ttft_ms(s)) level.ttft.push_back(*t);
        if (auto t = server_total_ms(s)) level.total.push_back(*t);
        level.tokens += s.output_tokens ? static_cast<double>(*s.output_tokens) : static_cast<double>(s.content_events);
      }
      tally.failures += failed_here;
      if (failed_here * 2 > streams) {
        out.fail(core::make_error(core::ErrorCode::StreamError,
                                  "stopped at " + std::to_string(streams) + " streams: " + std::to_string(failed_here) +
                                      " of them failed" +
                                      (limited_here > 0 ? " (" + std::to_string(limited_here) + " refused with 429: rate limited)" : "")));
        break;
      }
    }
    if (level.makespan_ms > 0) level.throughput = level.tokens / (level.makespan_ms / 1000.0);
    return level;
  }

  struct ReadAnswer {
    std::string check;
    const api::RequestSample* sample;
  };
  // The run's earlier answers to `req` alone (one in flight), newest first, as many as the rounds.
  std::vector<ReadAnswer> earlier_answers(const CheckContext& ctx, const api::ChatRequest& req) const {
    std::vector<ReadAnswer> out;
    const auto& checks = ctx.earlier_checks();
    for (auto c = checks.rbegin(); c != checks.rend(); ++c)
      for (auto it = c->requests.rbegin(); it != c->requests.rend(); ++it) {
        if (static_cast<int>(out.size()) >= rounds_) return out;
        const api::RequestSample& s = it->sample;
        if (s.ok && s.in_flight <= 1 && api::same_request(s, req)) out.push_back({c->id, &s});
      }
    return out;
  }

  std::vector<double> levels_;
  int max_tokens_, prompt_tokens_, rounds_;
};

}  // namespace

CheckEntry concurrency_entry() { return entry_of<ConcurrencyCheck>(kConcurrencyInfo); }

}  // namespace infdoctor::checks
