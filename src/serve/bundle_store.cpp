#include "serve/bundle_store.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/exit_code.h"
#include "core/strings.h"

namespace infdoctor::serve {
namespace {

namespace fs = std::filesystem;

HttpResponse not_found(const std::string& body) { return {404, "text/plain; charset=utf-8", body}; }

// A bundle's directory name: its UTC start, sortable ("20261204T231502Z").
std::string stamp_of(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// A bundle being written: the prefix of its directory until the run has ended.
constexpr const char* kStaging = ".partial-";
// Beside each kept bundle STAMP, STAMP.kept says why it was kept: {"reason", "why"}. Beside it
// rather than in it, so the bundle stays as its manifest lists it.
constexpr const char* kKeptSuffix = ".kept";

// "1 hour", "25 seconds": how long --probe-bundle-every is.
std::string span_of(std::chrono::seconds s) {
  const auto n = static_cast<double>(s.count());
  if (s.count() != 0 && s.count() % 3600 == 0) return core::count_of(n / 3600, "hour");
  if (s.count() != 0 && s.count() % 60 == 0) return core::count_of(n / 60, "minute");
  return core::count_of(n, "second");
}

// The sentence of DIR/NAME/STAMP.kept, or "" when there is none (kept before reasons were noted).
std::string why_kept(const fs::path& dir, const std::string& stamp) {
  std::ifstream in(dir / (stamp + kKeptSuffix));
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) return {};
  return j.value("reason", "") + ": " + j.value("why", "");
}

bool is_stamp(const std::string& s) {
  return s.size() == 16 && s[8] == 'T' && s[15] == 'Z' &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == 'T' || c == 'Z'; });
}

// The bundles in a target's directory, oldest first.
std::vector<std::string> stamps_in(const fs::path& dir) {
  std::error_code ec;
  std::vector<std::string> stamps;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (is_stamp(e.path().filename().string())) stamps.push_back(e.path().filename().string());
  std::sort(stamps.begin(), stamps.end());
  return stamps;
}

}  // namespace

void BundleHistory::ran(bool failed, bool kept, Clock::time_point now) {
  last_failed = failed;
  if (!kept) return;
  kept_any = true;
  last_kept = now;
}

bool run_failed(const results::RunResult& r, int exit_code) {
  return exit_code == core::kExitCouldNotRun || !r.unreachable.empty();
}

std::optional<Kept> probe_bundle_worth_keeping(const BundleHistory& h, const results::RunResult& r, int exit_code,
                                               BundleHistory::Clock::time_point now, std::chrono::seconds every) {
  if (run_failed(r, exit_code))
    return Kept{"failure", "the run failed: " + (r.unreachable.empty() ? "exit code " + std::to_string(exit_code) : r.unreachable)};
  for (const auto& f : r.diagnosis)
    if (f.severity != rules::Severity::Info) return Kept{"finding", "the run found: " + f.title};
  if (!h.kept_any) return Kept{"first", "the target's first run since the exporter started"};
  if (h.last_failed) return Kept{"recovered", "the first run to succeed after a failure"};
  if (now - h.last_kept >= every) return Kept{"periodic", "no bundle of the target was kept for " + span_of(every)};
  return std::nullopt;
}

Kept checklist_bundle() { return {"checklist", "every checklist run keeps its bundle"}; }

std::optional<BundleStore::Slot> BundleStore::begin(const std::string& target,
                                                    std::chrono::system_clock::time_point started) const {
  if (dir_.empty()) return std::nullopt;
  std::error_code ec;
  const fs::path dir = fs::path(dir_) / target;
  fs::create_directories(dir, ec);
  const std::string stamp = stamp_of(started);
  if (fs::exists(dir / stamp, ec)) return std::nullopt;  // two runs in one second: the second keeps none
  return Slot{(dir / (std::string(kStaging) + stamp)).string(), (dir / stamp).string()};
}

std::string BundleStore::finish(const std::string& target, const Slot& slot, const Kept& kept, std::string& error) const {
  std::error_code ec;
  if (!fs::exists(slot.staging, ec)) return {};  // the run wrote none (it could not start)
  // The oldest go before the new one is kept, so that no moment finds more than `keep_` of the
  // target's bundles on disk (a scrape of the disk, or a full one, counts what is there now).
  const fs::path dir = fs::path(dir_) / target;
  const auto stamps = stamps_in(dir);
  const std::size_t room = static_cast<std::size_t>(std::max(keep_, 1)) - 1;
  for (std::size_t i = 0; i + room < stamps.size(); ++i) {
    fs::remove_all(dir / stamps[i], ec);
    fs::remove(dir / (stamps[i] + kKeptSuffix), ec);
  }
  {
    // Before the rename: a listing that shows the bundle can say why it is there.
    std::ofstream why(slot.kept + kKeptSuffix, std::ios::trunc);
    why << nlohmann::json{{"reason", kept.reason}, {"why", kept.why}}.dump() << '\n';
  }
  fs::rename(slot.staging, slot.kept, ec);
  if (ec) {
    error = ec.message();
    fs::remove(slot.kept + kKeptSuffix, ec);
    return {};
  }
  // What a run cut off by a crash left half written goes (no run of the target is in progress
  // now), and so does a note whose bundle is gone.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool note = name.size() > std::strlen(kKeptSuffix) && name.ends_with(kKeptSuffix);
    if (name.rfind(kStaging, 0) == 0 ||
        (note && !fs::exists(dir / name.substr(0, name.size() - std::strlen(kKeptSuffix)), ec)))
      fs::remove_all(e.path(), ec);
  }
  return slot.kept;
}

void BundleStore::discard(const Slot& slot) const {
  std::error_code ec;
  fs::remove_all(slot.staging, ec);
}

HttpResponse BundleStore::serve(const std::string& path, const std::vector<std::string>& names) const {
  if (dir_.empty()) return not_found("no bundles are kept (--bundles '')\n");
  std::vector<std::string> parts;
  std::stringstream ss(path.substr(std::string("/bundles").size()));
  for (std::string p; std::getline(ss, p, '/');)
    if (!p.empty()) parts.push_back(p);
  // Links, each with a note after it (why a bundle was kept) or none.
  const auto listing = [](const std::string& title, const std::vector<std::pair<std::string, std::string>>& links) {
    std::string body = "<!doctype html><meta charset=utf-8><title>" + core::html_escape(title) + "</title><h1>" +
                       core::html_escape(title) + "</h1><ul>\n";
    for (const auto& [l, note] : links)
      body += "<li><a href=\"" + core::html_escape(l) + "\">" + core::html_escape(l) + "</a>" +
              (note.empty() ? "" : " " + core::html_escape(note)) + "</li>\n";
    return HttpResponse{200, "text/html; charset=utf-8", body + "</ul>\n"};
  };
  const auto plain = [](const std::vector<std::string>& names) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& n : names) out.emplace_back(n, "");
    return out;
  };
  if (parts.empty()) {
    std::vector<std::string> links;
    for (const auto& n : names) links.push_back(n + "/");
    return listing("infdoctor bundles", plain(links));
  }
  if (std::find(names.begin(), names.end(), parts[0]) == names.end() || parts.size() > 3)
    return not_found("no such target\n");
  const fs::path dir = fs::path(dir_) / parts[0];
  std::error_code ec;
  auto stamps = stamps_in(dir);
  std::reverse(stamps.begin(), stamps.end());
  if (parts.size() == 1) {
    std::vector<std::pair<std::string, std::string>> links;
    for (const auto& s : stamps) links.emplace_back(s + "/", why_kept(dir, s));
    return listing(parts[0] + ": bundles, newest first, and why each was kept", links);
  }
  std::string stamp = parts[1];
  if (stamp == "latest" && !stamps.empty()) stamp = stamps.front();
  if (std::find(stamps.begin(), stamps.end(), stamp) == stamps.end())
    return not_found("no such bundle\n");
  if (parts.size() == 2) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir / stamp, ec))
      if (e.is_regular_file(ec)) files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    const std::string why = why_kept(dir, stamp);
    return listing(parts[0] + " " + stamp + (why.empty() ? "" : ", kept: " + why), plain(files));
  }
  const fs::path file = dir / stamp / parts[2];
  if (parts[2].find("..") != std::string::npos || !fs::is_regular_file(file, ec))
    return not_found("no such file\n");
  std::ifstream in(file, std::ios::binary);
  std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string ext = file.extension().string();
  const std::string type = ext == ".html"   ? "text/html; charset=utf-8"
                           : ext == ".json" ? "application/json"
                           : ext == ".gz"   ? "application/gzip"
                                            : "text/plain; charset=utf-8";
  return {200, type, body};
}

}  // namespace infdoctor::serve
