#include "run/pacer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "api/endpoint_spec.h"
#include "core/digest.h"
#include "core/interrupt.h"
#include "core/redact.h"
#include "core/strings.h"
#include "stats/fit.h"

namespace infdoctor::run {

std::string unreachable_cause(const api::Endpoint& ep, const api::RequestSample& s) {
  if (s.ok) return {};
  const std::string key_var = ep.key_env.empty() ? "the key file (--api-key-file)" : "$" + ep.key_env;
  const std::string what = s.error_message.empty() ? s.error : s.error_message;
  if (s.http_status == 401 || s.http_status == 403) {
    if (ep.api_key.empty())
      return "the provider wants an API key and none was sent (" + what + "): set " + key_var +
             (ep.key_env.empty() ? "" : ", or name another variable with --api-key-env");
    return "the provider refused the API key (" + what + "): check " + key_var + " and the key's access to model " +
           s.model;
  }
  if (s.http_status == 404) {
    if (core::lower(what).find("model") != std::string::npos)
      return "the provider does not know model '" + s.model + "' (" + what + "): check --model; GET " +
             core::redact_url(ep.url("/models")) + " lists the models it serves";
    return "nothing answers at " + core::redact_url(ep.url(ep.chat_path())) + " (" + what +
           "): is the base URL right? For OpenAI-compatible servers it usually ends in /v1";
  }
  // Through a proxy, a failure to connect or resolve may be the proxy's: said first.
  const std::string proxy = api::proxy_in_use(ep);
  const std::string via = proxy.empty() ? "" : " through the proxy " + proxy;
  const bool https = ep.base_url.rfind("https:", 0) == 0;
  const std::string msg = core::lower(what);
  const std::string proxy_fix = "is the proxy up, and should this host go through it at all (no_proxy, --proxy '')?";
  if (s.error == "resolve_failed")
    return "the API host does not resolve" + via + " (" + what +
           "): " + (via.empty() ? "check the host in the base URL and the resolver" : proxy_fix);
  if (s.error == "connect_failed" || s.error == "connect_refused")
    return "nothing accepts connections at " + core::redact_url(ep.base_url) + via + " (" + what + "): " +
           (via.empty() ? "is the host and port of the base URL right, and is the server up?" : proxy_fix);
  if (s.error == "tls_failed" && https &&
      (msg.find("wrong version number") != std::string::npos || msg.find("packet length too long") != std::string::npos))
    return "the server at " + core::redact_url(ep.base_url) + " answered the TLS handshake in plain text (" + what +
           "): it speaks HTTP, not HTTPS; use http:// in the base URL";
  if (s.error == "tls_failed" && https && via.empty() && msg.find("ssl_error_syscall") != std::string::npos)
    return "the server at " + core::redact_url(ep.base_url) + " closed the connection during the TLS handshake (" +
           what + "): if that port speaks plain HTTP, use http:// in the base URL";
  // Plain HTTP to a TLS port: no status line came back at all (curl's "Empty reply", "HTTP/0.9"), or
  // the terminator's own 400 ("The plain HTTP request was sent to HTTPS port"). A server that
  // answered with a status and then broke its stream is the provider's failure, not this.
  const bool no_http_answer = s.http_status == 0 && (msg.find("empty reply") != std::string::npos ||
                                                     msg.find("http/0.9") != std::string::npos ||
                                                     msg.find("weird server reply") != std::string::npos);
  if (!https && (no_http_answer || (s.http_status == 400 && msg.find("https port") != std::string::npos)))
    return "the server at " + core::redact_url(ep.base_url) + " did not answer plain HTTP (" + what +
           "): if that port speaks TLS, use https:// in the base URL";
  if (s.error == "tls_failed" &&
      (msg.find("self-signed") != std::string::npos || msg.find("self signed") != std::string::npos ||
       msg.find("unable to get local issuer") != std::string::npos || msg.find("unknown ca") != std::string::npos))
    return "the server's certificate is not signed by a CA this machine trusts (" + what +
           "): give that CA with --cacert FILE, or skip the check with -k (never against a production API)";
  return {};
}

std::string failure_line(const api::Endpoint& ep, const api::RequestSample& s) {
  std::string line = unreachable_cause(ep, s);
  return line.empty() ? s.failed_phase + ": " + s.error_message : line;
}

namespace {

// The wait a refusal asks for: retry-after-ms (OpenAI's and Azure's, in milliseconds) first, as
// their SDKs read it, then Retry-After (RFC 9110, section 10.2.3).
std::optional<std::chrono::milliseconds> asked_wait(const api::RequestSample& s, std::chrono::system_clock::time_point now_wall) {
  if (auto it = s.headers.find("retry-after-ms"); it != s.headers.end()) {
    char* end = nullptr;
    const double ms = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && *end == '\0' && ms >= 0 && ms <= 86400000)
      return std::chrono::milliseconds(static_cast<long long>(std::ceil(ms)));
  }
  if (auto it = s.headers.find("retry-after"); it != s.headers.end()) return http::parse_retry_after(it->second, now_wall);
  return std::nullopt;
}

// The words of a prompt, as the synthetic prompts are made of them.
std::size_t words_in(const std::string& text) {
  std::size_t n = 0;
  bool in_word = false;
  for (const char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t';
    n += !space && !in_word;
    in_word = !space;
  }
  return n;
}

// A request sent again goes at once, on no lane: its place in the batch's schedule is past.
api::ChatRequest unscheduled(api::ChatRequest r) {
  r.start_after = {};
  r.lane = -1;
  return r;
}

}  // namespace

std::string with_nonce(const std::string& prompt, std::uint64_t seed, std::uint64_t n) {
  // The word's characters are a hash of the run's seed and the request's number (splitmix64), so
  // two requests differ from the word's first characters on: a tokenizer that spells it out
  // piece by piece (byte fallback, short BPE merges) finds no shared prefix in it either. The
  // letter in front keeps it one word in every tokenizer.
  const std::uint64_t z = core::mix64(seed + core::kGoldenGamma * (n + 1));
  char word[40];
  std::snprintf(word, sizeof word, "n%016llx", static_cast<unsigned long long>(z));
  const auto first_end = prompt.find_first_of(" \t\n");
  const auto first_start = prompt.find_first_not_of(" \t\n");
  if (first_start != 0 || first_end == std::string::npos) return std::string(word) + " " + prompt;
  return word + prompt.substr(first_end);
}

std::string with_shared_prefix(const std::string& prompt, std::uint64_t seed, std::uint64_t n, int shared_words,
                               std::uint64_t prefix_key) {
  std::size_t end = 0;  // just after the prefix's last word
  for (int w = 0; w < shared_words && end < prompt.size(); ++w) {
    const auto start = prompt.find_first_not_of(" \t\n", end);
    if (start == std::string::npos) break;
    end = std::min(prompt.find_first_of(" \t\n", start), prompt.size());
  }
  // The prefix's word from a seed of its own, so it never equals a request's word.
  const std::string prefix = with_nonce(prompt.substr(0, end), seed ^ 0x5bd1e9955bd1e995ull, prefix_key);
  const auto rest = prompt.find_first_not_of(" \t\n", end);
  return prefix + " " + with_nonce(rest == std::string::npos ? "" : prompt.substr(rest), seed, n);
}

core::Result<std::vector<api::RequestSample>> Pacer::chat(const api::Endpoint& ep,
                                                          const std::vector<api::ChatRequest>& reqs,
                                                          core::SteadyTime deadline) {
  using core::ErrorCode;
  const int n = static_cast<int>(reqs.size());
  if (core::interrupted()) return core::interrupted_error();
  if (!unreachable_.empty())
    return core::make_error(ErrorCode::Unreachable, "the run sends no more model requests", unreachable_);
  if (streak_.stop()) {
    core::Error e = streak_.error();
    e.message = "the run sends no more model requests: " + e.message;
    return e;
  }
  if (n > max_requests_ - tally_.spent)
    return core::make_error(ErrorCode::BudgetExhausted, "the request budget is spent",
                            std::to_string(tally_.spent) + " of " + std::to_string(max_requests_) +
                                " requests sent; this step needs " + std::to_string(n) + " more (--max-requests)");
  if (const auto now = clock_.now(); now < not_before_) {
    if (progress_) progress_("waiting out the provider's Retry-After");
    if (waiting_) waiting_(std::min(not_before_, deadline));
    const auto until = std::min(not_before_, deadline);
    if (!waiting_for_overload_) tally_.retry_wait_ms += core::to_ms(core::elapsed_us(now, until));
    if (!clock_.sleep_until(until)) return core::interrupted_error();
    if (not_before_ > deadline)
      return core::make_error(ErrorCode::DeadlineExceeded, "the provider's Retry-After outlasts the check's deadline");
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
  if (left <= std::chrono::milliseconds(0))
    return core::make_error(ErrorCode::DeadlineExceeded, "the check's deadline came first");
  // A model's first prompts are sized in words, nothing yet telling its tokens a word (a tokenizer
  // can count three a word). A chain of them sent one after another (one lane, no schedule) sends
  // its head alone, as it would go first anyway, and the rest sized by what the head's usage said:
  // once a model, so a server without usage is not asked one by one.
  const auto known = calibration_.find(reqs[0].model);
  if (n > 1 && (known == calibration_.end() || known->second.prompt_sizes.empty()) && !first_chain_split_.count(reqs[0].model) &&
      std::all_of(reqs.begin(), reqs.end(), [&](const api::ChatRequest& r) {
        return r.model == reqs[0].model && r.lane >= 0 && r.lane == reqs[0].lane && r.start_after.count() == 0 &&
               r.prompt_tokens_wanted > 0 && r.shared_words == 0 && !r.body;
      })) {
    first_chain_split_.insert(reqs[0].model);
    auto head = chat(ep, {reqs.front()}, deadline);
    if (!head.ok()) return head;
    auto rest = chat(ep, {reqs.begin() + 1, reqs.end()}, deadline);
    if (!rest.ok()) return rest;
    head.value().insert(head.value().end(), std::make_move_iterator(rest.value().begin()),
                        std::make_move_iterator(rest.value().end()));
    return head;
  }
  api::Endpoint bounded = ep;
  // Each request within its own timeout and the check's deadline; the batch as a whole (a load
  // level's users, each asking again in turn) within the check's deadline only.
  const auto bound_to = [&](std::chrono::milliseconds until_deadline) {
    bounded.timeout = std::min(bounded.timeout, until_deadline);
    bounded.connect_timeout = std::min(bounded.connect_timeout, bounded.timeout);
    bounded.batch_timeout = until_deadline;
  };
  bound_to(left);
  tally_.spent += n;
  // Every prompt begins with a word no other prompt has, so no two share a prefix: an engine that
  // caches prefixes (llama.cpp's cache_prompt, vLLM's and SGLang's block caches, OpenAI from 1,024
  // tokens) cannot serve a sweep's prompts, each a prefix of the next, from its cache. The nonce
  // replaces the first word, so a prompt keeps its length in words.
  // A prompt cache's test shares a prefix on purpose: its requests' words follow that prefix. A
  // body of the user's own goes as it is: what its prefix meets in the cache is part of its cost.
  std::vector<api::ChatRequest> unique = reqs;
  for (auto& r : unique) {
    if (r.body) continue;
    size_prompt(r);
    r.prompt = r.shared_words > 0 ? with_shared_prefix(r.prompt, nonce_seed_, ++nonces_, r.shared_words, r.prefix_key)
                                  : with_nonce(r.prompt, nonce_seed_, ++nonces_);
    shape(r);
  }
  const auto first_sent = clock_.now();
  std::vector<api::RequestSample> out = api::run_chats(http_, bounded, unique);
  // A 400 refusing a parameter the run can rename or leave out (a reasoning model's max_tokens or
  // temperature): adapt, keep the refusal in the record, and send those requests again, changed.
  // At most once per parameter, within the budget and the deadline.
  for (int round = 0; round < 2; ++round) {
    bool changed = false;
    for (const auto& s : out) changed = adapt(s) || changed;
    if (!changed) break;
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (!out[i].ok && adapted_to(out[i].refused_parameter)) again.push_back(i);
    const auto left_now = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
    if (again.empty() || static_cast<int>(again.size()) > max_requests_ - tally_.spent || left_now <= std::chrono::milliseconds(0))
      break;
    std::vector<api::ChatRequest> retry;
    for (const auto i : again) {
      if (sample_sink_) sample_sink_(out[i], current_check_);
      shape(unique[i]);
      retry.push_back(unscheduled(unique[i]));
    }
    tally_.spent += static_cast<int>(again.size());
    bound_to(left_now);
    auto second = api::run_chats(http_, bounded, retry);
    for (std::size_t k = 0; k < again.size() && k < second.size(); ++k) out[again[k]] = std::move(second[k]);
  }
  wait_out_loading(bounded, unique, out, first_sent, deadline);
  place(out, first_sent);
  for (std::size_t i = 0; i < out.size() && i < unique.size(); ++i) {
    if (unique[i].prompt_tokens_wanted > 0) out[i].prompt_words = static_cast<int>(words_in(unique[i].prompt));
    api::record_asked(out[i], reqs[i]);
  }
  count_tokens(bounded, unique, out, deadline);
  const auto now_wall = std::chrono::system_clock::now();
  // A timeout the check's deadline set (shorter than the endpoint's own, or met as the deadline
  // came, ending a batch): the run's limit.
  if (bounded.timeout < ep.timeout || clock_.now() >= deadline)
    for (auto& s : out)
      if (s.error == "timeout") {
        s.error = api::kCheckDeadline;
        s.error_message = "cut short by the check's deadline (--check-timeout) after " + std::to_string(left.count()) + " ms";
      }
  // Successes first: a batch in which any request got through reached the model.
  ok_ += static_cast<int>(std::count_if(out.begin(), out.end(), [](const api::RequestSample& s) { return s.ok; }));
  for (std::size_t i = 0; i < out.size(); ++i) after(ep, unique[i], out[i], now_wall);
  return out;
}

void Pacer::wait_out_loading(api::Endpoint& bounded, const std::vector<api::ChatRequest>& sent,
                             std::vector<api::RequestSample>& out, core::SteadyTime first_sent, core::SteadyTime deadline) {
  std::vector<int> answers(out.size(), 0);
  std::vector<std::string> said_first(out.size());
  std::chrono::milliseconds backoff{500};
  for (int round = 0; round < kLoadingRounds; ++round) {
    std::vector<std::size_t> again;
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].model_loading) again.push_back(i);
    if (again.empty()) return;
    // As the provider asks (Retry-After, else the body's estimated_time), else a backoff that
    // doubles from a second up to eight; never under a quarter second, so a "0" does not spin.
    const api::RequestSample& said = out[again.front()];
    std::optional<std::chrono::milliseconds> wait = asked_wait(said, std::chrono::system_clock::now());
    if (!wait && said.loading_estimate_s)
      wait = std::chrono::milliseconds(static_cast<long long>(std::ceil(*said.loading_estimate_s * 1000)));
    if (!wait) {
      backoff = std::min(std::chrono::milliseconds(8000), backoff * 2);
      wait = backoff;
    }
    wait = std::max(*wait, std::chrono::milliseconds(250));
    const auto resend_at = clock_.now() + *wait;
    if (resend_at >= deadline || static_cast<int>(again.size()) > max_requests_ - tally_.spent) return;
    std::vector<api::ChatRequest> retry;
    for (const auto i : again) {
      ++answers[i];
      ++tally_.loading_answers;
      if (said_first[i].empty()) said_first[i] = out[i].error_message;
      if (sample_sink_) sample_sink_(out[i], current_check_);
      retry.push_back(unscheduled(sent[i]));
    }
    if (progress_) progress_("the model is loading: sending again in " + std::to_string(wait->count()) + " ms, as the provider asks");
    if (waiting_) waiting_(resend_at);
    if (!clock_.sleep_until(resend_at)) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
    if (left <= std::chrono::milliseconds(0)) return;
    bounded.timeout = std::min(bounded.timeout, left);
    bounded.connect_timeout = std::min(bounded.connect_timeout, bounded.timeout);
    tally_.spent += static_cast<int>(retry.size());
    const auto resent = clock_.now();
    auto second = api::run_chats(http_, bounded, retry);
    const double waited_ms = core::to_ms(core::elapsed_us(first_sent, resent));
    for (std::size_t k = 0; k < again.size() && k < second.size(); ++k) {
      api::RequestSample& s = out[again[k]];
      s = std::move(second[k]);
      s.loading_wait_ms = waited_ms;
      s.loading_answers = answers[again[k]];
      s.loading_said = said_first[again[k]];
      if (s.ok) tally_.loading_wait_max_ms = std::max(tally_.loading_wait_max_ms, waited_ms);
    }
  }
}

void Pacer::place(std::vector<api::RequestSample>& out, core::SteadyTime batch_start) {
  std::map<std::string, core::SteadyTime> ends;
  for (auto& s : out) {
    s.seq = seq_++;
    const auto start = batch_start + std::chrono::microseconds(static_cast<long long>(s.sent_after_ms * 1000));
    if (auto it = model_free_at_.find(s.model); it != model_free_at_.end() && start >= it->second)
      s.idle_before_ms = core::to_ms(core::elapsed_us(it->second, start));
    const auto end = start + std::chrono::microseconds(static_cast<long long>(s.transfer_ms.value_or(0) * 1000));
    auto& e = ends[s.model];
    e = std::max(e, end);
  }
  for (const auto& [model, end] : ends) model_free_at_[model] = std::max(model_free_at_[model], end);
}

void Pacer::learn(const api::ChatRequest& sent, const api::RequestSample& s) {
  auto& c = calibration_[s.model];
  if (auto b = api::bytes_per_token(s)) c.bytes_per_token.push_back(*b);
  if (!sent.body && s.prompt_tokens && *s.prompt_tokens > 0 && s.prompt_tokens_source == api::kTokensFromUsage)
    if (const auto words = words_in(sent.prompt); words > 0) {
      c.tokens_per_word.push_back(static_cast<double>(*s.prompt_tokens) / static_cast<double>(words));
      c.prompt_sizes.emplace_back(static_cast<double>(words), static_cast<double>(*s.prompt_tokens));
    }
}

std::optional<int> Pacer::Calibration::words_for(int tokens) const {
  if (prompt_sizes.empty()) return std::nullopt;
  std::vector<double> x, y;
  for (const auto& [w, t] : prompt_sizes) {
    x.push_back(w);
    y.push_back(t);
  }
  // A BPE or SentencePiece token spans at most a word and the space before it, so a server whose
  // counts say a token holds more than kMostWordsPerToken words is not counting tokens (a broken or
  // hostile count): a prompt is never sized past that many words a token.
  constexpr double kMostWordsPerToken = 4;
  const auto bounded = [tokens](double words) {
    return static_cast<int>(std::lround(std::clamp(words, 1.0, kMostWordsPerToken * std::max(tokens, 1))));
  };
  const auto fit = stats::least_squares(x, y);
  if (!fit || fit->slope <= 0) return bounded(tokens / *stats::median(tokens_per_word));
  // Walk by the fitted slope from the measured prompt nearest in tokens: a slope's error grows with the
  // distance walked, and the nearest measured size is the shortest walk (a line's intercept is anchored
  // at the middle of the sizes measured, often far from the size wanted).
  std::size_t near = 0;
  for (std::size_t i = 1; i < y.size(); ++i)
    if (std::abs(y[i] - tokens) < std::abs(y[near] - tokens)) near = i;
  return bounded(x[near] + (tokens - y[near]) / fit->slope);
}

void Pacer::size_prompt(api::ChatRequest& r) const {
  // A prompt whose prefix is shared on purpose keeps the words its sender counted.
  if (r.prompt_tokens_wanted <= 0 || r.shared_words > 0) return;
  const auto it = calibration_.find(r.model);
  if (it == calibration_.end()) return;
  if (const auto words = it->second.words_for(r.prompt_tokens_wanted); words && *words != static_cast<int>(words_in(r.prompt)))
    r.prompt = api::synthetic_prompt(*words);
}

void Pacer::count_tokens(const api::Endpoint& bounded, const std::vector<api::ChatRequest>& sent,
                         std::vector<api::RequestSample>& out, core::SteadyTime deadline) {
  for (std::size_t i = 0; i < out.size() && i < sent.size(); ++i)
    if (out[i].output_tokens_source == api::kTokensFromUsage) learn(sent[i], out[i]);
  for (std::size_t i = 0; i < out.size() && i < sent.size(); ++i) {
    api::RequestSample& s = out[i];
    if (!s.ok || s.output_tokens || s.content_events == 0 || !sent[i].stream) continue;
    Calibration& c = calibration_[s.model];
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.now());
    if (c.bytes_per_token.empty() && !c.asked && tally_.spent < max_requests_ && left > std::chrono::milliseconds(0)) {
      c.asked = true;
      // The same prompt, long enough an answer for its bytes per token to be an average.
      api::ChatRequest whole = unscheduled(sent[i]);
      whole.stream = false;
      whole.max_tokens = std::max(whole.max_tokens, 64);
      api::Endpoint e = bounded;
      e.timeout = std::min(e.timeout, left);
      ++tally_.spent;
      if (progress_) progress_("the stream of " + s.model + " carries no usage: one whole answer to count its tokens");
      std::vector<api::RequestSample> got = api::run_chats(http_, e, {whole});
      place(got, clock_.now());
      if (sample_sink_) sample_sink_(got.front(), "calibration");
      learn(whole, got.front());
      own_.push_back({got.front(), {{"purpose", "calibration"}}});
    }
    if (!c.bytes_per_token.empty() && s.content_bytes > 0)
      api::count_output_tokens(s, static_cast<double>(s.content_bytes) / *stats::median(c.bytes_per_token), api::kTokensCalibrated);
    if (!s.prompt_tokens && !c.tokens_per_word.empty() && !sent[i].body) {
      s.prompt_tokens = std::llround(static_cast<double>(words_in(sent[i].prompt)) * *stats::median(c.tokens_per_word));
      s.prompt_tokens_source = api::kTokensCalibrated;
    }
  }
}

bool Pacer::adapted_to(const std::string& parameter) const {
  return !parameter.empty() && std::any_of(adaptations_.begin(), adaptations_.end(),
                                           [&](const results::Adaptation& a) { return a.parameter == parameter; });
}

bool Pacer::adapt(const api::RequestSample& s) {
  if (s.ok || s.refused_parameter.empty() || adapted_to(s.refused_parameter)) return false;
  const std::string change = api::adaptation_for(s.refused_parameter);
  adaptations_.push_back({s.refused_parameter, change, s.error_message});
  if (progress_) progress_("the endpoint refused " + s.refused_parameter + ": " + change + " from here on");
  return true;
}

void Pacer::shape(api::ChatRequest& r) const {
  for (const auto& a : adaptations_) api::adapt_request(r, a.parameter);
}

void Pacer::after(const api::Endpoint& ep, const api::ChatRequest& sent, const api::RequestSample& s,
                  std::chrono::system_clock::time_point now_wall) {
  if (sample_sink_) sample_sink_(s, current_check_);
  if (s.cached_tokens && *s.cached_tokens > 0 && sent.shared_words == 0 && !sent.body) ++tally_.cached_prompts;
  if (s.model_loading) ++tally_.loading_answers;  // still loading when the deadline or the budget ended the waiting
  if (ok_ == 0 && unreachable_.empty()) {
    unreachable_ = unreachable_cause(ep, s);
    if (!unreachable_.empty()) return;  // not the provider's failure: the run never reached it
  }
  // A limit the endpoint stated is a fact the check records; a request the check's deadline cut
  // short is the run's own limit. Neither is a failure.
  if (!api::is_failure(s) && !s.ok) return;
  streak_.record(s);
  if (!s.ok) ++tally_.failures[s.error.empty() ? "unknown" : s.error];
  if (s.http_status >= 500) ++tally_.server_errors;
  if (s.http_status != 429 && s.http_status != 503 && s.http_status != 529) {
    if (s.ok) backoff_ = {};
    return;
  }
  if (s.http_status == 429) ++tally_.rate_limited;
  if (s.http_status == 429 && s.quota == "tokens") ++tally_.rate_limited_tokens;
  if (s.overloaded) ++tally_.overloaded;
  // The provider's Retry-After when it sends one; otherwise a backoff that doubles with every
  // refusal in a row (0.5 s up to 8 s), so a throttled run does not hammer.
  std::optional<std::chrono::milliseconds> wait = asked_wait(s, now_wall);
  if (!wait) {
    backoff_ = std::min(std::chrono::milliseconds(8000),
                        backoff_.count() == 0 ? std::chrono::milliseconds(500) : backoff_ * 2);
    wait = backoff_;
  }
  if (s.overloaded) tally_.overload_wait_ms += static_cast<double>(wait->count());
  if (clock_.now() + *wait > not_before_) {
    not_before_ = clock_.now() + *wait;
    waiting_for_overload_ = s.overloaded;
  }
}

}  // namespace infdoctor::run
