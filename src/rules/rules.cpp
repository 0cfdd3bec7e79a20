#include "rules/rules.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/json_text.h"
#include "core/strings.h"

namespace infdoctor::rules {
namespace {

using nlohmann::json;

int line_at(const std::string& text, std::size_t pos) {
  pos = std::min(pos, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(pos), '\n'));
}

// Where a rule and its keys sit in the file, for messages a person can jump to. Rules are looked
// up in file order from the previous one, and lines through an index of line ends, so a file of
// thousands of broken rules costs about its length, not its length times its rules.
struct Locator {
  const std::string& text;
  std::vector<std::size_t> line_ends;
  std::size_t rule_pos = 0;
  explicit Locator(const std::string& t) : text(t) {
    for (std::size_t i = t.find('\n'); i != std::string::npos; i = t.find('\n', i + 1)) line_ends.push_back(i);
  }
  int line(std::size_t pos) const {
    return 1 + static_cast<int>(std::lower_bound(line_ends.begin(), line_ends.end(), pos) - line_ends.begin());
  }
  int rule_line(const std::string& id) {
    const std::string needle = "\"" + id + "\"";
    auto p = text.find(needle, rule_pos == 0 ? 0 : rule_pos + 1);
    if (p == std::string::npos) p = text.find(needle);
    if (p != std::string::npos) rule_pos = p;
    return line(rule_pos);
  }
  int key_line(const std::string& key) const {
    // Search back to the rule's opening brace, then forward for the key, up to the next rule's id.
    auto start = text.rfind('{', rule_pos);
    if (start == std::string::npos) start = 0;
    auto end = text.find("\"id\"", rule_pos + 1);
    if (end == std::string::npos) end = text.size();
    const auto p = std::string_view(text).substr(start, end - start).find("\"" + key + "\"");
    return line(p == std::string_view::npos ? rule_pos : start + p);
  }
};

const std::set<std::string> kRuleKeys = {"id",    "cause",   "severity",     "title",   "when",
                                         "impact_ms", "impact_is", "confidence", "explain", "ask_provider", "actions",
                                         "evidence", "notes", "critical_when", "scope", "unless"};

// The metric names a template's placeholders use ("{name}" or "{name|form}", render_template).
std::vector<std::string> placeholders(const std::string& t) {
  std::vector<std::string> out;
  for (std::size_t i = t.find('{'); i != std::string::npos; i = t.find('{', i + 1)) {
    const auto j = t.find('}', i);
    if (j == std::string::npos) break;
    const std::string p = t.substr(i + 1, j - i - 1);
    out.push_back(p.substr(0, p.find('|')));
  }
  return out;
}

void load_one(const RuleFile& file, const std::set<std::string>& known, std::set<std::string>& ids, RuleSet& out,
              LoadReport& report) {
  const std::string& text = file.content;
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    report.errors.push_back(file.path + ":" + std::to_string(line_at(text, e.byte > 0 ? e.byte - 1 : 0)) +
                            ": not valid JSON: " + e.what());
    return;
  } catch (const json::exception& e) {  // a number out of range and the like: valid syntax, unreadable value
    report.errors.push_back(file.path + ":1: not readable JSON: " + e.what());
    return;
  }
  if (!doc.is_object() || !doc.contains("family") || !doc["family"].is_string() || !doc.contains("rules") ||
      !doc["rules"].is_array()) {
    report.errors.push_back(file.path + ":1: a rule file is {\"family\": \"...\", \"rules\": [...]}");
    return;
  }
  const std::string family = doc["family"];
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (it.key() != "family" && it.key() != "rules" && it.key() != "notes")
      report.warnings.push_back(file.path + ": unknown key '" + it.key() + "' (ignored)");
  Locator loc(text);
  for (std::size_t i = 0; i < doc["rules"].size(); ++i) {
    const json& r = doc["rules"][i];
    std::string id = r.is_object() && r.contains("id") && r["id"].is_string() ? r["id"].get<std::string>()
                                                                              : "#" + std::to_string(i + 1);
    const int line = loc.rule_line(id);
    bool bad = false;
    auto err = [&](const std::string& key, const std::string& what) {
      report.errors.push_back(file.path + ":" + std::to_string(key.empty() ? line : loc.key_line(key)) + ": rule " + id +
                              (key.empty() ? "" : ": " + key) + ": " + what);
      bad = true;
    };
    if (!r.is_object()) {
      err("", "must be an object");
      continue;
    }
    for (auto k = r.begin(); k != r.end(); ++k)
      if (!kRuleKeys.count(k.key()))
        report.warnings.push_back(file.path + ":" + std::to_string(loc.key_line(k.key())) + ": rule " + id +
                                  ": unknown key '" + k.key() + "' (ignored)");
    auto str = [&](const char* key, bool required) -> std::string {
      if (!r.contains(key)) {
        if (required) err(key, "missing");
        return {};
      }
      if (!r[key].is_string()) {
        err(key, "must be a string");
        return {};
      }
      return r[key].get<std::string>();
    };
    auto list = [&](const char* key) {
      std::vector<std::string> v;
      if (!r.contains(key)) return v;
      if (!r[key].is_array()) {
        err(key, "must be an array of strings");
        return v;
      }
      for (const auto& e : r[key]) {
        if (!e.is_string()) {
          err(key, "must be an array of strings");
          return v;
        }
        v.push_back(e.get<std::string>());
      }
      return v;
    };
    auto expr = [&](const char* key, const std::string& src) -> std::optional<Expression> {
      if (src.empty()) return std::nullopt;
      auto e = Expression::compile(src);
      if (!e.ok()) {
        err(key, "'" + src + "': " + e.error().message);
        return std::nullopt;
      }
      for (const auto& v : e->variables())
        if (!known.count(v)) err(key, "unknown metric '" + v + "' (no check emits it)");
      return std::move(e.value());
    };

    if (!r.contains("id") || !r["id"].is_string()) err("id", "missing");
    else if (id.rfind(family + ".", 0) != 0) err("id", "must start with the family, '" + family + ".'");
    else if (!ids.insert(id).second) err("id", "duplicate rule id");
    const std::string cause = str("cause", false);  // absent: a finding about the run itself
    if (!cause.empty() && std::find(causes().begin(), causes().end(), cause) == causes().end())
      err("cause", "'" + cause + "' is not in the cause taxonomy");
    // "scope": a name, or {"when": EXPR, "then": NAME, "else": NAME}; a rule with a cause and
    // without one loads with a warning.
    std::string scope, scope_else;
    std::optional<Expression> scope_when;
    auto scope_name = [&](const json& v) -> std::string {
      if (!v.is_string()) {
        err("scope", "must be a scope name or {\"when\", \"then\", \"else\"}");
        return {};
      }
      const std::string n = v.get<std::string>();
      if (std::find(scopes().begin(), scopes().end(), n) == scopes().end())
        err("scope", "'" + n + "' is not one of " + core::join(scopes(), ", "));
      return n;
    };
    if (!r.contains("scope")) {
      if (!cause.empty())
        report.warnings.push_back(file.path + ":" + std::to_string(line) + ": rule " + id +
                                  ": no scope (" + core::join(scopes(), ", ") + "): reports will not say where");
    } else if (r["scope"].is_object()) {
      const json& sc = r["scope"];
      if (!sc.contains("when") || !sc["when"].is_string() || !sc.contains("then") || !sc.contains("else") || sc.size() != 3) {
        err("scope", "a conditional scope is {\"when\": EXPR, \"then\": SCOPE, \"else\": SCOPE}");
      } else {
        scope_when = expr("scope", sc["when"].get<std::string>());
        scope = scope_name(sc["then"]);
        scope_else = scope_name(sc["else"]);
      }
    } else {
      scope = scope_name(r["scope"]);
    }
    const std::string sev = str("severity", true);
    const auto parsed_severity = core::value_of(kSeverityNames, sev);
    const Severity severity = parsed_severity.value_or(Severity::Warning);
    if (!parsed_severity && !sev.empty()) err("severity", "must be info, warning or critical");
    const std::string title = str("title", true);
    const std::string explain = str("explain", true);
    auto when = expr("when", str("when", true));
    auto impact = expr("impact_ms", str("impact_ms", true));
    // What the milliseconds are, in words: a report without them prints a bare number.
    const std::string impact_is = str("impact_is", false);
    if (impact_is.empty() && impact && !(impact->variables().empty() && impact->eval({}) == 0.0))
      report.warnings.push_back(file.path + ":" + std::to_string(loc.key_line("impact_ms")) + ": rule " + id +
                                ": impact_is missing: the report cannot say what the impact's milliseconds are");
    for (const auto& p : placeholders(impact_is))
      if (!known.count(p)) err("impact_is", "placeholder {" + p + "} is not a known metric");
    if (impact_is.find_first_of("()") != std::string::npos)
      err("impact_is", "no parentheses: reports print it inside a pair");
    std::optional<Expression> critical;
    if (r.contains("critical_when")) critical = expr("critical_when", str("critical_when", false));
    // "unless": an expression, or a list of them.
    std::vector<Expression> unless;
    if (r.contains("unless")) {
      const json& u = r["unless"];
      const std::vector<json> items = u.is_array() ? std::vector<json>(u.begin(), u.end()) : std::vector<json>{u};
      for (const auto& item : items) {
        if (!item.is_string()) {
          err("unless", "must be an expression or a list of expressions");
          break;
        }
        if (auto e = expr("unless", item.get<std::string>())) unless.push_back(std::move(*e));
      }
    }
    std::optional<double> conf_value;
    std::optional<Expression> conf_expr;
    if (!r.contains("confidence")) {
      err("confidence", "missing");
    } else if (r["confidence"].is_number()) {
      conf_value = r["confidence"].get<double>();
      if (!(*conf_value >= 0 && *conf_value <= 1)) err("confidence", "must lie in [0, 1]");
    } else if (r["confidence"].is_string()) {
      conf_expr = expr("confidence", r["confidence"].get<std::string>());
    } else {
      err("confidence", "must be a number or an expression");
    }
    for (const auto& p : placeholders(explain))
      if (!known.count(p)) err("explain", "placeholder {" + p + "} is not a known metric");
    const auto evidence = list("evidence");
    for (const auto& m : evidence)
      if (!known.count(m)) err("evidence", "unknown metric '" + m + "'");
    const auto ask = list("ask_provider");
    const auto actions = list("actions");
    auto check_placeholders = [&](const char* key, const std::vector<std::string>& texts) {
      for (const auto& text : texts)
        for (const auto& p : placeholders(text))
          if (!known.count(p)) err(key, "placeholder {" + p + "} is not a known metric");
    };
    check_placeholders("ask_provider", ask);
    check_placeholders("actions", actions);
    if (bad || !when || !impact) continue;
    Rule rule{id,        family, cause,    scope,   std::move(scope_when), scope_else, severity, title,
              std::move(*when), std::move(unless), std::move(*impact), impact_is, std::move(critical), conf_value,
              std::move(conf_expr), explain, ask,    actions,  evidence, file.path, line};
    out.rules.push_back(std::move(rule));
  }
}

std::string unit_of(const std::string& name) {
  const auto u = name.rfind('_');
  return u == std::string::npos ? "" : name.substr(u + 1);
}

}  // namespace

namespace {
// Each cause: the reference request's term its milliseconds sit in ("": on top of it), and the
// measure of one request that shows it (cause_signal).
struct CauseRow {
  std::string_view name, term, signal;
};
constexpr CauseRow kCauses[] = {
    {"network_rtt", "network", "connect"},   {"dns_slow", "", "dns"},
    {"tls_slow", "", "tls"},                 {"cold_start", "", "ttft"},
    {"prefill_bound", "prefill", "ttft"},    {"decode_bound", "decode", "tpot"},
    {"model_specific", "overhead", "tpot"},  {"provider_wide", "overhead", "ttft"},
    {"queueing", "", "ttft"},                {"serialization", "", "ttft"},
    {"rate_limited", "", "ttft"},            {"noisy_neighbour", "", "ttft"},
    {"slow_replica", "", "tpot"},            {"network_loss", "", "network_stall"},
    {"overloaded", "", "shed"},
    {"buffering", "overhead", "arrivals"},  // a held first token waits for its clump
    // Time the run's requests spent that no measured term explains (run/books.h): on top of the
    // reference request, whose terms are measured ones.
    {"unexplained", "", "total"},
};

const CauseRow* cause_row(std::string_view cause) {
  for (const auto& row : kCauses)
    if (row.name == cause) return &row;
  return nullptr;
}
}  // namespace

const std::vector<std::string>& causes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& row : kCauses) v.emplace_back(row.name);
    return v;
  }();
  return names;
}

std::string_view cause_term(std::string_view cause) {
  const CauseRow* row = cause_row(cause);
  return row ? row->term : std::string_view();
}

std::string_view cause_signal(std::string_view cause) {
  const CauseRow* row = cause_row(cause);
  return row ? row->signal : std::string_view();
}

namespace {
// Each scope and how a report says it.
constexpr std::pair<const char*, const char*> kScopes[] = {{"endpoint", "at the endpoint"},
                                                           {"target_model", "at the target model"},
                                                           {"intermediary", "in an intermediary"},
                                                           {"client_path", "on the client's path"}};
}  // namespace

const std::vector<std::string>& scopes() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& [name, _] : kScopes) v.push_back(name);
    return v;
  }();
  return names;
}

std::string cause_and_scope(const Finding& f) {
  for (const auto& [name, where] : kScopes)
    if (f.scope == name) return cause_label(f) + " " + where + (f.where.empty() ? "" : " (" + f.where + ")");
  return cause_label(f);
}

std::string describe_impact(const Finding& f, const std::map<std::string, double>& metrics) {
  if (f.impact_ms <= 0 && f.impact_is.empty()) return "no milliseconds attributed";
  std::string out;
  core::appendf(out, "%.0f ms", f.impact_ms);
  if (!f.impact_is.empty()) out += " (" + f.impact_is + ")";
  const double reference = reference_total_ms(metrics);
  if (reference <= 0) {
    core::appendf(out, ", %.0f %% of what the findings attribute together", f.share * 100);
    return out;
  }
  // The same choice reference_total_ms made: the workload's total where it was priced.
  const auto priced = metrics.find(kReferenceTotalMetric);
  const char* what =
      priced != metrics.end() && priced->second > 0 ? "reference request" : "median request of the baseline";
  const double part = f.share * reference;
  if (f.on_top) {
    core::appendf(out, ", on top of the %.0f ms %s (+%.0f %%)", reference, what, f.share * 100);
  } else if (part + 0.5 < f.impact_ms) {
    // Causes ranked above already explain the rest of these milliseconds (rules.h, share).
    core::appendf(out, "; %.0f ms of it not counted above, %.0f %% of the %.0f ms %s", part, f.share * 100, reference,
                  what);
  } else {
    core::appendf(out, ", %.0f %% of the %.0f ms %s", f.share * 100, reference, what);
  }
  return out;
}

std::string cause_label(const Finding& f) {
  if (!f.cause.empty()) return f.cause;
  if (f.rule.rfind("slo.", 0) == 0) return "limit";
  return f.rule.substr(0, f.rule.find('.'));  // the family: errors, tls
}

RuleSet load_texts(const std::vector<RuleFile>& files, const std::vector<std::string>& known_metrics,
                   LoadReport& report) {
  RuleSet out;
  const std::set<std::string> known(known_metrics.begin(), known_metrics.end());
  std::set<std::string> ids;
  for (const auto& f : files) {
    load_one(f, known, ids, out, report);
    out.files.push_back(f);
  }
  return out;
}

RuleSet load_dir(const std::string& dir, const std::vector<std::string>& known_metrics, LoadReport& report) {
  std::vector<RuleFile> files;
  std::error_code ec;
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") paths.push_back(e.path());
  if (ec) {
    report.errors.push_back(dir + ": cannot read the rules directory: " + ec.message());
    return {};
  }
  if (paths.empty()) report.errors.push_back(dir + ": no rule files (*.json)");
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
      report.errors.push_back(p.string() + ": cannot read");
      continue;
    }
    files.push_back(RuleFile{p.string(), ss.str()});
  }
  return load_texts(files, known_metrics, report);
}

std::string format_metric(const std::string& name, double v) {
  char buf[64];
  const std::string unit = unit_of(name);
  if (unit == "ms" || unit == "token") {
    std::snprintf(buf, sizeof buf, std::abs(v) >= 100 ? "%.0f ms" : "%.1f ms", v);
    std::string s = buf;
    if (unit == "token") s += " per token";
    return s;
  }
  const auto ends = [&](std::string_view tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends("_tokens_per_s")) std::snprintf(buf, sizeof buf, "%.0f tokens per second", v);
  else if (ends("_requests_per_s")) std::snprintf(buf, sizeof buf, "%.1f requests per second", v);
  else if (ends("_ms_per_mb")) std::snprintf(buf, sizeof buf, std::abs(v) >= 100 ? "%.0f ms per MB" : "%.1f ms per MB", v);
  else if (ends("_ms_per_1k_tokens")) std::snprintf(buf, sizeof buf, "%.2f ms per 1,000 tokens", v);
  else if (unit == "s") std::snprintf(buf, sizeof buf, "%.1f s", v);
  else if (unit == "count") std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (unit == "bytes" && std::abs(v) >= 1048576) std::snprintf(buf, sizeof buf, "%.1f MB", v / 1048576);
  else if (unit == "bytes" && std::abs(v) >= 10240) std::snprintf(buf, sizeof buf, "%.0f KB", v / 1024);
  else if (unit == "bytes") std::snprintf(buf, sizeof buf, "%.0f bytes", v);
  else if (unit == "ratio") std::snprintf(buf, sizeof buf, "%.2f", v);
  else if (unit == "pct") std::snprintf(buf, sizeof buf, "%.1f %%", v);
  else std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string render_template(const std::string& text, const std::map<std::string, double>& metrics) {
  // A sentence that names a value the run did not measure is left out whole: no sentence says
  // "n/a" in its middle. The marker cannot occur in a template's own text.
  constexpr char kUnmeasured = '\x01';
  const std::string filled = core::fill_placeholders(text, [&](const std::string& placeholder) {
    const auto bar = placeholder.find('|');
    const std::string name = placeholder.substr(0, bar);
    const std::string form = bar == std::string::npos ? "" : placeholder.substr(bar + 1);
    auto it = metrics.find(name);
    if (it == metrics.end()) return std::string(1, kUnmeasured);
    const double v = it->second;
    char buf[64];
    if (form == "%") {
      std::snprintf(buf, sizeof buf, v * 100 >= 10 || v == 0 ? "%.0f %%" : "%.1f %%", v * 100);
      return std::string(buf);
    }
    if (form == "times") {
      std::snprintf(buf, sizeof buf, v >= 10 ? "%.0f times" : "%.1f times", v);
      return std::string(buf);
    }
    if (!form.empty()) return core::count_of(v, form);
    return format_metric(name, v);
  });
  if (filled.find(kUnmeasured) == std::string::npos) return filled;
  std::string out;
  for (std::size_t start = 0; start < filled.size();) {
    // A sentence runs to ". " (or the end), its stop and space included.
    std::size_t end = filled.find(". ", start);
    end = end == std::string::npos ? filled.size() : end + 2;
    const std::string sentence = filled.substr(start, end - start);
    if (sentence.find(kUnmeasured) == std::string::npos) out += sentence;
    start = end;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void sort_findings(std::vector<Finding>& findings) {
  // Causes first, notes (info) after them; within each, by attributed milliseconds, then
  // confidence, then rule id, so equal input gives equal output.
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    const bool a_note = a.severity == Severity::Info, b_note = b.severity == Severity::Info;
    if (a_note != b_note) return b_note;
    if (a.impact_ms != b.impact_ms) return a.impact_ms > b.impact_ms;
    if (a.confidence != b.confidence) return a.confidence > b.confidence;
    return a.rule < b.rule;
  });
}

double reference_total_ms(const std::map<std::string, double>& metrics) {
  for (const char* name : {kReferenceTotalMetric, kReferenceFallbackMetric}) {
    const auto it = metrics.find(name);
    if (it != metrics.end() && it->second > 0) return it->second;
  }
  return 0;
}

std::vector<Finding> diagnose(const RuleSet& rules, const std::map<std::string, double>& metrics) {
  std::vector<Finding> out;
  for (const auto& r : rules.rules) {
    const auto when = r.when.eval(metrics);
    if (!when || *when == 0) continue;  // not measured, or not the case
    if (std::any_of(r.unless.begin(), r.unless.end(), [&](const Expression& e) {
          const auto u = e.eval(metrics);
          return u && *u != 0;
        }))
      continue;
    const auto impact = r.impact_ms.eval(metrics);
    if (!impact) continue;
    Finding f;
    f.rule = r.id;
    f.cause = r.cause;
    f.scope = r.scope;
    if (r.scope_when) {
      const auto holds = r.scope_when->eval(metrics);
      if (!holds || *holds == 0) f.scope = r.scope_else;
    }
    f.severity = r.severity;
    if (r.critical_when) {
      const auto c = r.critical_when->eval(metrics);
      if (c && *c != 0) f.severity = Severity::Critical;
    }
    f.impact_ms = std::max(0.0, *impact);
    f.impact_is = render_template(r.impact_is, metrics);
    double conf = r.confidence_value.value_or(0.5);
    if (r.confidence_expr) conf = r.confidence_expr->eval(metrics).value_or(0.5);
    f.confidence = std::clamp(conf, 0.0, 1.0);
    f.title = r.title;
    f.explanation = render_template(r.explain, metrics);
    for (const auto& m : r.evidence)
      if (auto it = metrics.find(m); it != metrics.end()) f.evidence[m] = it->second;
    for (const auto& v : r.when.variables())
      if (auto it = metrics.find(v); it != metrics.end()) f.evidence[v] = it->second;
    for (const auto& q : r.ask_provider)
      if (auto text = render_template(q, metrics); !text.empty()) f.ask_provider.push_back(std::move(text));
    for (const auto& a : r.actions)
      if (auto text = render_template(a, metrics); !text.empty()) f.actions.push_back(std::move(text));
    out.push_back(std::move(f));
  }
  // One finding per cause: of the most severe rules that fired for it, the one that attributes
  // the most milliseconds speaks for it (a note never hides a warning of the same cause); the
  // others stay beside it, in its `also`, in the same order. Findings without a cause (about the
  // run itself) all stay.
  std::sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if (a.cause != b.cause) return a.cause < b.cause;
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.impact_ms != b.impact_ms) return a.impact_ms > b.impact_ms;
    return a.rule < b.rule;
  });
  std::vector<Finding> speaking;
  for (auto& f : out) {
    if (!speaking.empty() && !f.cause.empty() && speaking.back().cause == f.cause) speaking.back().also.push_back(std::move(f));
    else speaking.push_back(std::move(f));
  }
  out = std::move(speaking);
  sort_findings(out);
  // Shares of the reference request as the report prints it (reference_total_ms): the workload's
  // reference request, else the baseline's median. It already holds what network, prefill,
  // decode, the model or buffering cost; causes inside it can explain the same milliseconds (a
  // slow target model is slow decode), so in rank order each takes what is left of it, never
  // more, and their shares add up to at most 100 %. A cold start, a rate limit, queueing behind
  // other requests, a fresh connection's DNS and TLS, a large body, a noisy neighbour or a slow
  // replica come on top of it: their share is what they add to it, and may pass 100 %. Without a
  // reference request, the shares are of what the findings attribute together.
  const double reference = reference_total_ms(metrics);
  double sum = 0;
  for (const auto& f : out) sum += f.impact_ms;
  double inside_left = reference;
  for (auto& f : out) {
    f.on_top = reference > 0 && !f.cause.empty() && cause_on_top(f.cause);
    double part = f.impact_ms;
    if (reference > 0 && !f.on_top) {
      part = std::min(part, inside_left);
      inside_left -= part;
    }
    const double whole = reference > 0 ? reference : sum;
    f.share = whole > 0 ? part / whole : 0.0;
    // A finding beside it: its own milliseconds of the same whole, taken from nothing.
    for (auto& a : f.also) {
      a.on_top = f.on_top;
      a.share = whole > 0 ? (a.on_top ? a.impact_ms : std::min(a.impact_ms, whole)) / whole : 0.0;
    }
  }
  return out;
}

nlohmann::json to_json(const std::vector<Finding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : findings) out.push_back(to_json(f));
  return out;
}

nlohmann::json to_json(const Finding& f) {
  return {{"rule", f.rule},
          {"cause", core::text_or_null(f.cause)},
          {"scope", core::text_or_null(f.scope)},
          {"where", core::text_or_null(f.where)},
          {"severity", severity_name(f.severity)},
          {"impact_ms", f.impact_ms},
          {"impact_is", f.impact_is},
          {"share", f.share},
          {"on_top", f.on_top},
          {"confidence", f.confidence},
          {"title", f.title},
          {"explanation", f.explanation},
          {"evidence", f.evidence},
          {"ask_provider", f.ask_provider},
          {"actions", f.actions},
          {"also", to_json(f.also)}};
}

namespace {

// A finding's fields; `also` (one level: a finding beside another has none) when `with_also`.
std::optional<Finding> read_finding(const nlohmann::json& j, bool with_also) {
  if (!j.is_object()) return std::nullopt;
  try {
    Finding f;
    f.rule = j.at("rule").get<std::string>();
    f.cause = j.at("cause").is_string() ? j.at("cause").get<std::string>() : "";
    if (auto it = j.find("scope"); it != j.end() && it->is_string()) f.scope = it->get<std::string>();  // absent before scopes
    if (auto it = j.find("where"); it != j.end() && it->is_string()) f.where = it->get<std::string>();
    const std::string sev = j.at("severity").get<std::string>();
    f.severity = core::value_of(kSeverityNames, sev).value_or(Severity::Info);
    f.impact_ms = j.at("impact_ms").get<double>();
    f.share = j.at("share").get<double>();
    if (auto it = j.find("impact_is"); it != j.end() && it->is_string()) f.impact_is = it->get<std::string>();
    if (auto it = j.find("on_top"); it != j.end() && it->is_boolean()) f.on_top = it->get<bool>();
    f.confidence = j.at("confidence").get<double>();
    f.title = j.at("title").get<std::string>();
    f.explanation = j.at("explanation").get<std::string>();
    f.evidence = j.at("evidence").get<std::map<std::string, double>>();
    f.ask_provider = j.at("ask_provider").get<std::vector<std::string>>();
    f.actions = j.at("actions").get<std::vector<std::string>>();
    if (auto it = j.find("also"); with_also && it != j.end() && it->is_array())  // absent before it was kept
      for (const auto& a : *it)
        if (auto g = read_finding(a, false)) f.also.push_back(std::move(*g));
    return f;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<Finding> finding_from_json(const nlohmann::json& j) { return read_finding(j, true); }

}  // namespace infdoctor::rules
