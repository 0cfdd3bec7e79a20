#include "fake/scenario.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <variant>

#include <nlohmann/json.hpp>

namespace infdoctor::fake {
namespace {

using nlohmann::json;
using core::ErrorCode;

// Reads fields of one JSON object, remembering the first problem with its path.
class Reader {
 public:
  Reader(const json& j, std::string path, std::string* err) : j_(j), path_(std::move(path)), err_(err) {
    if (!j_.is_object()) fail(path_, "must be an object");
  }
  template <typename T>
  void get(const char* key, T& out, double lo, double hi) {
    seen_.insert(key);
    if (!j_.is_object()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    if (!it->is_number()) return fail(path_ + "." + key, "must be a number");
    const double v = it->get<double>();
    if (v < lo || v > hi) return fail(path_ + "." + key, "must lie in [" + fmt(lo) + ", " + fmt(hi) + "]");
    out = static_cast<T>(v);
  }
  void get_bool(const char* key, bool& out) {
    seen_.insert(key);
    if (!j_.is_object()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    if (!it->is_boolean()) return fail(path_ + "." + key, "must be true or false");
    out = it->get<bool>();
  }
  void get_string(const char* key, std::string& out) {
    seen_.insert(key);
    if (!j_.is_object()) return;
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return;
    if (!it->is_string()) return fail(path_ + "." + key, "must be a string");
    out = it->get<std::string>();
  }
  const json* child(const char* key) {
    seen_.insert(key);
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void no_unknown_keys() {
    if (!j_.is_object()) return;
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) return fail(path_ + "." + it.key(), "unknown key");
  }
  void fail(const std::string& where, const std::string& what) {
    if (err_->empty()) *err_ = where + ": " + what;
  }

 private:
  static std::string fmt(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  const json& j_;
  std::string path_;
  std::string* err_;
  std::set<std::string> seen_;
};

constexpr double kMaxMs = 3600e3;

}  // namespace

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = {"429", "503", "529", "close_mid_stream", "stall", "error_event", "reset",
                                                 "garbage", "invalid_json", "huge_event", "endless_headers", "cut_stream", "html_502"};
  return kinds;
}

namespace {

FaultRule read_fault(const json& j, const std::string& path, std::string* err) {
  FaultRule f;
  Reader r(j, path, err);
  r.get_string("kind", f.kind);
  r.get("every", f.every, 0, 1e9);
  r.get("first", f.first, 0, 1e9);
  r.get("retry_after_s", f.retry_after_s, -1, 86400);
  r.get("after_tokens", f.after_tokens, 0, 1e9);
  r.get("stall_ms", f.stall_ms, 0, kMaxMs);
  r.get("bytes", f.bytes, 1, 1e9);
  r.no_unknown_keys();
  std::string names;
  for (const auto& k : fault_kinds()) names += (names.empty() ? "" : ", ") + k;
  const auto& kinds = fault_kinds();
  if (std::find(kinds.begin(), kinds.end(), f.kind) == kinds.end()) r.fail(path + ".kind", "must be one of " + names);
  if (f.every == 0 && f.first == 0) r.fail(path, "needs `every` or `first`");
  return f;
}

// The numbers of a model's own object: each key, the member it sets and the range it must lie in.
struct ModelNumber {
  const char* key;
  std::variant<double ModelSpec::*, int ModelSpec::*> member;
  double lo, hi;
};
const ModelNumber kModelNumbers[] = {
    {"overhead_ms", &ModelSpec::overhead_ms, 0, kMaxMs},
    {"prefill_ms_per_token", &ModelSpec::prefill_ms_per_token, 0, 1e4},
    {"prefill_growth_ms_per_1k_tokens", &ModelSpec::prefill_growth_ms_per_1k_tokens, 0, 1e4},
    {"prefix_cache_block_tokens", &ModelSpec::prefix_cache_block_tokens, 0, 1e5},
    {"prefix_cache_ttl_s", &ModelSpec::prefix_cache_ttl_s, 0, 1e6},
    {"context_tokens", &ModelSpec::context_tokens, 0, 1e8},
    {"decode_ms_per_token", &ModelSpec::decode_ms_per_token, 0, 1e5},
    {"jitter_ms", &ModelSpec::jitter_ms, 0, kMaxMs},
    {"slots", &ModelSpec::slots, 0, 1e5},
    {"parse_ms_per_kb", &ModelSpec::parse_ms_per_kb, 0, 1e4},
    {"tokens_per_event", &ModelSpec::tokens_per_event, 1, 1e4},
    {"flush_interval_ms", &ModelSpec::flush_interval_ms, 0, kMaxMs},
    {"decode_ms_per_1k_context", &ModelSpec::decode_ms_per_1k_context, 0, 1e4},
    {"decode_ms_per_1k_output", &ModelSpec::decode_ms_per_1k_output, 0, 1e4},
    {"batch_decode_penalty", &ModelSpec::batch_decode_penalty, 0, 10},
    {"tail_fraction", &ModelSpec::tail_fraction, 0, 1},
    {"tail_factor", &ModelSpec::tail_factor, 1, 1000},
    {"slow_every_s", &ModelSpec::slow_every_s, 0, 86400},
    {"slow_for_s", &ModelSpec::slow_for_s, 0, 86400},
    {"slow_factor", &ModelSpec::slow_factor, 1, 1000},
    {"bucket_size", &ModelSpec::bucket_size, 0, 1e6},
    {"bucket_per_s", &ModelSpec::bucket_per_s, 0, 1e6},
    {"tokens_per_min", &ModelSpec::tokens_per_min, 0, 1e9},
    {"reasoning_tokens", &ModelSpec::reasoning_tokens, 0, 1e6},
    {"comment_every_ms", &ModelSpec::comment_every_ms, 0, kMaxMs},
    {"prompt_tokens_per_word", &ModelSpec::prompt_tokens_per_word, 0.1, 10},
    {"template_tokens", &ModelSpec::template_tokens, 0, 1e5},
};
// Its switches: each key and the member it sets.
const std::pair<const char*, bool ModelSpec::*> kModelSwitches[] = {
    {"timing_headers", &ModelSpec::timing_headers},
    {"role_chunk", &ModelSpec::role_chunk},
    {"stamp_tokens", &ModelSpec::stamp_tokens},
    {"reasoning_visible", &ModelSpec::reasoning_visible},
    {"stream_usage", &ModelSpec::stream_usage},
    {"close_connections", &ModelSpec::close_connections},
};

ModelSpec read_model(const json& j, const std::string& path, std::string* err) {
  ModelSpec m;
  Reader r(j, path, err);
  for (const auto& f : kModelNumbers) std::visit([&](auto member) { r.get(f.key, m.*member, f.lo, f.hi); }, f.member);
  for (const auto& [key, member] : kModelSwitches) r.get_bool(key, m.*member);
  int out_tokens = -1;
  r.get("output_tokens", out_tokens, 1, 1e6);
  if (out_tokens > 0) m.output_tokens = out_tokens;
  if (const json* cs = r.child("cold_start")) {
    Reader c(*cs, path + ".cold_start", err);
    c.get("idle_s", m.cold_idle_s, 0, 86400);
    c.get("penalty_ms", m.cold_penalty_ms, 0, kMaxMs);
    c.get_bool("at_start", m.cold_at_start);
    c.get("loading_s", m.cold_loading_s, 0, 3600);
    c.no_unknown_keys();
  }
  if (const json* rp = r.child("replicas")) {
    Reader c(*rp, path + ".replicas", err);
    c.get("count", m.replicas, 1, 1000);
    c.get("slow_factor", m.slow_replica_factor, 1, 1000);
    c.get_string("header", m.replica_header);
    c.no_unknown_keys();
  }
  if (const json* rs = r.child("rejects")) {
    for (std::size_t i = 0; rs->is_array() && i < rs->size(); ++i) {
      const json& p = (*rs)[i];
      if (p == "max_tokens" || p == "temperature") m.rejects.push_back(p.get<std::string>());
      else r.fail(path + ".rejects[" + std::to_string(i) + "]", "must be \"max_tokens\" or \"temperature\"");
    }
    if (!rs->is_array()) r.fail(path + ".rejects", "must be an array");
  }
  if (const json* hs = r.child("headers")) {
    if (!hs->is_object()) r.fail(path + ".headers", "must be an object of header names to string values");
    for (auto it = hs->begin(); hs->is_object() && it != hs->end(); ++it) {
      if (!it.value().is_string()) r.fail(path + ".headers." + it.key(), "must be a string");
      else m.headers.emplace_back(it.key(), it.value().get<std::string>());
    }
  }
  if (const json* fs = r.child("faults")) {
    if (!fs->is_array()) {
      r.fail(path + ".faults", "must be an array");
    } else {
      for (std::size_t i = 0; i < fs->size(); ++i)
        m.faults.push_back(read_fault((*fs)[i], path + ".faults[" + std::to_string(i) + "]", err));
    }
  }
  r.no_unknown_keys();
  if (m.slow_for_s > m.slow_every_s) r.fail(path + ".slow_for_s", "must not exceed slow_every_s");
  if ((m.bucket_size > 0) != (m.bucket_per_s > 0)) r.fail(path + ".bucket_size", "needs bucket_per_s, and the other way round");
  if (m.bucket_size > 0 && m.bucket_size < 1) r.fail(path + ".bucket_size", "must be at least 1 request");
  return m;
}

}  // namespace

core::Result<Scenario> parse_scenario(const std::string& json_text, const std::string& origin) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) return core::make_error(ErrorCode::InvalidArgument, origin + ": not valid JSON");
  std::string err;
  Scenario s;
  Reader r(j, "scenario", &err);
  r.get("default_max_tokens", s.default_max_tokens, 1, 1e6);
  r.get("max_body_bytes", s.max_body_bytes, 0, 1e10);
  r.get_string("api_key", s.api_key);
  r.get("tls_handshake_delay_ms", s.tls_handshake_delay_ms, 0, kMaxMs);
  r.get("seed", s.seed, 0, 1e15);
  const json* models = r.child("models");
  if (!models || !models->is_object() || models->empty()) {
    r.fail("scenario.models", "must be an object naming at least one model");
  } else {
    for (auto it = models->begin(); it != models->end(); ++it)
      s.models[it.key()] = read_model(it.value(), "scenario.models." + it.key(), &err);
  }
  r.no_unknown_keys();
  if (!err.empty()) return core::make_error(ErrorCode::InvalidArgument, origin + ": " + err);
  return s;
}

core::Result<Scenario> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::make_error(ErrorCode::Io, "cannot read scenario file " + path);
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), path);
}

}  // namespace infdoctor::fake
