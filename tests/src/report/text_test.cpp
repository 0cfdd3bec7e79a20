// The terminal report and report.html on results read back from a file: details of the wrong
// shape (an edited file, another version) are named as unreadable; nothing throws.
#include <doctest/doctest.h>

#include "bundle/bundle.h"
#include "report/text.h"

namespace infdoctor::report {

TEST_CASE("report: unreadable check details are named, the rest of the report stands") {
  run::RunResult r;
  r.target.base_url = "https://api.example.com/v1";
  checks::CheckResult conc = checks::CheckResult::start("concurrency");
  conc.details = {{"levels", {{{"streams", "eight"}, {"ttft_p50_ms", 1.0}}}}};  // streams is not a number
  conc.set("knee_level_count", 8);
  checks::CheckResult path = checks::CheckResult::start("path");
  path.details = {{"addresses", 42}};  // not a list of objects
  checks::CheckResult cold = checks::CheckResult::start("coldstart");
  cold.details = {{"gaps", {{{"gap_s", 1.0}}}}};  // a gap without its keys
  checks::CheckResult base = checks::CheckResult::start("baseline");
  base.samples = {{{"request_id", 7}, {"ttft_ms", "slow"}, {"ok", "yes"}}};  // every field the wrong type
  r.checks = {path, cold, base, conc};

  std::string text;
  CHECK_NOTHROW(text = render_text(r));
  CHECK(text.find("concurrency: the details of this check are unreadable") != std::string::npos);
  CHECK(text.find("path: the details of this check are unreadable") != std::string::npos);
  CHECK(text.find("coldstart: the details of this check are unreadable") != std::string::npos);
  CHECK(text.find("  concurrency    ok") != std::string::npos);  // its row is still there

  std::string html;
  CHECK_NOTHROW(html = bundle::render_html(r));
  CHECK(html.find("the details in these results are unreadable") != std::string::npos);
  bundle::Context ctx;
  CHECK_NOTHROW(bundle::render_summary(r, ctx));
}

}  // namespace infdoctor::report
