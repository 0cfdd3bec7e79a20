#pragma once
// Rules are data (rules/*.json, one file per cause family). A rule names one cause of the
// taxonomy, a `when` and an `impact_ms` expression over metrics, a confidence (a number or an
// expression), a title, an explanation with {metric} placeholders, questions for the provider
// and actions. A rule whose metrics were not measured is not applicable: quiet, not an error.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/names.h"
#include "core/result.h"
#include "rules/expression.h"

namespace infdoctor::rules {

// The cause taxonomy (DESIGN.md, "Diagnosis").
const std::vector<std::string>& causes();
// The term of the reference request (run/workload.h) a cause's milliseconds sit in: network,
// overhead, prefill or decode; "" for a cause whose milliseconds come on top of the request (a
// cold start, a queue, a retry, a new connection's handshakes), whose share may pass 100 %.
std::string_view cause_term(std::string_view cause);
inline bool cause_on_top(std::string_view cause) { return cause_term(cause).empty(); }
// The measure of one request that shows a cause, for ranking the requests a ticket lists: ttft,
// tpot, connect, dns, tls, network_stall, shed (answered overloaded), arrivals (tokens per
// separate arrival); "" for a cause no single request shows.
std::string_view cause_signal(std::string_view cause);
// Where a cause sits: endpoint (every model and path of it), target_model (a small model on the
// same endpoint is fine), intermediary (a proxy, gateway or CDN between), client_path (this
// client's resolver or route).
const std::vector<std::string>& scopes();

enum class Severity { Info, Warning, Critical };
inline constexpr std::array kSeverityNames{core::NameRow<Severity>{Severity::Info, "info"},
                                           core::NameRow<Severity>{Severity::Warning, "warning"},
                                           core::NameRow<Severity>{Severity::Critical, "critical"}};
static_assert(core::in_enum_order(kSeverityNames) && kSeverityNames.size() == 3);
constexpr std::string_view severity_name(Severity s) { return core::name_of(kSeverityNames, s); }

struct Rule {
  std::string id;
  std::string family;
  std::string cause;
  // The scope: `scope`, or, with a scope_when, `scope` when it holds and scope_else otherwise (an
  // unmeasured condition does not hold).
  std::string scope;
  std::optional<Expression> scope_when;
  std::string scope_else;
  Severity severity = Severity::Warning;
  std::string title;
  Expression when;
  // The rule stays quiet when any of these holds (measured and non-zero): another rule speaks for
  // that case. Each is judged alone, so one unmeasured does not hide another.
  std::vector<Expression> unless;
  Expression impact_ms;
  std::string impact_is;  // what the milliseconds are, in words (a template, as `explain`)
  std::optional<Expression> critical_when;  // upgrades the finding to critical
  std::optional<double> confidence_value;
  std::optional<Expression> confidence_expr;
  std::string explain;
  std::vector<std::string> ask_provider;
  std::vector<std::string> actions;
  std::vector<std::string> evidence;
  std::string file;
  int line = 0;
};

struct RuleFile {
  std::string path;
  std::string content;  // as read: the bundle keeps the rules a diagnosis came from
};

struct RuleSet {
  std::vector<Rule> rules;
  std::vector<RuleFile> files;
};

struct LoadReport {
  std::vector<std::string> errors;    // "file:line: rule ID: field: what is wrong"
  std::vector<std::string> warnings;  // unknown keys and the like
};

// Loads every *.json of `dir` (sorted by name). Every file is checked and every problem listed;
// `known_metrics` are the names expressions, placeholders and evidence may use.
RuleSet load_dir(const std::string& dir, const std::vector<std::string>& known_metrics, LoadReport& report);
// The same for texts already in memory (the rules the build embeds, or a bundle's copy).
RuleSet load_texts(const std::vector<RuleFile>& files, const std::vector<std::string>& known_metrics,
                   LoadReport& report);

struct Finding {
  std::string rule;
  std::string cause;
  std::string scope;  // empty for a finding without a cause
  // What the answers' own headers name at that place ("server nginx/1.22.1; content-encoding
  // gzip"), for an intermediary; empty when they name nothing.
  std::string where;
  Severity severity = Severity::Info;
  double impact_ms = 0;
  std::string impact_is;   // what those milliseconds are, in words
  // Of the reference request (reference_total_ms): a part of it, or with `on_top` what the cause
  // adds to it (then it may pass 1).
  double share = 0;
  bool on_top = false;
  double confidence = 0;   // 0..1
  std::string title;
  std::string explanation;
  std::map<std::string, double> evidence;
  std::vector<std::string> ask_provider;
  std::vector<std::string> actions;
  // The other rules that fired for the same cause (evaluate keeps one finding per cause): each a
  // mechanism of its own with its own actions, not ranked and not counted in the shares; their
  // `also` is empty.
  std::vector<Finding> also;
};

// The reference request's end-to-end time the shares are of: the workload's reference request
// where it was priced (run/workload.h), else the median end to end of the requests sent as the
// user sends them (the check whose metric is tagged Typical::EndToEnd); 0 when neither was
// measured. Both are run metrics declared here, where the shares are reckoned; the run's metrics
// (results/run_metrics.h) refer to them and set them.
inline constexpr const char* kReferenceTotalMetric = "run.workload_total_ms";
inline constexpr const char* kReferenceFallbackMetric = "run.typical_total_ms";
double reference_total_ms(const std::map<std::string, double>& metrics);

// The finding's milliseconds in words, with its share of the reference request the report prints:
// "3429 ms (the reference reply's tokens at 60.0 ms each instead of 33 ms), 44 % of the 7761 ms
// reference request", or "on top of the 7761 ms reference request (+20 %)".
std::string describe_impact(const Finding& f, const std::map<std::string, double>& metrics);

// Applies every rule to the metrics ("check.metric" -> value) and ranks what fires (sort_findings).
std::vector<Finding> diagnose(const RuleSet& rules, const std::map<std::string, double>& metrics);

// Warnings and critical findings first, info notes after; each group by attributed milliseconds,
// then confidence, then rule id.
void sort_findings(std::vector<Finding>& findings);

// "{baseline.tpot_p50_ms}" -> "62.1 ms": placeholders formatted with the unit their name ends in;
// a form after a bar says it in words: "{run.slow_share_ratio|%}" -> "33 %",
// "{concurrency.queue_wait_p90_services_ratio|times}" -> "7.1 times", and any other word is the
// noun a count counts, plural unless it is one: "{concurrency.parallelism_count|stream}" ->
// "3 streams".
std::string render_template(const std::string& text, const std::map<std::string, double>& metrics);
std::string format_metric(const std::string& name, double value);
// The cause as reports print it: the taxonomy's name, "limit" for a violated --slo, else the rule's
// family (errors.failed_requests: "errors").
std::string cause_label(const Finding& f);
// The cause and where it sits, as reports print them: "decode_bound at the target model", and
// "buffering at an intermediary (server nginx/1.22.1)" when the headers name it.
std::string cause_and_scope(const Finding& f);

nlohmann::json to_json(const Finding& f);
// A ranked diagnosis as results.json holds it.
nlohmann::json to_json(const std::vector<Finding>& findings);
std::optional<Finding> finding_from_json(const nlohmann::json& j);

}  // namespace infdoctor::rules
