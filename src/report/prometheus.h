#pragma once
// The Prometheus text exposition (format 0.0.4) of runs, in Prometheus's conventions (what
// blackbox_exporter does for HTTP probes): base units (seconds, bytes), one family per quantity
// with its HELP and TYPE, `infdoctor_probe_success`, labels that tell targets and vantage points
// apart and never carry a key. `run --prom`, `run --push` and `infdoctor serve` all write this.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "prom/exposition.h"
#include "rules/rules.h"
#include "results/run_result.h"

namespace infdoctor::report {

// The labels every per-target series carries. `target` is a name the operator gave, or the base
// URL without credentials or query; `module` the profile (probe, quick, default, full); `vantage`
// the host or region the measurement was made from.
struct PromLabels {
  std::string target, model, module, vantage;
};

// A Prometheus histogram: upper bounds in seconds, a count per bucket (not cumulative; the last
// is +Inf), the sum and the count of what was observed.
struct Histogram {
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;
  double sum = 0;
  std::uint64_t count = 0;

  explicit Histogram(std::vector<double> upper_bounds = {});
  void observe(double v);
  void add(const Histogram& other);  // the same bounds
};

// What runs add to the counters: model requests by outcome, tokens by kind, and the histograms of
// time to first token and of the gaps between tokens of the reference requests (the baseline's
// at the target model; a probe's one request).
struct Tally {
  std::map<std::string, double> requests;  // outcome: ok, rate_limited, limit, error
  std::map<std::string, double> tokens;    // kind: prompt, output, cached, reasoning
  Histogram ttft, itl;

  Tally();
  void add(const Tally& other);
};
Tally tally(const results::RunResult& r);

// What earlier runs counted, read back from the text they left (a --prom file, a Pushgateway's
// group): the counters and histograms of the series with `labels`. A run adds its own to them, so
// the counters of a cron job's file or push stay counters from run to run, as Prometheus expects
// (a file removed starts again from zero: a counter reset). A histogram whose buckets differ is
// not carried over.
Tally tally_from(const prom::Exposition& earlier, const PromLabels& labels);

// One target as the exposition shows it.
struct PromTarget {
  PromLabels labels;
  const results::RunResult* run = nullptr;  // its latest run; nullptr before the first has ended
  int exit_code = 0;
  double run_seconds = 0;    // how long that run took
  double finished_at_s = 0;  // when it ended, Unix seconds
  // The counters: one run's own (a file, a push), or every run's since the exporter started.
  Tally totals;
  // The findings a run can give: every (cause, scope, severity) the rules can produce is a series
  // of 0 or 1 in every exposition, so a series never vanishes when its finding clears.
  const rules::RuleSet* rules = nullptr;
  std::vector<std::string> slo_metrics;  // --slo's metrics: infdoctor_slo_exceeded{metric}
};

// The whole exposition. `extra` (families already rendered, e.g. an exporter's own) goes last.
std::string render_prometheus(const std::vector<PromTarget>& targets, const std::string& extra = "");

// The target label of an endpoint known by its URL alone: scheme, host, port and path, without
// credentials or query.
std::string target_label(const std::string& base_url);

// The vantage label when none is given: this host's name.
std::string default_vantage();

// The module a run's plan amounts to: "quick", "full" or "default".
std::string module_of(bool quick, bool full);

// A metric family as the exposition declares it: its name, TYPE and HELP.
struct PromFamily {
  const char* name;
  const char* type;  // gauge, counter, histogram
  const char* help;
};

// Writes Prometheus text exposition families: each name's HELP and TYPE once, its samples kept
// together in the order families were first declared (as the format requires).
class PromWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;
  void family(const PromFamily& declared);
  // A sample of the family declared as `family`; `suffix` is "_bucket", "_sum", "_count" or "".
  void sample(const std::string& family, const Labels& labels, double value, const std::string& suffix = "");
  std::string text() const;

 private:
  struct Family {
    std::string name, type, help;
    std::string samples;
  };
  std::vector<Family> families_;
  Family& find(const std::string& name);
};

// The four labels in the order every series carries them.
PromWriter::Labels base_labels(const PromLabels& labels);

// "0.0521", "3", "+Inf", "NaN": short, and exact for whole numbers up to 2^53.
std::string prom_number(double v);

// Where a Pushgateway keeps one target's metrics: URL/metrics/job/infdoctor, then target, model,
// module and vantage, each value base64url-encoded (a target may hold '/').
std::string push_url(const std::string& gateway, const PromLabels& labels);
// What the gateway holds now (GET URL/metrics), for tally_from.
core::Result<prom::Exposition> read_gateway(const std::string& gateway, std::chrono::milliseconds timeout);
// Replaces that group's metrics with `text` (HTTP PUT). The error names the gateway without its
// credentials and what it answered.
core::Status push_prometheus(const std::string& gateway, const PromLabels& labels, const std::string& text,
                             std::chrono::milliseconds timeout);

}  // namespace infdoctor::report
