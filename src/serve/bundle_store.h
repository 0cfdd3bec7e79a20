#pragma once
// The exporter's kept evidence bundles, DIR/NAME/STAMP (the run's UTC start, sortable): each is
// written under a hidden name and takes its stamp when its run has ended, so a listing never
// shows, and latest never is, a bundle still being written; the newest `keep` of each target
// stay. And their listing over HTTP: /bundles, /bundles/NAME/, /bundles/NAME/STAMP/ (or latest),
// /bundles/NAME/STAMP/FILE.
#include <optional>
#include <string>
#include <vector>

#include "serve/http_server.h"

namespace infdoctor::serve {

class BundleStore {
 public:
  // `dir` empty: no bundles are kept.
  BundleStore(std::string dir, int keep) : dir_(std::move(dir)), keep_(keep) {}

  // Where a run of `target` writes its bundle, and where it is kept once the run has ended.
  struct Slot {
    std::string staging, kept;
  };
  // None when no bundles are kept, or when a run of the target started in the same second.
  std::optional<Slot> begin(const std::string& target) const;
  // Gives the bundle its stamp and keeps the target's newest; the kept path, or "" with `error`
  // set when the bundle could not be kept (or the run wrote none).
  std::string finish(const std::string& target, const Slot& slot, std::string& error) const;
  // Removes what a run wrote that is not kept (a run the exporter's shutdown cut short).
  void discard(const Slot& slot) const;

  // GET `path` under /bundles, for the exporter's targets `names`.
  HttpResponse serve(const std::string& path, const std::vector<std::string>& names) const;

 private:
  std::string dir_;
  int keep_;
};

}  // namespace infdoctor::serve
