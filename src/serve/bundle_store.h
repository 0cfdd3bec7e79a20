#pragma once
// The exporter's kept evidence bundles, DIR/NAME/STAMP (the run's UTC start, sortable): each is
// written under a hidden name and takes its stamp when its run has ended, so a listing never
// shows, and latest never is, a bundle still being written; the newest `keep` of each target
// stay, each with why it was kept beside it (DIR/NAME/STAMP.kept). And their listing over HTTP:
// /bundles, /bundles/NAME/ (each bundle and why it was kept), /bundles/NAME/STAMP/ (or latest),
// /bundles/NAME/STAMP/FILE.
//
// Which bundles are worth keeping: every checklist run's (it is costly, and rare); of a probe
// target's, one that tells something new: a failure, a finding, the target's first run under this
// exporter, the first success after a failure, or one when none was kept for an hour
// (--probe-bundle-every). A probe every 10 s otherwise writes 360 bundles an hour that say the
// same thing, and rotation would evict the one failure worth reading for them.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "results/run_result.h"
#include "serve/http_server.h"

namespace infdoctor::serve {

// Why a bundle was kept: a token for logs ("failure") and a sentence for /bundles.
struct Kept {
  std::string reason;
  std::string why;
};

// What a probe target's runs told so far, for which of their bundles are worth keeping.
struct BundleHistory {
  using Clock = std::chrono::steady_clock;
  bool kept_any = false;
  Clock::time_point last_kept{};
  bool last_failed = false;
  // Records a run ended at `now`: whether it failed, and whether its bundle was kept.
  void ran(bool failed, bool kept, Clock::time_point now);
};

// Whether a probe run's bundle (`r`, ended with `exit_code` at `now`) is worth keeping, and why;
// nothing when it tells nothing new and a bundle was kept less than `every` ago.
std::optional<Kept> probe_bundle_worth_keeping(const BundleHistory& h, const results::RunResult& r, int exit_code,
                                               BundleHistory::Clock::time_point now, std::chrono::seconds every);
// A checklist run's bundle: always kept.
Kept checklist_bundle();
// Whether a run failed, as keeping its bundle and /metrics see it.
bool run_failed(const results::RunResult& r, int exit_code);

class BundleStore {
 public:
  // `dir` empty: no bundles are kept.
  BundleStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {}

  // Where a run of `target` writes its bundle, and where it is kept once the run has ended.
  struct Slot {
    std::string staging, kept;
  };
  // For a run of `target` that started at `started`. None when no bundles are kept, or when a run
  // of the target started in the same second.
  std::optional<Slot> begin(const std::string& target,
                            std::chrono::system_clock::time_point started = std::chrono::system_clock::now()) const;
  // Gives the bundle its stamp, notes why it was kept, and keeps the target's newest: the oldest
  // goes first, so the disk never holds more than `keep` of the target's bundles (one that then
  // cannot be kept has cost the oldest). The kept path, or "" with `error` set when the bundle
  // could not be kept (or the run wrote none).
  std::string finish(const std::string& target, const Slot& slot, const Kept& kept, std::string& error) const;
  // Removes what a run wrote that is not kept (a run the exporter's shutdown cut short).
  void discard(const Slot& slot) const;

  // GET `path` under /bundles, for the exporter's targets `names`.
  HttpResponse serve(const std::string& path, const std::vector<std::string>& names) const;

 private:
  std::string dir_;
  int keep_;
};

}  // namespace infdoctor::serve
