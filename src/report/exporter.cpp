#include "report/exporter.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <ostream>

#include "core/files.h"
#include "core/redact.h"
#include "report/text.h"

namespace infdoctor::report {

namespace {

// How long a Pushgateway has to answer, each way.
constexpr std::chrono::seconds kGatewayTimeout{10};

// The exposition of `r` on `base`, its counters carried on from `earlier` when that read.
std::string exposition(PromTarget t, const results::RunResult& r, const core::Result<prom::Exposition>& earlier) {
  t.run = &r;
  t.totals = tally(r);
  if (earlier.ok()) t.totals.add(tally_from(earlier.value(), t.labels));
  return core::scrub(render_prometheus({t}));
}

}  // namespace

core::Status TextExporter::write(const results::RunResult& r, const Say&) {
  out_ << core::scrub(render_text(r));
  return {};
}

core::Status JsonExporter::write(const results::RunResult& r, const Say&) {
  const std::string text = core::scrub(results::to_json(r).dump(2)) + "\n";
  if (path_ != "-") return core::write_replacing(path_, text);
  out_ << text;
  return {};
}

core::Status PromFileExporter::write(const results::RunResult& r, const Say& say) {
  std::ifstream in(path_);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto earlier = prom::parse_exposition(before);
  if (!before.empty() && !earlier.ok())
    say("warning", "--prom " + path_ + " held no Prometheus text (" + earlier.error().message +
                       "): its counters start again from this run");
  return core::write_replacing(path_, exposition(base_, r, earlier));
}

core::Status PushExporter::write(const results::RunResult& r, const Say& say) {
  const auto earlier = read_gateway(gateway_, kGatewayTimeout);
  if (auto st = push_prometheus(gateway_, base_.labels, exposition(base_, r, earlier), kGatewayTimeout); !st.ok())
    return core::make_error(st.error().code, st.error().message + ": " + st.error().detail);
  if (!earlier.ok())
    say("warning", core::scrub(earlier.error().message + ": " + earlier.error().detail +
                               "; the pushed counters start again from this run"));
  return {};
}

}  // namespace infdoctor::report
