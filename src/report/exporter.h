#pragma once
// The outputs of a run behind one interface: each chosen by its flag, made by the session once
// the diagnosis is final, and written whole from the results model. The report, --json and the
// Prometheus text (--prom, --push) are here; the history row (--history) in report/history.h; the
// evidence bundle (--bundle: summary.md, report.html, repro.sh, results.json, the samples and
// the manifest) in bundle/bundle.h. What a provider said (error messages, headers) may echo the
// key, so each exporter scrubs what it writes.
#include <functional>
#include <iosfwd>
#include <string>
#include <utility>

#include "core/result.h"
#include "report/prometheus.h"
#include "results/run_result.h"

namespace infdoctor::report {

// Where an exporter says what it did or warns ("evidence bundle written to ..."): level "" (news),
// "note" or "warning", and the text.
using Say = std::function<void(const std::string& level, const std::string& text)>;

class Exporter {
 public:
  virtual ~Exporter() = default;
  // Writes the run. A failure is returned, never said: the caller says it and writes the others.
  virtual core::Status write(const results::RunResult& r, const Say& say) = 0;
};

// The terminal report.
class TextExporter final : public Exporter {
 public:
  explicit TextExporter(std::ostream& out) : out_(out) {}
  core::Status write(const results::RunResult& r, const Say& say) override;

 private:
  std::ostream& out_;
};

// results.json: to a file, written whole, or to `out` when the path is "-".
class JsonExporter final : public Exporter {
 public:
  JsonExporter(std::string path, std::ostream& out) : path_(std::move(path)), out_(out) {}
  core::Status write(const results::RunResult& r, const Say& say) override;

 private:
  std::string path_;
  std::ostream& out_;
};

// The run's Prometheus text to a file (node_exporter's textfile collector) or to a Pushgateway.
// Its counters go on from what the file or the gateway held, so `base` (labels, exit code, the
// run's seconds and end, the rules and --slo's metrics) is taken once for both and each adds
// the run and the counters when it writes.
class PromFileExporter final : public Exporter {
 public:
  PromFileExporter(std::string path, PromTarget base) : path_(std::move(path)), base_(std::move(base)) {}
  core::Status write(const results::RunResult& r, const Say& say) override;

 private:
  std::string path_;
  PromTarget base_;
};

class PushExporter final : public Exporter {
 public:
  PushExporter(std::string gateway, PromTarget base) : gateway_(std::move(gateway)), base_(std::move(base)) {}
  core::Status write(const results::RunResult& r, const Say& say) override;

 private:
  std::string gateway_;
  PromTarget base_;
};

}  // namespace infdoctor::report
