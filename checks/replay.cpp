// checks/replay.cpp. Sends the user's own request bodies (replay.body, from `--body FILE`) as they
// are, streamed with usage asked for (the model --model names, else the body's), each
// replay.repeats times one after another, and measures what the body itself costs: its prompt
// tokens as the server counts them, the first send's time to first token and the repeats' (the
// first meets the prompt cache cold, the repeats what it left), the cached tokens the provider
// reports, the part of the prompt that is the same every time (a stable prefix: with one body,
// the system prompt, tools and turns before the last user message; with several, the messages
// they all begin with), its max_tokens against what the answers used, and its bytes per token.
// A stable prefix's tokens are its share of the prompt's text times the server's prompt tokens:
// a tokenizer's count of the prefix alone is not asked for.
// The body itself never leaves the process: results keep its size, its hash and its counts.
// Cannot tell: how the provider's cache is shared between clients (another client's traffic may
// have filled it first), images' tokens from text's.
// Only the first send of a body goes exactly as it is: each repeat has a word of its own put in
// front of its last user message, as the next request of an application brings a new question
// after the same system prompt, so a cache can serve the stable prefix and nothing after it.
// Emits: replay.{bodies_count,body_bytes,prompt_tokens_count,stable_prefix_tokens_count,
// stable_prefix_ratio,max_tokens_count,output_tokens_p50_count,first_ttft_ms,repeat_ttft_p50_ms,
// total_p50_ms,cached_tokens_p50_count,prefix_saved_ms,bytes_per_token_ratio,samples_count,
// failures_count}.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "checks/check.h"
#include "checks/registry.h"
#include "checks/replay.h"
#include "core/digest.h"
#include "stats/fit.h"

namespace infdoctor::checks {
namespace {

const CheckInfo kReplayInfo{
    "replay",
    "Your own request",
    "Your request bodies sent as they are (--body FILE): what their prompt, its stable prefix, the prompt cache and "
    "their max_tokens cost.",
    {{replay_metric::bodies_count.name, "count", "bodies sent"},
     {replay_metric::body_bytes.name, "bytes", "median size of a body as sent"},
     {replay_metric::prompt_tokens_count.name, "count", "median prompt tokens of a body, as the server counted them"},
     {replay_metric::stable_prefix_tokens_count.name, "count",
      "of those, the part that is the same every time (system prompt, tools, earlier turns; with several bodies, the "
      "messages they all begin with): its share of the prompt's text times the prompt tokens"},
     {replay_metric::stable_prefix_ratio.name, "ratio", "that part's share of the prompt's text"},
     {replay_metric::max_tokens_count.name, "count", "median max_tokens the bodies ask for"},
     {replay_metric::output_tokens_p50_count.name, "count", "median output tokens the answers used"},
     {replay_metric::first_ttft_ms.name, "ms", "median TTFT of each body's first send (the prompt cache cold for it)"},
     {replay_metric::repeat_ttft_p50_ms.name, "ms",
      "median TTFT of the sends after the first, each with a word of its own before its last user message"},
     {replay_metric::total_p50_ms.name, "ms", "median end-to-end time of every send"},
     {replay_metric::cached_tokens_p50_count.name, "count", "median cached prompt tokens the provider reported on the repeats"},
     {replay_metric::prefix_saved_ms.name, "ms",
      "the first send's TTFT minus the repeats', when the repeats reported half the stable prefix cached or more: "
      "what the cache saves on the prefix"},
     {replay_metric::bytes_per_token_ratio.name, "ratio", "body bytes per prompt token (text is 4 to 6; images, tool schemas and "
                                               "whitespace make more)"},
     {replay_metric::samples_count.name, "count", "sends that succeeded"},
     {replay_metric::failures_count.name, "count", "failed sends"}},
    {{&replay_metric::prefix_saved_ms, "{prompt_tokens_count|prompt token} ({stable_prefix_tokens_count} the same every time): first "
                         "token {first_ttft_ms} cold, {repeat_ttft_p50_ms} with {cached_tokens_p50_count} cached"},
     {nullptr, "{prompt_tokens_count|prompt token} ({stable_prefix_tokens_count} the same every time): first token "
               "{first_ttft_ms}, then {repeat_ttft_p50_ms}; {output_tokens_p50_count} of {max_tokens_count} output "
               "tokens used"}},
    {replay_setting::body, replay_setting::repeats, replay_setting::max_bodies},
    &replay_setting::body};

// The text a message or a system field holds: a string, or the text parts of a list of parts.
std::size_t text_size(const nlohmann::json& content) {
  if (content.is_string()) return content.get_ref<const std::string&>().size();
  std::size_t n = 0;
  if (content.is_array())
    for (const auto& part : content)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        n += part["text"].get_ref<const std::string&>().size();
  return n;
}

// What of a body's prompt is text, and what of it comes before the part that changes.
struct Shape {
  std::size_t text = 0, prefix = 0, other = 0;
};

// The messages (with Anthropic's system and either API's tools first) as the parts a prompt is
// made of, each with its text size.
std::vector<std::pair<nlohmann::json, std::size_t>> parts_of(const nlohmann::json& body) {
  std::vector<std::pair<nlohmann::json, std::size_t>> out;
  if (auto t = body.find("tools"); t != body.end()) out.push_back({*t, t->dump().size()});
  if (auto s = body.find("system"); s != body.end()) out.push_back({*s, text_size(*s)});
  if (auto m = body.find("messages"); m != body.end() && m->is_array())
    for (const auto& msg : *m)
      out.push_back({msg, msg.is_object() && msg.contains("content") ? text_size(msg["content"]) : 0});
  return out;
}

// A message's role, "" when it has none as text (a body is the user's: any shape comes).
std::string role_of(const nlohmann::json& msg) {
  const auto r = msg.is_object() ? msg.find("role") : msg.end();
  return msg.is_object() && r != msg.end() && r->is_string() ? r->get<std::string>() : "";
}

// The max_tokens (or max_completion_tokens) a body asks for; 0 when it names none as a number.
long long asked_max_tokens(const nlohmann::json& body) {
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (auto it = body.find(key); it != body.end() && it->is_number_integer()) return it->get<long long>();
  return 0;
}

// What of each body's prompt is text and what of it stays from request to request. One body:
// everything before its last user message (system prompt, tools, earlier turns). Several: the
// parts they all begin with.
std::vector<Shape> shapes_of(const std::vector<nlohmann::json>& bodies) {
  std::vector<std::vector<std::pair<nlohmann::json, std::size_t>>> parts;
  for (const auto& b : bodies) parts.push_back(parts_of(b));
  std::size_t common = parts.empty() ? 0 : parts.front().size();
  for (const auto& p : parts) {
    std::size_t k = 0;
    while (k < common && k < p.size() && p[k].first == parts.front()[k].first) ++k;
    common = k;
  }
  std::vector<Shape> out;
  for (const auto& p : parts) {
    std::size_t stable = common;
    if (bodies.size() == 1) {
      stable = 0;
      for (std::size_t i = 0; i < p.size(); ++i)
        if (role_of(p[i].first) == "user") stable = i;
    }
    Shape s;
    for (std::size_t i = 0; i < p.size(); ++i) (i < stable ? s.prefix : s.other) += p[i].second;
    s.text = s.prefix + s.other;
    out.push_back(s);
  }
  return out;
}

// `body` with `word` put in front of the text of its last user message.
nlohmann::json with_new_question(nlohmann::json body, const std::string& word) {
  auto& messages = body["messages"];
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (role_of(*it) != "user") continue;
    auto& content = (*it)["content"];
    if (content.is_string()) {
      content = word + " " + content.get<std::string>();
      return body;
    }
    if (content.is_array())
      for (auto& part : content)
        if (part.is_object() && part.contains("text") && part["text"].is_string()) {
          part["text"] = word + " " + part["text"].get<std::string>();
          return body;
        }
  }
  return body;
}

class ReplayCheck final : public Check {
 public:
  explicit ReplayCheck(const Options& o)
      : repeats_(o.whole(replay_setting::repeats)), max_bodies_(o.whole(replay_setting::max_bodies)) {
    const std::string text = o.text(replay_setting::body);
    std::istringstream lines(text);
    int n = 0;
    // One JSON document, or JSON Lines: a document that does not parse whole is read line by line.
    nlohmann::json whole = nlohmann::json::parse(text, nullptr, false);
    if (!whole.is_discarded() && whole.is_object()) {
      bodies_.push_back(std::move(whole));
    } else {
      for (std::string line; std::getline(lines, line);) {
        ++n;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
          o.problem(std::string(replay_setting::body.key) + ": line " + std::to_string(n) +
                    " is not a JSON object (a body is one OpenAI chat or Anthropic messages request)");
          continue;
        }
        bodies_.push_back(std::move(j));
      }
    }
    for (std::size_t i = 0; i < bodies_.size(); ++i)
      if (!bodies_[i].contains("messages") || !bodies_[i]["messages"].is_array())
        o.problem(std::string(replay_setting::body.key) + ": body " + std::to_string(i + 1) +
                  " has no \"messages\" list: it is not a chat or messages request");
    if (bodies_.size() > static_cast<std::size_t>(max_bodies_)) bodies_.resize(max_bodies_);
    shapes_ = shapes_of(bodies_);
  }
  const CheckInfo& info() const override { return kReplayInfo; }
  std::vector<Step> plan() const override {
    std::vector<Step> steps;
    for (std::size_t i = 0; i < bodies_.size(); ++i) {
      const auto& b = bodies_[i];
      // About four characters a token, as English text runs in the common tokenizers.
      const long long tokens = static_cast<long long>(shapes_[i].text / 4);
      steps.push_back({"your body " + std::to_string(i + 1) + " (" + std::to_string(b.dump().size()) +
                           " bytes), sent as it is",
                       repeats_, "target", tokens, asked_max_tokens(b)});
    }
    return steps;
  }

  CheckResult run(CheckContext& ctx) const override {
    CheckResult out = CheckResult::start(kReplayInfo.id);
    if (bodies_.empty()) return out.skip("no body to send (--body FILE)");
    RequestLoop loop(ctx, out);
    std::mt19937 rng(std::random_device{}());  // the repeats' words: no earlier run's in any cache
    std::vector<double> prompt, first, repeat, total, cached, output, bytes, max_tokens, stable_share;
    for (std::size_t i = 0; i < bodies_.size() && !loop.stopped(); ++i) {
      api::ChatRequest req;
      req.body = bodies_[i];
      req.model = ctx.models().target;
      if (req.model.empty() && !bodies_[i].contains("model"))
        return out.fail(core::make_error(core::ErrorCode::InvalidArgument,
                                         "body " + std::to_string(i + 1) + " names no model and no --model was given"));
      const std::string sent = api::build_chat_body(req);
      bytes.push_back(static_cast<double>(sent.size()));
      const Shape& shape = shapes_[i];
      if (shape.text > 0) stable_share.push_back(static_cast<double>(shape.prefix) / static_cast<double>(shape.text));
      if (const auto m = asked_max_tokens(bodies_[i]); m > 0) max_tokens.push_back(static_cast<double>(m));
      // The body's hash, not the body: it may hold what the user's own customers wrote.
      const nlohmann::json label = {{"body", i + 1}, {"body_sha256", core::sha256_hex(sent)}};
      for (int k = 0; k < repeats_ && !loop.stopped(); ++k) {
        ctx.progress("replay: body " + std::to_string(i + 1) + "/" + std::to_string(bodies_.size()) + ", send " +
                     std::to_string(k + 1) + "/" + std::to_string(repeats_));
        char word[24];
        std::snprintf(word, sizeof word, "q%08x", static_cast<unsigned>(rng()));
        req.body = k == 0 ? bodies_[i] : with_new_question(bodies_[i], word);
        auto s = loop.send(req, label);
        if (!s || !s->ok) continue;
        const auto ttft = server_ttft_ms(*s);
        if (ttft) (k == 0 ? first : repeat).push_back(*ttft);
        if (const auto t = server_total_ms(*s)) total.push_back(*t);
        if (s->prompt_tokens) prompt.push_back(static_cast<double>(*s->prompt_tokens));
        if (s->output_tokens) output.push_back(static_cast<double>(*s->output_tokens));
        if (k > 0 && s->cached_tokens) cached.push_back(static_cast<double>(*s->cached_tokens));
      }
    }
    out.set(replay_metric::failures_count, loop.failures());
    out.set(replay_metric::bodies_count, static_cast<double>(bodies_.size()));
    out.set(replay_metric::samples_count, static_cast<double>(first.size() + repeat.size()));
    const auto put = [&](const MetricKey& name, const std::vector<double>& v) {
      const auto m = stats::median(v);
      if (m) out.set(name, *m);
      return m;
    };
    const auto body_bytes = put(replay_metric::body_bytes, bytes);
    const auto tokens = put(replay_metric::prompt_tokens_count, prompt);
    const auto share = put(replay_metric::stable_prefix_ratio, stable_share);
    const double stable = tokens && share ? *tokens * *share : 0;
    if (tokens && share) out.set(replay_metric::stable_prefix_tokens_count, std::round(stable));
    put(replay_metric::max_tokens_count, max_tokens);
    put(replay_metric::output_tokens_p50_count, output);
    const auto cold = put(replay_metric::first_ttft_ms, first);
    const auto warm = put(replay_metric::repeat_ttft_p50_ms, repeat);
    put(replay_metric::total_p50_ms, total);
    const auto hit = put(replay_metric::cached_tokens_p50_count, cached);
    if (cold && warm && hit && stable > 0 && *hit >= 0.5 * stable) out.set(replay_metric::prefix_saved_ms, *cold - *warm);
    if (tokens && *tokens > 0 && body_bytes) out.set(replay_metric::bytes_per_token_ratio, *body_bytes / *tokens);
    return out;
  }

 private:
  int repeats_;
  int max_bodies_;
  std::vector<nlohmann::json> bodies_;
  std::vector<Shape> shapes_;  // each body's, computed once
};

}  // namespace

CheckEntry replay_entry() { return entry_of<ReplayCheck>(kReplayInfo); }

}  // namespace infdoctor::checks
