#include "bundle/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "core/digest.h"
#include "core/files.h"
#include "core/redact.h"
#include "core/version.h"

namespace infdoctor::bundle {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

core::Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::make_error(core::ErrorCode::Io, "cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string uname_text() {
  utsname u{};
  if (::uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

}  // namespace

bool is_archive_path(const std::string& path) {
  auto ends = [&](const std::string& s) { return path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0; };
  return ends(".tar.gz") || ends(".tgz");
}

core::Status BundleExporter::write(const results::RunResult& r, const report::Say& say) {
  if (auto st = writer_.finish(r, ctx_); !st.ok()) return st;
  say("", "evidence bundle written to " + path_);
  return {};
}

void describe_endpoint(Context& ctx, const api::Endpoint& ep) {
  ctx.base_url = ep.base_url;
  ctx.api_key_env = ep.key_env.empty() ? "API_KEY" : ep.key_env;
  ctx.flavour = ep.flavour;
  ctx.auth = ep.auth;
  ctx.query = ep.query;
  ctx.headers = ep.headers;
}


core::Result<std::unique_ptr<SampleLog>> SampleLog::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return core::make_error(core::ErrorCode::Io, "cannot write " + path, std::strerror(errno));
  std::FILE* f = ::fdopen(fd, "a");
  if (!f) {
    ::close(fd);
    return core::make_error(core::ErrorCode::Io, "cannot write " + path);
  }
  return std::unique_ptr<SampleLog>(new SampleLog(f));
}

SampleLog::~SampleLog() { std::fclose(f_); }

void SampleLog::append(const nlohmann::json& sample) {
  const std::string line = core::scrub(sample.dump()) + "\n";
  std::fwrite(line.data(), 1, line.size(), f_);
  std::fflush(f_);  // a run cut short keeps every line written so far
}

core::Result<std::unique_ptr<Writer>> Writer::start(const std::string& path) {
  const bool archive = is_archive_path(path);
  const std::string dir = archive ? path + ".partial" : path;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return core::make_error(core::ErrorCode::Io, "cannot create the bundle directory " + dir, ec.message());
  fs::permissions(dir, fs::perms::owner_all, ec);
  return std::unique_ptr<Writer>(new Writer(path, dir, archive));
}

Writer::~Writer() {
  if (archive_ && !finished_) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

core::Status Writer::finish(const results::RunResult& result, const Context& ctx) {
  json results = results::to_json(result);
  json rules_files = json::array();
  for (const auto& f : ctx.rules) rules_files.push_back({{"path", f.path}, {"content", f.content}});
  results["bundle"] = {{"bundle_version", 1},
                       {"infdoctor_version", core::kVersion},
                       {"uname", uname_text()},
                       {"command_line", ctx.command_line},
                       {"partial", ctx.partial},
                       {"rules_files", rules_files}};
  // Whatever a server echoed back (the key inside an error message) is scrubbed before it is saved.
  std::vector<std::pair<std::string, std::string>> files = {
      {"results.json", core::scrub(results.dump(2) + "\n")},
      {"summary.md", core::scrub(render_summary(result, ctx))},
      {"repro.sh", core::scrub(render_repro(ctx))},
      {"report.html", core::scrub(render_html(result))},
  };
  if (!ctx.kept_bodies.empty()) files.emplace_back("body.jsonl", core::scrub(ctx.kept_bodies));
  for (const auto& [name, content] : files)
    if (auto st = core::write_private_file(dir_ + "/" + name, content); !st.ok()) return st;
  // samples.jsonl was appended on disk as the run went; it is the one file read back.
  std::string samples;
  if (fs::exists(samples_path())) {
    auto content = read_file(samples_path());
    if (!content.ok()) return content.error();
    samples = std::move(content.value());
  } else if (auto st = core::write_private_file(samples_path(), ""); !st.ok()) {
    return st;
  }
  files.emplace_back("samples.jsonl", std::move(samples));
  json manifest = {{"bundle_version", 1}, {"files", json::object()}};
  for (const auto& [name, content] : files)
    manifest["files"][name] = {{"sha256", core::sha256_hex(content)}, {"bytes", content.size()}};
  const std::string manifest_text = manifest.dump(2) + "\n";
  if (auto st = core::write_private_file(dir_ + "/manifest.json", manifest_text); !st.ok()) return st;
  files.emplace_back("manifest.json", manifest_text);
  finished_ = true;
  if (!archive_) return {};

  // Pack the staging directory into the .tar.gz, then remove it.
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || archive_write_open_fd(a, fd) != ARCHIVE_OK) {
    archive_write_free(a);
    if (fd >= 0) ::close(fd);
    return core::make_error(core::ErrorCode::Io, "cannot write " + path_);
  }
  const std::string top = fs::path(path_).filename().string().substr(0, fs::path(path_).filename().string().find('.'));
  for (const auto& [name, content] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, (top + "/" + name).c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0600);
    archive_entry_set_mtime(e, ::time(nullptr), 0);
    archive_write_header(a, e);
    archive_write_data(a, content.data(), content.size());
    archive_entry_free(e);
  }
  const bool ok = archive_write_close(a) == ARCHIVE_OK;
  archive_write_free(a);
  ::close(fd);
  std::error_code ec;
  fs::remove_all(dir_, ec);
  if (!ok) return core::make_error(core::ErrorCode::Io, "cannot write " + path_);
  return {};
}

core::Result<std::vector<std::pair<std::string, std::string>>> read_archive(const std::string& tar_gz) {
  archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  if (archive_read_open_filename(a, tar_gz.c_str(), 65536) != ARCHIVE_OK) {
    const std::string why = archive_error_string(a) ? archive_error_string(a) : "unknown";
    archive_read_free(a);
    return core::make_error(core::ErrorCode::Io, "cannot read " + tar_gz, why);
  }
  std::vector<std::pair<std::string, std::string>> out;
  archive_entry* e = nullptr;
  constexpr std::size_t kMaxEntry = 256u << 20;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    std::string name = archive_entry_pathname(e);
    if (const auto slash = name.find('/'); slash != std::string::npos) name = name.substr(slash + 1);
    std::string content;
    char buf[65536];
    la_ssize_t n;
    while ((n = archive_read_data(a, buf, sizeof buf)) > 0 && content.size() < kMaxEntry)
      content.append(buf, static_cast<std::size_t>(n));
    out.emplace_back(name, std::move(content));
  }
  archive_read_free(a);
  return out;
}

core::Result<nlohmann::json> read_results(const std::string& path) {
  std::string text;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto t = read_file(path + "/results.json");
    if (!t.ok()) return t.error();
    text = std::move(t.value());
  } else if (is_archive_path(path)) {
    auto files = read_archive(path);
    if (!files.ok()) return files.error();
    auto it = std::find_if(files->begin(), files->end(), [](const auto& f) { return f.first == "results.json"; });
    if (it == files->end()) return core::make_error(core::ErrorCode::Io, path + " holds no results.json");
    text = std::move(it->second);
  } else {
    auto t = read_file(path);
    if (!t.ok()) return t.error();
    text = std::move(t.value());
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return core::make_error(core::ErrorCode::ConfigError, path + ": results are not valid JSON");
  return j;
}

}  // namespace infdoctor::bundle
