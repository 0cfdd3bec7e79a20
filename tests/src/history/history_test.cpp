#include "history/history.h"

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

namespace infdoctor::history {
namespace {

struct TempDb {
  std::string dir, path;
  TempDb() {
    char tmpl[] = "/tmp/infdoctor-history-XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/history.db";
  }
  ~TempDb() { std::filesystem::remove_all(dir); }
};

RunRecord run_at(const std::string& when, double ttft, double penalty = -1) {
  RunRecord r;
  r.started_at = when;
  r.target = "https://api.example.com/v1";
  r.model = "big";
  r.metrics["baseline.ttft_p50_ms"] = ttft;
  r.metrics["baseline.tpot_p50_ms"] = 10;
  r.metrics["not.kept_ms"] = 1;  // only the kept metrics are stored
  if (penalty >= 0) r.metrics["coldstart.penalty_ms"] = penalty;
  return r;
}

std::string sql_one(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_CASE("history: runs and their kept metrics come back, oldest first") {
  TempDb t;
  auto h = History::open(t.path);
  REQUIRE_MESSAGE(h.ok(), h.error().message);
  CHECK((*h)->schema_version() == kSchemaVersion);
  REQUIRE((*h)->record(run_at("2026-12-01T10:00:00.000Z", 300)).ok());
  REQUIRE((*h)->record(run_at("2026-12-02T10:00:00.000Z", 320)).ok());
  auto runs = (*h)->runs(10);
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 2);
  CHECK(runs->front().started_at == "2026-12-01T10:00:00.000Z");
  CHECK(runs->back().metrics.at("baseline.ttft_p50_ms") == 320);
  CHECK(runs->back().metrics.count("not.kept_ms") == 0);
  CHECK((*h)->runs(1)->front().started_at == "2026-12-02T10:00:00.000Z");  // the newest
}

TEST_CASE("history: four processes writing one file at once lose nothing and corrupt nothing") {
  TempDb t;
  constexpr int kWriters = 4, kRuns = 50;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // The child: its own connection, as a second cron job would have; the first ones also
      // race to create and migrate the file.
      auto h = History::open(t.path);
      if (!h.ok()) ::_exit(10);
      for (int i = 0; i < kRuns; ++i) {
        RunRecord r = run_at("2026-12-02T10:00:00.000Z", 100 + i);
        r.model = "writer-" + std::to_string(w);
        if (!(*h)->record(r).ok()) ::_exit(11);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  auto h = History::open(t.path);
  REQUIRE(h.ok());
  auto runs = (*h)->runs(100000);
  REQUIRE(runs.ok());
  CHECK(runs->size() == kWriters * kRuns);
  for (int w = 0; w < kWriters; ++w) {
    auto mine = (*h)->runs(100000, "https://api.example.com/v1", "writer-" + std::to_string(w));
    REQUIRE(mine.ok());
    CHECK(mine->size() == kRuns);
    for (const auto& r : *mine) CHECK(r.metrics.size() == 2);  // both kept metrics of every run
  }
  CHECK(sql_one(t.path, "PRAGMA integrity_check") == "ok");
  CHECK(sql_one(t.path, "PRAGMA user_version") == std::to_string(kSchemaVersion));
}

TEST_CASE("history: a version-1 file is migrated, a newer or foreign file is refused by name") {
  TempDb t;
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(t.path.c_str(), &db) == SQLITE_OK);
    const char* v1 =
        "CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, target TEXT NOT NULL,"
        " model TEXT NOT NULL, exit_code INTEGER NOT NULL, top_finding TEXT NOT NULL DEFAULT '');"
        "CREATE TABLE metrics(run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL,"
        " value REAL NOT NULL, PRIMARY KEY(run_id, name)) WITHOUT ROWID;"
        "INSERT INTO runs VALUES(1, '2026-11-30T09:00:00.000Z', 'https://api.example.com/v1', 'big', 1, 'decode.x');"
        "INSERT INTO metrics VALUES(1, 'baseline.ttft_p50_ms', 410);"
        "PRAGMA user_version=1;";
    REQUIRE(sqlite3_exec(db, v1, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto h = History::open(t.path);
  REQUIRE_MESSAGE(h.ok(), h.error().message);
  CHECK((*h)->schema_version() == 2);
  auto runs = (*h)->runs(10);
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().top_finding == "decode.x");
  CHECK_FALSE(runs->front().partial);
  CHECK(runs->front().metrics.at("baseline.ttft_p50_ms") == 410);
  h.value().reset();

  {
    sqlite3* db = nullptr;
    sqlite3_open(t.path.c_str(), &db);
    sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  auto newer = History::open(t.path);
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.error().message.find("newer infdoctor (schema 99") != std::string::npos);
  CHECK(newer.error().message.find(t.path) != std::string::npos);

  const std::string junk = t.dir + "/junk.db";
  std::ofstream(junk) << "this is not a database, only text long enough to be read as a header...\n";
  auto foreign = History::open(junk);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.error().message.find("history:") != std::string::npos);
}

TEST_CASE("history: the endpoint against its own past week") {
  TempDb t;
  auto h = History::open(t.path);
  REQUIRE(h.ok());
  // Five healthy days; a cold-start penalty from two days ago on; one old run out of the window.
  REQUIRE((*h)->record(run_at("2026-11-20T10:00:00.000Z", 5000, 0)).ok());
  REQUIRE((*h)->record(run_at("2026-11-28T10:00:00.000Z", 290, 10)).ok());
  REQUIRE((*h)->record(run_at("2026-11-29T10:00:00.000Z", 300, 15)).ok());
  REQUIRE((*h)->record(run_at("2026-11-30T10:00:00.000Z", 310, 12)).ok());
  REQUIRE((*h)->record(run_at("2026-12-01T10:00:00.000Z", 300, 1500)).ok());
  REQUIRE((*h)->record(run_at("2026-12-02T10:00:00.000Z", 305, 1480)).ok());
  RunRecord other = run_at("2026-12-02T11:00:00.000Z", 9000);
  other.model = "small";  // another model's runs are not this one's past
  REQUIRE((*h)->record(other).ok());
  const std::map<std::string, double> now = {{"baseline.ttft_p50_ms", 1020}, {"coldstart.penalty_ms", 1510}};
  auto m = (*h)->compare(now, "https://api.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  REQUIRE_MESSAGE(m.ok(), m.error().message);
  CHECK(m->at("history.runs_count") == 5);
  CHECK(m->at("history.ttft_p50_median_ms") == 300);
  CHECK(m->at("history.ttft_p50_ratio") == doctest::Approx(3.4));
  CHECK(m->at("history.coldstart_appeared_hours_ago") == doctest::Approx(48));
  // Without the penalty now, nothing appeared.
  auto warm = (*h)->compare({{"coldstart.penalty_ms", 12}}, "https://api.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  CHECK(warm->count("history.coldstart_appeared_hours_ago") == 0);
  // A first run has no past.
  auto first = (*h)->compare(now, "https://other.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  CHECK(first->at("history.runs_count") == 0);
  CHECK(first->count("history.ttft_p50_ratio") == 0);
}

TEST_CASE("history: the first request of each scheduled run, after the interval between runs") {
  TempDb t;
  auto h = History::open(t.path);
  REQUIRE(h.ok());
  // Runs every 15 minutes; the first request 1.5 s late in two of three earlier runs, 20 ms in one.
  const auto run = [](const char* when, double first_penalty) {
    RunRecord r = run_at(when, 300);
    r.metrics["coldstart.baseline_ttft_p50_ms"] = 300;
    r.metrics["coldstart.first_request_penalty_ms"] = first_penalty;
    return r;
  };
  REQUIRE((*h)->record(run("2026-12-03T09:15:00.000Z", 1500)).ok());
  REQUIRE((*h)->record(run("2026-12-03T09:30:00.000Z", 20)).ok());
  REQUIRE((*h)->record(run("2026-12-03T09:45:00.000Z", 1700)).ok());
  REQUIRE((*h)->record(run_at("2026-12-03T09:00:00.000Z", 300)).ok());  // a run without the coldstart check
  const std::map<std::string, double> now = {{"coldstart.baseline_ttft_p50_ms", 310}, {"coldstart.first_request_penalty_ms", 1600}};
  auto m = (*h)->compare(now, "https://api.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  REQUIRE_MESSAGE(m.ok(), m.error().message);
  CHECK(m->at("history.first_request_runs_count") == 4);
  CHECK(m->at("history.first_request_cold_count") == 3);
  CHECK(m->at("history.first_request_cold_share_ratio") == doctest::Approx(0.75));
  CHECK(m->at("history.first_request_penalty_median_ms") == 1600);  // of the cold ones
  CHECK(m->at("history.run_interval_median_s") == doctest::Approx(900).epsilon(0.01));
  // Under the bar: 120 ms on a 300 ms baseline is no cold first request (half the median is 150).
  auto warm = (*h)->compare({{"coldstart.baseline_ttft_p50_ms", 300}, {"coldstart.first_request_penalty_ms", 120}},
                            "https://api.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  CHECK(warm->at("history.first_request_cold_count") == 2);
  // Nothing kept and nothing now: no first-request numbers at all.
  auto none = (*h)->compare({}, "https://other.example.com/v1", "big", "2026-12-03T10:00:00.000Z");
  CHECK(none->count("history.first_request_runs_count") == 0);
  CHECK(none->count("history.run_interval_median_s") == 0);
}

}  // namespace infdoctor::history
