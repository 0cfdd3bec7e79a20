#include "report/prometheus.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <tuple>

#include "checks/baseline.h"
#include "checks/coldstart.h"
#include "checks/registry.h"
#include "checks/sweep.h"
#include "core/exit_code.h"
#include "core/redact.h"
#include "http/client.h"
#include "core/version.h"
#include "stats/fit.h"

namespace infdoctor::report {
namespace {

// vLLM's own buckets (vllm:time_to_first_token_seconds, vllm:time_per_output_token_seconds), so
// infdoctor's histograms and the engine's can be set side by side; first-token buckets go on to
// 80 s for hosted APIs that queue, and the gaps start at 5 ms for fast decoders.
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                         0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};
const std::vector<double> kItlBounds = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                        0.3,   0.4,  0.5,   0.75, 1.0,   2.5};

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

PromWriter::Labels with(PromWriter::Labels labels, const std::string& name, const std::string& value) {
  labels.emplace_back(name, value);
  return labels;
}

// Every answered model request of the run.
std::vector<const api::RequestSample*> answered(const results::RunResult& r) {
  std::vector<const api::RequestSample*> out;
  for (const auto& c : r.checks)
    for (const auto& ls : c.requests)
      if (ls.sample.ok) out.push_back(&ls.sample);
  return out;
}

// The requests a run's timings stand for: those at the target model of the check that declares
// its requests the reference (the request as the user sends it), else every answered one (a
// probe's one request).
std::vector<const api::RequestSample*> reference_samples(const results::RunResult& r) {
  std::vector<const api::RequestSample*> out;
  for (const auto& c : r.checks)
    if (checks::is_reference(c.id))
      for (const auto& ls : c.requests)
        if (ls.sample.ok && (r.models.target.empty() || ls.sample.model == r.models.target)) out.push_back(&ls.sample);
  if (!out.empty()) return out;
  return answered(r);
}

std::optional<double> median_of(const std::vector<const api::RequestSample*>& samples,
                                const std::function<std::optional<double>(const api::RequestSample&)>& get) {
  std::vector<double> v;
  for (const auto* s : samples)
    if (auto x = get(*s)) v.push_back(*x);
  return stats::median(v);
}

// The long tail of a run's metrics, each in the family of its unit: checks::baseline_metric::ttft_p50_ms.name is
// infdoctor_check_seconds{check="baseline",name="ttft_p50"} in seconds.
struct UnitFamily {
  const char* suffix;
  const char* family;
  double scale;
  const char* help;
};
constexpr UnitFamily kUnitFamilies[] = {
    {"_ms_per_token", "infdoctor_check_seconds_per_token", 1e-3, "A per-token time of the last run, by check and name."},
    {"_tokens_per_s", "infdoctor_check_tokens_per_second", 1, "A token rate of the last run, by check and name."},
    {"_requests_per_s", "infdoctor_check_requests_per_second", 1, "A request rate of the last run, by check and name."},
    {"_ms", "infdoctor_check_seconds", 1e-3, "A time the last run measured, by check and name."},
    {"_s", "infdoctor_check_seconds", 1, "A time the last run measured, by check and name."},
    {"_bytes", "infdoctor_check_bytes", 1, "A size the last run measured, by check and name."},
    {"_ratio", "infdoctor_check_ratio", 1, "A ratio (0 to 1, or a factor) the last run measured, by check and name."},
};
constexpr const char* kOtherFamily = "infdoctor_check_value";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void Histogram::observe(double v) {
  if (!std::isfinite(v)) return;
  const auto at = std::lower_bound(bounds.begin(), bounds.end(), v);
  ++counts[static_cast<std::size_t>(at - bounds.begin())];
  sum += v;
  ++count;
}

void Histogram::add(const Histogram& other) {
  if (other.counts.size() != counts.size()) return;
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
  count += other.count;
}

Tally::Tally() : ttft(kTtftBounds), itl(kItlBounds) {
  for (const char* o : {"ok", "rate_limited", "limit", "error"}) requests[o] = 0;
  for (const char* k : {"prompt", "output", "cached", "reasoning"}) tokens[k] = 0;
}

void Tally::add(const Tally& other) {
  for (const auto& [k, v] : other.requests) requests[k] += v;
  for (const auto& [k, v] : other.tokens) tokens[k] += v;
  ttft.add(other.ttft);
  itl.add(other.itl);
}

Tally tally(const results::RunResult& r) {
  Tally t;
  for (const auto& c : r.checks)
    for (const auto& ls : c.requests) {
      const api::RequestSample& s = ls.sample;
      const char* outcome = s.ok                     ? "ok"
                            : s.http_status == 429   ? "rate_limited"
                            : !api::is_failure(s)    ? "limit"
                                                     : "error";
      t.requests[outcome] += 1;
      t.tokens["prompt"] += static_cast<double>(s.prompt_tokens.value_or(0));
      t.tokens["output"] += static_cast<double>(s.output_tokens.value_or(0));
      t.tokens["cached"] += static_cast<double>(s.cached_tokens.value_or(0));
      t.tokens["reasoning"] += static_cast<double>(s.reasoning_tokens.value_or(0));
    }
  for (const auto* s : reference_samples(r)) {
    if (s->ttft_ms) t.ttft.observe(*s->ttft_ms / 1000.0);
    for (double gap : s->itl_ms) t.itl.observe(gap / 1000.0);
  }
  return t;
}

PromWriter::Labels base_labels(const PromLabels& l) {
  return {{"target", l.target}, {"model", l.model}, {"module", l.module}, {"vantage", l.vantage}};
}

Tally tally_from(const prom::Exposition& earlier, const PromLabels& labels) {
  Tally t;
  const auto mine = base_labels(labels);
  const auto value = [&](const std::string& name, const std::string& key, const std::string& v) {
    auto match = mine;
    if (!key.empty()) match.emplace_back(key, v);
    return prom::sum(earlier, name, match).value_or(0);
  };
  for (auto& [outcome, n] : t.requests) n = value("infdoctor_requests_total", "outcome", outcome);
  for (auto& [kind, n] : t.tokens) n = value("infdoctor_tokens_total", "kind", kind);
  for (auto [name, h] : {std::pair<std::string, Histogram*>{"infdoctor_time_to_first_token_seconds", &t.ttft},
                         {"infdoctor_inter_token_seconds", &t.itl}}) {
    // The cumulative count at each bound, read by the bound's value ("1" and "1.0" alike).
    std::map<double, double> at;
    for (const auto& s : earlier.samples) {
      if (s.name != name + "_bucket") continue;
      bool all = true;
      for (const auto& [k, v] : mine) all = all && s.label(k) == v;
      const auto le = s.label("le");
      if (!all || !le) continue;
      at[*le == "+Inf" ? INFINITY : std::strtod(le->c_str(), nullptr)] = s.value;
    }
    if (at.size() != h->counts.size()) continue;  // none earlier, or other buckets
    double previous = 0;
    std::size_t i = 0;
    bool same = true;
    for (const auto& [bound, cumulative] : at) {
      if (i < h->bounds.size() && std::fabs(bound - h->bounds[i]) > 1e-12 * std::max(1.0, bound)) same = false;
      h->counts[i++] = static_cast<std::uint64_t>(std::max(0.0, cumulative - previous));
      previous = cumulative;
    }
    if (!same) {
      *h = Histogram(h->bounds);
      continue;
    }
    h->sum = value(name + "_sum", "", "");
    h->count = static_cast<std::uint64_t>(value(name + "_count", "", ""));
  }
  return t;
}

std::string target_label(const std::string& base_url) {
  std::string out = base_url.substr(0, base_url.find_first_of("?#"));
  const auto scheme_end = out.find("://");
  const auto host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const auto at = out.rfind('@', out.find('/', host_start));
  if (at != std::string::npos && at >= host_start) out.erase(host_start, at + 1 - host_start);
  return out;
}

std::string default_vantage() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

std::string module_of(bool quick, bool full) { return quick ? "quick" : full ? "full" : "default"; }

std::string prom_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

PromWriter::Family& PromWriter::find(const std::string& name) {
  for (auto& f : families_)
    if (f.name == name) return f;
  families_.push_back({name, "untyped", "", ""});
  return families_.back();
}

void PromWriter::family(const PromFamily& declared) {
  Family& f = find(declared.name);
  f.type = declared.type;
  f.help = declared.help;
}

void PromWriter::sample(const std::string& family, const Labels& labels, double value, const std::string& suffix) {
  Family& f = find(family);
  f.samples += family + suffix;
  if (!labels.empty()) {
    f.samples += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i) f.samples += ',';
      f.samples += labels[i].first + "=\"" + escape_label(labels[i].second) + '"';
    }
    f.samples += '}';
  }
  f.samples += ' ' + prom_number(value) + '\n';
}

std::string PromWriter::text() const {
  std::string out;
  for (const auto& f : families_) {
    if (f.samples.empty()) continue;
    out += "# HELP " + f.name + ' ' + f.help + '\n';
    out += "# TYPE " + f.name + ' ' + f.type + '\n';
    out += f.samples;
  }
  return out;
}

namespace {

void histogram(PromWriter& w, const std::string& name, const PromWriter::Labels& labels, const Histogram& h) {
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = i < h.bounds.size() ? prom_number(h.bounds[i]) : "+Inf";
    w.sample(name, with(labels, "le", le), static_cast<double>(cumulative), "_bucket");
  }
  w.sample(name, labels, h.sum, "_sum");
  w.sample(name, labels, static_cast<double>(h.count), "_count");
}

// The run's own families, in the order the exposition declares them.
constexpr PromFamily kRunFamilies[] = {
    {"infdoctor_probe_success", "gauge",
     "1 when the last run measured what it came for (the model answered), 0 when it could not or no run "
     "has finished yet."},
    {"infdoctor_probe_duration_seconds", "gauge",
     "How long the last run took."},
    {"infdoctor_exit_code", "gauge",
     "The last run's exit code: 0 healthy, 1 degraded, 2 critical, 3 could not run."},
    {"infdoctor_last_run_timestamp_seconds", "gauge",
     "When the last run ended, in Unix seconds."},
    {"infdoctor_phase_duration_seconds", "gauge",
     "Median time of each phase of the reference request: dns, connect, tls, server_wait (request sent to "
     "first byte), first_token (first byte to first token), generation (first to last token)."},
    {"infdoctor_time_to_first_token_seconds", "histogram",
     "Time to first token of the reference requests."},
    {"infdoctor_inter_token_seconds", "histogram",
     "Gaps between consecutive tokens of the reference requests."},
    {"infdoctor_prefill_seconds_per_token", "gauge",
     "Prefill time per prompt token, fitted over the prompt sweep."},
    {"infdoctor_decode_seconds_per_token", "gauge",
     "Decode time per output token, fitted over the max_tokens sweep."},
    {"infdoctor_cold_start_penalty_seconds", "gauge",
     "Extra time to first token after an idle gap (0 when no gap measured made one)."},
    {"infdoctor_requests_total", "counter",
     "Model requests sent, by outcome: ok, rate_limited, limit (a limit the endpoint stated, or the run's "
     "own deadline), error."},
    {"infdoctor_tokens_total", "counter",
     "Tokens the answers' usage counted, by kind: prompt, output, cached, reasoning."},
    {"infdoctor_finding", "gauge",
     "1 when the last run found this cause at this scope and severity, else 0; every cause the rules can "
     "find is present."},
    {"infdoctor_finding_impact_seconds", "gauge",
     "Milliseconds, as seconds, that the last run attributes to each cause on the reference request (0 "
     "when not found)."},
    {"infdoctor_slo_exceeded", "gauge",
     "1 when the last run exceeded the --slo limit on this metric, else 0."},
    {"infdoctor_check_status", "gauge",
     "Each check of the last run: 0 ok, 1 skipped, 2 error."},
};

void declare(PromWriter& w) {
  for (const auto& f : kRunFamilies) w.family(f);
  for (const auto& u : kUnitFamilies) w.family({u.family, "gauge", u.help});
  w.family({kOtherFamily, "gauge",
            "Any other measurement of the last run (counts and compound units), by check and name; the name ends in "
            "its unit."});
}

void render_target(PromWriter& w, const PromTarget& t) {
  const auto labels = base_labels(t.labels);
  for (const auto& [outcome, n] : t.totals.requests) w.sample("infdoctor_requests_total", with(labels, "outcome", outcome), n);
  for (const auto& [kind, n] : t.totals.tokens) w.sample("infdoctor_tokens_total", with(labels, "kind", kind), n);
  histogram(w, "infdoctor_time_to_first_token_seconds", labels, t.totals.ttft);
  histogram(w, "infdoctor_inter_token_seconds", labels, t.totals.itl);
  if (!t.run) {
    // An exporter's target before its first run ends: there from the start, not yet a success.
    w.sample("infdoctor_probe_success", labels, 0);
    return;
  }
  const results::RunResult& r = *t.run;
  const bool success = r.unreachable.empty() && t.exit_code != core::kExitCouldNotRun;
  w.sample("infdoctor_probe_success", labels, success ? 1 : 0);
  w.sample("infdoctor_probe_duration_seconds", labels, t.run_seconds);
  w.sample("infdoctor_exit_code", labels, t.exit_code);
  w.sample("infdoctor_last_run_timestamp_seconds", labels, std::round(t.finished_at_s));

  // The phases of the reference request; connection set-up from whichever requests made one.
  using S = api::RequestSample;
  const auto ref = reference_samples(r);
  const auto all = answered(r);
  const auto diff = [](const std::optional<double>& a, const std::optional<double>& b) -> std::optional<double> {
    if (a && b) return *a - *b;
    return std::nullopt;
  };
  const std::pair<const char*, std::optional<double>> phases[] = {
      {"dns", median_of(all, [](const S& s) { return s.dns_ms; })},
      {"connect", median_of(all, [](const S& s) { return s.connect_ms; })},
      {"tls", median_of(all, [](const S& s) { return s.tls_ms; })},
      {"server_wait", median_of(ref, [](const S& s) { return s.server_wait_ms; })},
      {"first_token", median_of(ref, [&](const S& s) { return diff(s.ttft_ms, s.ttfb_ms); })},
      {"generation", median_of(ref, [&](const S& s) { return diff(s.total_ms, s.ttft_ms); })},
  };
  for (const auto& [phase, ms] : phases)
    if (ms) w.sample("infdoctor_phase_duration_seconds", with(labels, "phase", phase), std::max(0.0, *ms) / 1000.0);

  const auto flat = results::flatten_metrics(r);
  const auto get = [&](const std::string& name) -> std::optional<double> {
    auto it = flat.find(name);
    if (it == flat.end()) return std::nullopt;
    return it->second;
  };
  if (auto v = get(checks::sweep_metric::prefill_ms_per_token.name)) w.sample("infdoctor_prefill_seconds_per_token", labels, *v / 1000.0);
  if (auto v = get(checks::sweep_metric::decode_ms_per_token.name)) w.sample("infdoctor_decode_seconds_per_token", labels, *v / 1000.0);
  for (const auto& c : r.checks)
    if (c.id == checks::coldstart_metric::penalty_ms.check() && c.status == checks::CheckStatus::Ok)
      w.sample("infdoctor_cold_start_penalty_seconds", labels, get(checks::coldstart_metric::penalty_ms.name).value_or(0) / 1000.0);

  // Findings: every (cause, scope, severity) the rules can give, 1 for those this run gave.
  std::set<std::tuple<std::string, std::string, std::string>> domain, fired;
  std::map<std::string, double> impact;  // cause -> the largest impact found, ms
  if (t.rules)
    for (const auto& rule : t.rules->rules) {
      if (rule.cause.empty()) continue;
      impact.emplace(rule.cause, 0);
      std::vector<std::string> scopes{rule.scope};
      if (rule.scope_when) scopes.push_back(rule.scope_else);
      std::vector<rules::Severity> severities{rule.severity};
      if (rule.critical_when) severities.push_back(rules::Severity::Critical);
      for (const auto& sc : scopes)
        for (auto sev : severities) domain.emplace(rule.cause, sc, std::string(rules::severity_name(sev)));
    }
  for (const auto& f : r.diagnosis) {
    if (f.cause.empty()) continue;
    const auto key = std::make_tuple(f.cause, f.scope, std::string(rules::severity_name(f.severity)));
    domain.insert(key);
    fired.insert(key);
    impact[f.cause] = std::max(impact[f.cause], f.impact_ms);
  }
  for (const auto& key : domain) {
    const auto& [cause, scope, severity] = key;
    w.sample("infdoctor_finding", with(with(with(labels, "cause", cause), "scope", scope), "severity", severity),
             fired.count(key) ? 1 : 0);
  }
  for (const auto& [cause, ms] : impact)
    w.sample("infdoctor_finding_impact_seconds", with(labels, "cause", cause), ms / 1000.0);
  for (const auto& m : t.slo_metrics) {
    const bool exceeded = std::any_of(r.diagnosis.begin(), r.diagnosis.end(),
                                      [&](const rules::Finding& f) { return f.rule == "slo." + m; });
    w.sample("infdoctor_slo_exceeded", with(labels, "metric", m), exceeded ? 1 : 0);
  }

  for (const auto& c : r.checks)
    w.sample("infdoctor_check_status", with(labels, "check", c.id), static_cast<int>(c.status));
  std::set<std::pair<std::string, std::string>> used;  // (family, check.name): a name stripped of its unit once
  for (const auto& [name, v] : flat) {
    const auto dot = name.find('.');
    const std::string check = name.substr(0, dot), quantity = name.substr(dot + 1);
    const UnitFamily* unit = nullptr;
    for (const auto& u : kUnitFamilies)
      if (ends_with(quantity, u.suffix)) {
        unit = &u;
        break;
      }
    std::string family = unit ? unit->family : kOtherFamily;
    std::string short_name = unit ? quantity.substr(0, quantity.size() - std::string(unit->suffix).size()) : quantity;
    if (!used.emplace(family, check + "." + short_name).second) {
      family = kOtherFamily;
      short_name = quantity;
      unit = nullptr;
    }
    w.sample(family, with(with(labels, "check", check), "name", short_name), unit ? v * unit->scale : v);
  }
}

std::string base64url(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : in) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  while (out.size() % 4) out.push_back('=');
  return out;
}

}  // namespace

std::string push_url(const std::string& gateway, const PromLabels& labels) {
  std::string url = gateway;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/metrics/job/infdoctor";
  // An empty value is "=" in the Pushgateway's base64 form.
  for (const auto& [name, value] : base_labels(labels))
    url += "/" + name + "@base64/" + (value.empty() ? std::string("=") : base64url(value));
  return url;
}

core::Result<prom::Exposition> read_gateway(const std::string& gateway, std::chrono::milliseconds timeout) {
  http::Request req;
  req.url = gateway;
  while (!req.url.empty() && req.url.back() == '/') req.url.pop_back();
  req.url += "/metrics";
  req.timeout = timeout;
  req.connect_timeout = std::min(timeout, std::chrono::milliseconds(5000));
  req.max_body_bytes = 64u << 20;
  http::Client client;
  const http::Response resp = client.perform(req);
  const std::string where = "cannot read the Pushgateway " + core::redact_url(gateway);
  if (!resp.status.ok()) return core::make_error(core::ErrorCode::Io, where, resp.status.error().message);
  if (resp.http_status != 200) return core::make_error(core::ErrorCode::Io, where, "HTTP " + std::to_string(resp.http_status));
  auto e = prom::parse_exposition(resp.body);
  if (!e.ok()) return core::make_error(core::ErrorCode::Io, where, e.error().message);
  return e;
}

core::Status push_prometheus(const std::string& gateway, const PromLabels& labels, const std::string& text,
                             std::chrono::milliseconds timeout) {
  http::Request req;
  req.method = "PUT";
  req.url = push_url(gateway, labels);
  req.headers = {"Content-Type: text/plain; version=0.0.4; charset=utf-8"};
  req.body = text;
  req.timeout = timeout;
  req.connect_timeout = std::min(timeout, std::chrono::milliseconds(5000));
  http::Client client;
  const http::Response resp = client.perform(req);
  const std::string where = "cannot push to the Pushgateway " + core::redact_url(gateway);
  if (!resp.status.ok())
    return core::make_error(core::ErrorCode::Io, where, resp.status.error().message);
  if (resp.http_status / 100 != 2) {
    std::string said = resp.body.substr(0, 300);
    if (auto nl = said.find('\n'); nl != std::string::npos) said.resize(nl);
    return core::make_error(core::ErrorCode::Io, where, "HTTP " + std::to_string(resp.http_status) + (said.empty() ? "" : ": " + said));
  }
  return {};
}

std::string render_prometheus(const std::vector<PromTarget>& targets, const std::string& extra) {
  PromWriter w;
  declare(w);
  for (const auto& t : targets) render_target(w, t);
  w.family({"infdoctor_build_info", "gauge", "Always 1; the version of infdoctor that measured."});
  w.sample("infdoctor_build_info", PromWriter::Labels{{"version", std::string(core::kVersion)}}, 1);
  return w.text() + extra;
}

}  // namespace infdoctor::report
