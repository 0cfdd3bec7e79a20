#pragma once
// One run from plan to outputs: the one path `run`, `compare` and `demo` take (and `explain`,
// for the diagnosis alone).
//   open()      the target parsed, the rules loaded, the limits (--slo) parsed, the history
//               opened, the bundle started and every other output path tried: whatever can fail
//               fails before the first request;
//   measure()   the plan's checks against the subject (measure_together: several subjects, one
//               check at a time against each);
//   diagnose()  the metrics flattened once, compared with the endpoint's own past, the rules and
//               the limits applied, the findings ranked;
//   finish()    results.json, the report, the bundle, Prometheus text and the history row, each
//               file written whole under a temporary name and renamed; the exit code.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "core/progress.h"
#include "history/history.h"
#include "report/exporter.h"
#include "report/prometheus.h"
#include "run/plan.h"
#include "run/runner.h"
#include "run/slo.h"

namespace infdoctor::run {

// The most model requests one run sends unless told otherwise (`run --max-requests`).
inline constexpr int kDefaultMaxRequests = 500;

// Who is measured: the endpoint, the models asked and the request budget.
struct Subject {
  api::Endpoint endpoint;
  std::string preset;  // its name, when the endpoint came from one: the run counts its signals
  checks::Models models;
  int max_requests = kDefaultMaxRequests;
  std::string metrics_url;  // the engine's /metrics, scraped before and after each check; "" none
};

struct Outputs {
  bool report = true;   // the terminal report on stdout (never with json "-")
  std::string json;     // results.json: a file, or "-" for stdout
  std::string prom;     // Prometheus text format
  std::string push;     // a Pushgateway's URL: the same text, pushed
  std::string bundle;   // the evidence bundle: a directory, or a .tar.gz
  std::string history;  // SQLite file of past runs
  // The user's own request bodies (--body) kept in the bundle as body.jsonl: only when asked
  // (--keep-body), since a body may hold what its owner would not attach to a ticket.
  bool keep_body = false;
};

struct SessionOptions {
  RunPlan plan;
  std::string rules_dir;  // empty: the built-in rules
  std::string slo;        // --slo NAME=LIMIT,...
  Outputs outputs;
  std::string command_line;  // redacted; the bundle records it
  bool quiet = false;        // no progress, no plan line, no notes: errors and warnings only
  bool verbose = false;      // and a line per model request as it completes
  // The Prometheus labels: the target's name (empty: its URL), the module (the plan's profile)
  // and the vantage point (empty: this host's name).
  std::string target_name{}, module{}, vantage{};
  // Where messages go: level "error", "warning", "note" or "" (a plain line), and the text. Unset:
  // stderr, "infdoctor: LEVEL: text".
  std::function<void(const std::string& level, const std::string& text)> log{};
};

class Session {
 public:
  static core::Result<std::unique_ptr<Session>> open(SessionOptions options, Subject subject);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Subject& subject() const { return subject_; }
  const rules::RuleSet& rules() const { return rules_; }
  // The steps this run will take, as the plan line and --dry-run state them.
  std::vector<PlannedStep> steps() const { return planned_steps(options_.plan, subject_.models); }

  results::RunResult measure();
  // The sessions' plans (the first one's) against each subject, one check at a time against each,
  // the first subject rotating: time of day and this machine's load fall on all alike.
  static std::vector<results::RunResult> measure_together(const std::vector<Session*>& sessions);
  void diagnose(results::RunResult& r);
  // Writes every output and returns the exit code: the run's own, or 3 when an output failed.
  int finish(results::RunResult& r);
  // The labels of this run's Prometheus series.
  report::PromLabels prom_labels() const;

 private:
  Session(SessionOptions options, Subject subject) : options_(std::move(options)), subject_(std::move(subject)) {}
  void announce() const;
  void say(const std::string& level, const std::string& text) const;
  // The outputs the flags ask for (report/exporter.h), in the order finish() writes them: the
  // report or JSON on stdout first, then the files, the history row, the bundle and the
  // Prometheus text. A failed one is said, and the others are written still.
  std::vector<std::unique_ptr<report::Exporter>> exporters(const results::RunResult& r, int code);

  SessionOptions options_;
  Subject subject_;
  rules::RuleSet rules_;
  std::vector<Slo> slos_;
  std::unique_ptr<history::History> history_;
  std::unique_ptr<EngineScraper> engine_;
  std::unique_ptr<bundle::Writer> bundle_;
  std::unique_ptr<bundle::SampleLog> samples_;
  std::unique_ptr<core::Progress> progress_;
  std::unique_ptr<Pacer> pacer_;
  std::unique_ptr<checks::CheckContext> ctx_;
  std::map<std::string, double> metrics_;  // the last diagnosed run's, flattened
  core::SteadyTime measure_started_{};
};

// A saved run diagnosed afresh (`explain`): the rules applied again, the run's own limits kept.
void rediagnose(results::RunResult& r, const rules::RuleSet& rules);

}  // namespace infdoctor::run
