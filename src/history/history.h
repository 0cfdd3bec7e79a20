#pragma once
// Run history in SQLite: every run's key metrics, so a scheduled check can compare an endpoint
// against its own past. The file carries its schema version (PRAGMA user_version) and is
// migrated forward on open. Writers take the write lock up front (BEGIN IMMEDIATE) in WAL mode
// and wait for each other (busy timeout), so two runs from cron can share one file.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

struct sqlite3;

namespace infdoctor::history {

constexpr int kSchemaVersion = 2;

// The metrics a run keeps in history: the layers an on-call engineer trends (tags.history).
const std::vector<std::string>& kept_metrics();

struct RunRecord {
  long long id = 0;
  std::string started_at;  // RFC 3339 UTC
  std::string target;      // redacted base URL
  std::string model;
  int exit_code = 0;
  std::string top_finding;  // rule id of diagnosis[0], "" when healthy
  bool partial = false;
  std::map<std::string, double> metrics;
};

class History {
 public:
  static core::Result<std::unique_ptr<History>> open(const std::string& path);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  int schema_version() const;
  // Stores a run and the kept metrics it has; returns its id.
  core::Result<long long> record(const RunRecord& run);
  // The newest `limit` runs, oldest first; for one target and model when both are given.
  core::Result<std::vector<RunRecord>> runs(int limit, const std::string& target = {}, const std::string& model = {});
  // The endpoint's own past as rules see it: `history.*` metrics of `current` against the runs
  // of the same target and model started in the `days` before it.
  core::Result<std::map<std::string, double>> compare(const std::map<std::string, double>& current,
                                                      const std::string& target, const std::string& model,
                                                      const std::string& now_rfc3339, int days = 7);

 private:
  explicit History(sqlite3* db) : db_(db) {}
  core::Status exec(const std::string& sql);
  core::Status migrate();
  sqlite3* db_;
};

// The metric names compare() may produce, for the rules loader.
std::vector<std::string> history_metric_names();

}  // namespace infdoctor::history
