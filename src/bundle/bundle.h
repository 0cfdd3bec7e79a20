#pragma once
// The evidence bundle: a directory, or a .tar.gz (libarchive) when the path ends so, holding
// summary.md, results.json, samples.jsonl, repro.sh, report.html and manifest.json (sha256 of
// every other file). Files are written mode 0600. No secret is ever written: the API key lives
// only in memory and in the request headers, and repro.sh reads it from the environment.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat.h"
#include "api/flavour.h"
#include "core/result.h"
#include "report/exporter.h"
#include "results/run_result.h"

namespace infdoctor::bundle {

struct Context {
  std::string command_line;  // redacted
  std::string api_key_env;   // the variable repro.sh reads the key from
  std::vector<std::string> models;
  std::string base_url;      // as given; redacted before use
  // Flavour, key header, query and preset headers as repro.sh must send them (never the key).
  api::Flavour flavour = api::Flavour::OpenAI;
  api::Auth auth = api::Auth::Bearer;
  std::string query;
  std::vector<std::string> headers;
  std::vector<rules::RuleFile> rules;
  bool partial = false;      // interrupted: the bundle holds what was measured before
  // The requests that showed the top finding, which repro.sh sends again one by one, each beside
  // the run's own time to its first content (Check::repro of the check that measured it).
  std::string repro_shows;  // the finding they show: "cold_start at the target model"
  std::vector<checks::ReproRequest> repro;
  // The user's own request bodies, one a line, kept as body.jsonl when the user asked; empty: none.
  std::string kept_bodies;
};

// The endpoint as repro.sh must address it: its URL, the variable its key is read from, the
// flavour, key header, query and preset headers. The key itself is not copied.
void describe_endpoint(Context& ctx, const api::Endpoint& ep);

// PATH ends in .tar.gz or .tgz: the bundle is an archive, not a directory.
bool is_archive_path(const std::string& path);

// Appends one request sample a line as the run goes, so an interrupted run keeps what it saw.
class SampleLog {
 public:
  static core::Result<std::unique_ptr<SampleLog>> open(const std::string& path);
  ~SampleLog();
  void append(const nlohmann::json& sample);

 private:
  explicit SampleLog(std::FILE* f) : f_(f) {}
  std::FILE* f_;
};

// Where a bundle's files are written while the run goes: the directory itself, or a staging
// directory that finish() packs into the .tar.gz and removes.
class Writer {
 public:
  static core::Result<std::unique_ptr<Writer>> start(const std::string& path);
  ~Writer();
  const std::string& dir() const { return dir_; }
  std::string samples_path() const { return dir_ + "/samples.jsonl"; }
  // Writes the remaining files, the manifest, and packs a .tar.gz.
  core::Status finish(const results::RunResult& result, const Context& ctx);

 private:
  Writer(std::string path, std::string dir, bool archive) : path_(std::move(path)), dir_(std::move(dir)), archive_(archive) {}
  std::string path_;
  std::string dir_;
  bool archive_;
  bool finished_ = false;
};

// --bundle as one of the run's outputs: every remaining file of the bundle, then its place said.
class BundleExporter final : public report::Exporter {
 public:
  BundleExporter(Writer& writer, std::string path, Context ctx) : writer_(writer), path_(std::move(path)), ctx_(std::move(ctx)) {}
  core::Status write(const results::RunResult& r, const report::Say& say) override;

 private:
  Writer& writer_;
  std::string path_;  // as the user gave it
  Context ctx_;
};

// results.json of a bundle (directory or .tar.gz) or a results.json file itself.
core::Result<nlohmann::json> read_results(const std::string& path);

// The files of a bundle, name -> content (for tests and for `explain` on archives).
core::Result<std::vector<std::pair<std::string, std::string>>> read_archive(const std::string& tar_gz);

std::string render_summary(const results::RunResult& r, const Context& ctx);
std::string render_repro(const Context& ctx);
std::string render_html(const results::RunResult& r);

}  // namespace infdoctor::bundle
