#include "history/history.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "checks/baseline.h"
#include "checks/coldstart.h"
#include "checks/transport.h"
#include "results/run_metrics.h"
#include "stats/fit.h"

namespace infdoctor::history {
namespace {

using core::ErrorCode;

// A prepared statement, finalized with the object.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind(int i, long long v) { sqlite3_bind_int64(s_, i, v); }
  int step() { return sqlite3_step(s_); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string text(int i) {
    const auto* p = sqlite3_column_text(s_, i);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

core::Error db_error(sqlite3* db, const std::string& what) {
  return core::Error{ErrorCode::ConfigError, "history: " + what + ": " + sqlite3_errmsg(db), {}};
}

// Each step takes the file from version i to i + 1; never edit one that has shipped.
const char* const kMigrations[] = {
    // 1: runs and their metrics
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, target TEXT NOT NULL,"
    " model TEXT NOT NULL, exit_code INTEGER NOT NULL, top_finding TEXT NOT NULL DEFAULT '');"
    "CREATE TABLE metrics(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL,"
    " value REAL NOT NULL, PRIMARY KEY(run_id, name)) WITHOUT ROWID;",
    // 2: interrupted runs are marked; lookups by endpoint and time are indexed
    "ALTER TABLE runs ADD COLUMN partial INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX runs_by_endpoint ON runs(target, model, started_at);",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

// A cold-start penalty this large is one; the coldstart rules use the same floor.
constexpr double kColdPenaltyMs = 200;

// A run's first request was cold when its first token came later than the back-to-back median
// by over 100 ms and over half that median: the coldstart.first_request rule's bar, without the
// spread, which is not kept.
bool first_request_cold(double penalty_ms, double baseline_ms) {
  return penalty_ms > 100 && penalty_ms > 0.5 * baseline_ms;
}

}  // namespace

const std::vector<std::string>& kept_metrics() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> names;
    for (const auto& m : results::all_metrics())
      if (m.tags.history) names.push_back(m.name);
    return names;
  }();
  return k;
}

std::vector<std::string> history_metric_names() {
  return {"history.runs_count",
          "history.ttft_p50_median_ms",
          "history.ttft_p50_ratio",
          "history.tpot_p50_median_ms",
          "history.tpot_p50_ratio",
          "history.ttfb_p50_median_ms",
          "history.ttfb_p50_ratio",
          "history.coldstart_penalty_median_ms",
          "history.coldstart_appeared_hours_ago",
          "history.first_request_runs_count",
          "history.first_request_cold_count",
          "history.first_request_cold_share_ratio",
          "history.first_request_penalty_median_ms",
          "history.run_interval_median_s"};
}

core::Result<std::unique_ptr<History>> History::open(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  std::unique_ptr<History> h(new History(db));
  if (rc != SQLITE_OK) return db_error(db, "cannot open " + path);
  sqlite3_busy_timeout(db, 30000);  // another run holds the write lock: wait for it
  if (auto st = h->exec("PRAGMA foreign_keys=ON"); !st.ok()) return st.error();
  // WAL lets a reader (infdoctor history) go on while a run writes. Not fatal where the file
  // system cannot do it: the rollback journal is just as safe, only less concurrent.
  (void)h->exec("PRAGMA journal_mode=WAL");
  if (auto st = h->migrate(); !st.ok()) {
    core::Error e = st.error();
    e.message = e.message + " (" + path + ")";
    return e;
  }
  return h;
}

History::~History() { sqlite3_close_v2(db_); }

core::Status History::exec(const std::string& sql) {
  char* msg = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    core::Error e{ErrorCode::ConfigError, std::string("history: ") + (msg ? msg : sqlite3_errmsg(db_)), {}};
    sqlite3_free(msg);
    return e;
  }
  return {};
}

int History::schema_version() const {
  Stmt s(db_, "PRAGMA user_version");
  return s.ok() && s.step() == SQLITE_ROW ? sqlite3_column_int(s.get(), 0) : -1;
}

core::Status History::migrate() {
  // The write lock first: two runs opening a new file at once migrate it once.
  if (auto st = exec("BEGIN IMMEDIATE"); !st.ok()) return st;
  const int v = schema_version();
  if (v < 0) {
    (void)exec("ROLLBACK");
    return core::Error{ErrorCode::ConfigError, "history: not an SQLite database", {}};
  }
  if (v > kSchemaVersion) {
    (void)exec("ROLLBACK");
    return core::Error{ErrorCode::ConfigError,
                       "history: written by a newer infdoctor (schema " + std::to_string(v) + ", this one knows " +
                           std::to_string(kSchemaVersion) + ")",
                       {}};
  }
  for (int i = v; i < kSchemaVersion; ++i) {
    if (auto st = exec(kMigrations[i]); !st.ok()) {
      (void)exec("ROLLBACK");
      return st;
    }
  }
  if (v < kSchemaVersion) {
    if (auto st = exec("PRAGMA user_version=" + std::to_string(kSchemaVersion)); !st.ok()) {
      (void)exec("ROLLBACK");
      return st;
    }
  }
  return exec("COMMIT");
}

core::Result<long long> History::record(const RunRecord& run) {
  if (auto st = exec("BEGIN IMMEDIATE"); !st.ok()) return st.error();
  auto fail = [&](const std::string& what) {
    core::Error e = db_error(db_, what);
    (void)exec("ROLLBACK");
    return e;
  };
  Stmt ins(db_, "INSERT INTO runs(started_at, target, model, exit_code, top_finding, partial) VALUES(?,?,?,?,?,?)");
  if (!ins.ok()) return fail("cannot prepare");
  ins.bind(1, run.started_at);
  ins.bind(2, run.target);
  ins.bind(3, run.model);
  ins.bind(4, static_cast<long long>(run.exit_code));
  ins.bind(5, run.top_finding);
  ins.bind(6, static_cast<long long>(run.partial ? 1 : 0));
  if (ins.step() != SQLITE_DONE) return fail("cannot store the run");
  const long long id = sqlite3_last_insert_rowid(db_);
  Stmt m(db_, "INSERT INTO metrics(run_id, name, value) VALUES(?,?,?)");
  if (!m.ok()) return fail("cannot prepare");
  for (const auto& name : kept_metrics()) {
    auto it = run.metrics.find(name);
    if (it == run.metrics.end() || !std::isfinite(it->second)) continue;
    m.bind(1, id);
    m.bind(2, name);
    m.bind(3, it->second);
    if (m.step() != SQLITE_DONE) return fail("cannot store a metric");
    m.reset();
  }
  if (auto st = exec("COMMIT"); !st.ok()) {
    (void)exec("ROLLBACK");
    return st.error();
  }
  return id;
}

core::Result<std::vector<RunRecord>> History::runs(int limit, const std::string& target, const std::string& model) {
  const bool filtered = !target.empty() || !model.empty();
  Stmt s(db_, filtered ? "SELECT id, started_at, target, model, exit_code, top_finding, partial FROM runs"
                         " WHERE target = ? AND model = ? ORDER BY julianday(started_at) DESC, id DESC LIMIT ?"
                       : "SELECT id, started_at, target, model, exit_code, top_finding, partial FROM runs"
                         " ORDER BY julianday(started_at) DESC, id DESC LIMIT ?");
  if (!s.ok()) return db_error(db_, "cannot read runs");
  int i = 1;
  if (filtered) {
    s.bind(i++, target);
    s.bind(i++, model);
  }
  s.bind(i, static_cast<long long>(limit));
  std::vector<RunRecord> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    RunRecord r;
    r.id = sqlite3_column_int64(s.get(), 0);
    r.started_at = s.text(1);
    r.target = s.text(2);
    r.model = s.text(3);
    r.exit_code = sqlite3_column_int(s.get(), 4);
    r.top_finding = s.text(5);
    r.partial = sqlite3_column_int(s.get(), 6) != 0;
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return db_error(db_, "cannot read runs");
  Stmt m(db_, "SELECT name, value FROM metrics WHERE run_id = ?");
  if (!m.ok()) return db_error(db_, "cannot read metrics");
  for (auto& r : out) {
    m.bind(1, r.id);
    while (m.step() == SQLITE_ROW) r.metrics[m.text(0)] = sqlite3_column_double(m.get(), 1);
    m.reset();
  }
  std::reverse(out.begin(), out.end());
  return out;
}

core::Result<std::map<std::string, double>> History::compare(const std::map<std::string, double>& current,
                                                             const std::string& target, const std::string& model,
                                                             const std::string& now, int days) {
  Stmt s(db_,
         "SELECT r.started_at, m.name, m.value, (julianday(?) - julianday(r.started_at)) * 24 FROM runs r"
         " JOIN metrics m ON m.run_id = r.id WHERE r.target = ? AND r.model = ? AND r.partial = 0"
         " AND julianday(r.started_at) < julianday(?) AND julianday(r.started_at) >= julianday(?) - ?"
         " ORDER BY julianday(r.started_at)");
  if (!s.ok()) return db_error(db_, "cannot read history");
  s.bind(1, now);
  s.bind(2, target);
  s.bind(3, model);
  s.bind(4, now);
  s.bind(5, now);
  s.bind(6, static_cast<double>(days));
  std::map<std::string, std::vector<double>> past;
  std::vector<std::pair<double, double>> penalties;  // (hours ago, penalty), oldest first
  std::map<std::string, double> run_times;  // started_at -> hours before now
  std::map<std::string, std::map<std::string, double>> by_run;  // started_at -> the first request's metrics
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    const std::string name = s.text(1);
    const double v = sqlite3_column_double(s.get(), 2);
    past[name].push_back(v);
    run_times[s.text(0)] = sqlite3_column_double(s.get(), 3);
    if (name == checks::coldstart_metric::penalty_ms.name) penalties.emplace_back(sqlite3_column_double(s.get(), 3), v);
    if (name == checks::coldstart_metric::first_request_penalty_ms.name || name == checks::coldstart_metric::baseline_ttft_p50_ms.name) by_run[s.text(0)][name] = v;
  }
  if (rc != SQLITE_DONE) return db_error(db_, "cannot read history");
  std::map<std::string, double> out;
  out["history.runs_count"] = static_cast<double>(run_times.size());
  auto ratio = [&](const char* metric, const std::string& prefix) {
    auto p = past.find(metric);
    if (p == past.end() || p->second.empty()) return;
    const double med = *stats::median(p->second);
    out["history." + prefix + "_median_ms"] = med;
    if (auto c = current.find(metric); c != current.end() && med > 0) out["history." + prefix + "_ratio"] = c->second / med;
  };
  ratio(checks::baseline_metric::ttft_p50_ms.name, "ttft_p50");
  ratio(checks::baseline_metric::tpot_p50_ms.name, "tpot_p50");
  ratio(checks::transport_metric::ttfb_p50_ms.name, "ttfb_p50");
  if (auto p = past.find(checks::coldstart_metric::penalty_ms.name); p != past.end() && !p->second.empty()) {
    out["history.coldstart_penalty_median_ms"] = *stats::median(p->second);
    // When the penalty appeared: the first of the runs since the last one without it.
    double since = -1;
    for (const auto& [hours_ago, v] : penalties) {
      if (v < kColdPenaltyMs) since = -1;
      else if (since < 0) since = hours_ago;
    }
    auto c = current.find(checks::coldstart_metric::penalty_ms.name);
    const bool now_cold = c != current.end() && c->second >= kColdPenaltyMs;
    const bool ever_warm = std::any_of(penalties.begin(), penalties.end(), [](const auto& pr) { return pr.second < kColdPenaltyMs; });
    if (now_cold && ever_warm) out["history.coldstart_appeared_hours_ago"] = since < 0 ? 0.0 : since;
  }
  // Each scheduled run's first request comes after the idle time since the run before: the
  // scheduler's interval is an idle gap the coldstart check cannot wait out. One run's first
  // request is one sample a heavy tail can make slow; most runs' first requests slow is a state.
  std::vector<double> first_penalties, cold_penalties;
  const auto add_first = [&](const std::map<std::string, double>& m) {
    const auto p = m.find(checks::coldstart_metric::first_request_penalty_ms.name), b = m.find(checks::coldstart_metric::baseline_ttft_p50_ms.name);
    if (p == m.end() || b == m.end()) return;
    first_penalties.push_back(p->second);
    if (first_request_cold(p->second, b->second)) cold_penalties.push_back(p->second);
  };
  for (const auto& [_, m] : by_run) add_first(m);
  add_first(current);
  if (!first_penalties.empty()) {
    out["history.first_request_runs_count"] = static_cast<double>(first_penalties.size());
    out["history.first_request_cold_count"] = static_cast<double>(cold_penalties.size());
    out["history.first_request_cold_share_ratio"] =
        static_cast<double>(cold_penalties.size()) / static_cast<double>(first_penalties.size());
    if (auto m = stats::median(cold_penalties)) out["history.first_request_penalty_median_ms"] = *m;
  }
  // The scheduler's interval: the median time between consecutive runs, this one included.
  std::vector<double> hours_ago = {0.0};
  for (const auto& [_, h] : run_times) hours_ago.push_back(h);
  std::sort(hours_ago.begin(), hours_ago.end());
  std::vector<double> gaps_s;
  for (std::size_t i = 1; i < hours_ago.size(); ++i) gaps_s.push_back((hours_ago[i] - hours_ago[i - 1]) * 3600.0);
  if (auto g = stats::median(gaps_s)) out["history.run_interval_median_s"] = *g;
  return out;
}

}  // namespace infdoctor::history
