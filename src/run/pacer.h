#pragma once
// The run's policy for model requests, across all its checks: the request budget
// (--max-requests), the provider's Retry-After (RFC 9110, section 10.2.3) or a doubling backoff
// after 429 and 503, the run's failure streak, and the counts the errors rules read. Every model
// request a check sends passes through here, so no check spends, waits or counts on its own.
#include <functional>
#include <cstdint>
#include <map>
#include <set>
#include <random>
#include <string>

#include "checks/check.h"
#include "checks/ports.h"
#include "core/clock.h"
#include "http/client.h"
#include "results/run_result.h"

namespace infdoctor::run {

// Why a failed request means the run cannot reach the model at all, with the fix; empty when the
// failure is the provider's to answer for (a timeout, a 5xx, a broken stream, a 429).
std::string unreachable_cause(const api::Endpoint& ep, const api::RequestSample& s);
// What a failed request says on its own: the cause and fix when unreachable_cause knows one,
// else "phase: message".
std::string failure_line(const api::Endpoint& ep, const api::RequestSample& s);

// `prompt` with its first word replaced by a word unique to the run (seed) and the request (n),
// a hash of both, so two requests' words share no leading characters but by chance;
// a prompt that does not start with a word gets the nonce in front.
std::string with_nonce(const std::string& prompt, std::uint64_t seed, std::uint64_t n);
// A prompt whose first `shared_words` words are to be shared by the requests of `prefix_key`:
// that prefix begins with a word of the run (seed) and the key, the same for every such request
// and no other, and the request's own word (n) follows it. The length in words is kept.
std::string with_shared_prefix(const std::string& prompt, std::uint64_t seed, std::uint64_t n, int shared_words,
                               std::uint64_t prefix_key);


class Pacer final : public checks::ModelPort {
 public:
  Pacer(core::Clock& clock, int max_requests) : clock_(clock), max_requests_(max_requests) {}

  // Refuses once the last kRunFailureLimit requests of the run all failed.
  static constexpr int kRunFailureLimit = 8;
  core::Result<std::vector<api::RequestSample>> chat(const api::Endpoint& ep, const std::vector<api::ChatRequest>& reqs,
                                                     core::SteadyTime deadline) override;

  // Every sample also goes here as it completes, with the check's id (the bundle's samples.jsonl,
  // --verbose's request lines).
  using SampleSink = std::function<void(const api::RequestSample&, const std::string& check)>;
  void set_sample_sink(SampleSink sink) { sample_sink_ = std::move(sink); }
  void set_current_check(std::string id) { current_check_ = std::move(id); }
  void set_progress(std::function<void(const std::string&)> p, std::function<void(core::SteadyTime)> waiting = {}) {
    progress_ = std::move(p);
    waiting_ = std::move(waiting);
  }

  // Set when the run's model requests could not get through at all: nothing succeeded and the
  // first failure was one no retry mends (the key refused, a wrong base URL or model, nothing
  // listening, a name that does not resolve). One line: the cause, then the fix. A failed TLS
  // handshake is not among them: an expired or wrong certificate is the provider's fault to report.
  // The pacer sends nothing more once it is set.
  const std::string& unreachable() const { return unreachable_; }

  // What the run's model requests came to, counted as they completed.
  struct Tally {
    int spent = 0;  // requests sent, each try of each
    // Answers that reported cached prompt tokens, those of prompts meant to share a prefix and of
    // the user's own bodies aside.
    int cached_prompts = 0;
    // 429s, those of them that named the token quota (api::RequestSample::quota), and the time
    // spent waiting out Retry-After and backoff after them.
    int rate_limited = 0, rate_limited_tokens = 0;
    double retry_wait_ms = 0;
    // Answers that said the provider is overloaded (api::RequestSample::overloaded), and the waits
    // they asked for (Retry-After, else the backoff), added up: what a client that retries each
    // refusal pays, whether or not the run had a next request to wait for.
    int overloaded = 0;
    double overload_wait_ms = 0;
    // Failed model requests by error token ("timeout", "http_status", ...), and server errors
    // (HTTP 5xx) among them.
    std::map<std::string, int> failures;
    int server_errors = 0;
    // 503s that said the model is loading, and the longest any request waited for it to load
    // before its answer came.
    int loading_answers = 0;
    double loading_wait_max_ms = 0;
  };
  const Tally& tally() const { return tally_; }
  // What the run changed in its requests after a 400 refused a parameter (api::refused_parameter),
  // once per parameter; every request after it goes out changed.
  const std::vector<results::Adaptation>& adaptations() const { return adaptations_; }
  // The requests the pacer sent on its own account, not a check's: a model's calibration of its
  // tokens (below). They belong to the run's ledger like every other.
  const std::vector<checks::LabelledSample>& own_requests() const { return own_; }

  // A stream without usage (several servers and gateways ignore stream_options.include_usage)
  // says how many events came, not how many tokens: engines send several tokens an event. The
  // count is measured instead: the same request once more, not streamed (a whole answer carries
  // usage), gives the model's bytes of text per output token and prompt tokens per word sent; every
  // usage-less sample of that model then counts its tokens from its text and its prompt's words,
  // and says so (api::kTokensCalibrated). A stream that does carry usage calibrates too, free. A
  // model whose whole answer has no usage either keeps its counts unknown.
  struct Calibration {
    std::vector<double> bytes_per_token, tokens_per_word;
    // (words sent, prompt tokens the server counted) of each answer that gave both.
    std::vector<std::pair<double, double>> prompt_sizes;
    bool asked = false;  // the non-streamed request was sent (once per model)
    // The words that make `tokens` prompt tokens by the server's count, from the sizes seen: a
    // line (the chat template's tokens and the tokens per word) once two sizes were seen, a ratio
    // with one; nothing before any.
    std::optional<int> words_for(int tokens) const;
  };
  const std::map<std::string, Calibration>& calibrations() const { return calibration_; }

 private:
  // Adapts to the refusal in `s` if it names a parameter not yet adapted to; true if it did.
  bool adapt(const api::RequestSample& s);
  void shape(api::ChatRequest& r) const;
  // Sends again, after the wait the provider asks for, the requests whose answer said the model is
  // loading, until it answers, the budget or the deadline ends, or kLoadingRounds.
  void wait_out_loading(api::Endpoint& bounded, const std::vector<api::ChatRequest>& sent,
                        std::vector<api::RequestSample>& out, core::SteadyTime first_sent, core::SteadyTime deadline);
  static constexpr int kLoadingRounds = 60;
  bool adapted_to(const std::string& parameter) const;
  // Counts the tokens of the batch's samples that came without usage (Calibration), sending the
  // model's calibration request first when it has none yet and the budget and deadline allow.
  void count_tokens(const api::Endpoint& bounded, const std::vector<api::ChatRequest>& sent,
                    std::vector<api::RequestSample>& out, core::SteadyTime deadline);
  void learn(const api::ChatRequest& sent, const api::RequestSample& s);
  // A synthetic prompt sized in the server's tokens, from what its answers counted so far: the run's
  // `--workload prompt=1000` is 1,000 tokens by the server's count, whatever its tokenizer.
  void size_prompt(api::ChatRequest& r) const;
  // Gives each sample its place in the run (seq) and the idle time of its model before it.
  void place(std::vector<api::RequestSample>& out, core::SteadyTime batch_start);
  void after(const api::Endpoint& ep, const api::ChatRequest& sent, const api::RequestSample& s,
             std::chrono::system_clock::time_point now_wall);

  core::Clock& clock_;
  int max_requests_;
  http::Client http_;
  Tally tally_;
  bool waiting_for_overload_ = false;  // the wait under way was asked for by an overloaded answer
  SampleSink sample_sink_;
  std::function<void(const std::string&)> progress_;
  std::function<void(core::SteadyTime)> waiting_;
  std::string current_check_;
  core::SteadyTime not_before_{};
  std::chrono::milliseconds backoff_{0};
  std::vector<results::Adaptation> adaptations_;
  std::uint64_t nonce_seed_ = std::random_device{}();
  std::uint64_t nonces_ = 0;
  int ok_ = 0;
  int seq_ = 0;
  std::map<std::string, core::SteadyTime> model_free_at_;  // when each model's last answer ended
  std::map<std::string, Calibration> calibration_;
  std::set<std::string> first_chain_split_;  // models whose first chain of requests sent its head alone
  std::vector<checks::LabelledSample> own_;
  std::string unreachable_;
  checks::FailureStreak streak_{kRunFailureLimit};  // failed model requests in a row, across checks
};

}  // namespace infdoctor::run
