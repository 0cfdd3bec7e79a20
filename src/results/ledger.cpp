#include "results/ledger.h"

#include <algorithm>
#include <climits>

namespace infdoctor::results {

std::vector<LedgerEntry> ledger(const std::vector<checks::CheckResult>& checks,
                                const std::vector<checks::LabelledSample>& own) {
  std::vector<LedgerEntry> out;
  for (const auto& c : checks)
    for (const auto& r : c.requests) out.push_back({c.id, &r.sample, &r.label});
  for (const auto& r : own) out.push_back({r.label.value("purpose", std::string("run")), &r.sample, &r.label});
  std::stable_sort(out.begin(), out.end(), [](const LedgerEntry& a, const LedgerEntry& b) {
    const int x = a.sample->seq < 0 ? INT_MAX : a.sample->seq, y = b.sample->seq < 0 ? INT_MAX : b.sample->seq;
    return x < y;
  });
  return out;
}

std::vector<LedgerEntry> ledger(const RunResult& r) { return ledger(r.checks, r.run_requests); }

}  // namespace infdoctor::results
