// Every registered check has its row in checks/README.md and its own test file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/concurrency.h"
#include "checks/dns.h"
#include "checks/path.h"
#include "checks/registry.h"
#include "checks/transport.h"
#include "core/strings.h"

namespace infdoctor {

TEST_CASE("registry: ids are unique, documented and tested, and metrics carry their check id and a unit") {
  const std::string root = INFDOCTOR_SOURCE_DIR;
  std::ifstream readme(root + "/checks/README.md");
  REQUIRE(readme.good());
  std::stringstream ss;
  ss << readme.rdbuf();
  const std::string doc = ss.str();
  std::set<std::string> ids;
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    CHECK(ids.insert(e.id).second);
    CHECK_MESSAGE(doc.find("| " + e.id + " |") != std::string::npos, "checks/README.md has no row for " << e.id);
    CHECK_MESSAGE(std::filesystem::exists(root + "/tests/checks/" + e.id + "_test.cpp"), "no test file for " << e.id);
    const auto check = e.make(checks::Options{});
    CHECK(check->info().id == e.id);
    for (const auto& metric : check->info().metrics) {
      CAPTURE(metric.name);
      CHECK(metric.name.rfind(e.id + ".", 0) == 0);
      const std::string unit = metric.name.substr(metric.name.rfind('_') + 1);
      CHECK(std::set<std::string>{"ms", "us", "s", "bytes", "count", "ratio", "pct", "token", "tokens", "kb", "mb"}
                .count(unit) == 1);
    }
  }
}

namespace {

// "a_{p50,p90}_ms" -> {"a_p50_ms", "a_p90_ms"}; every brace group expands.
std::vector<std::string> expand_braces(const std::string& text) {
  const auto open = text.find('{');
  const auto close = open == std::string::npos ? std::string::npos : text.find('}', open);
  if (close == std::string::npos) return {text};
  std::vector<std::string> out;
  std::stringstream alternatives(text.substr(open + 1, close - open - 1));
  for (std::string alt; std::getline(alternatives, alt, ',');)
    for (const auto& rest : expand_braces(text.substr(close + 1))) out.push_back(text.substr(0, open) + alt + rest);
  return out;
}

// The metric names a row of checks/README.md lists in its last column, as `code`.
std::set<std::string> documented_metrics(const std::string& doc, const std::string& id) {
  const auto row = doc.find("\n| " + id + " |");
  REQUIRE(row != std::string::npos);
  const std::string line = doc.substr(row + 1, doc.find('\n', row + 1) - row - 1);
  const std::string emits = line.substr(line.rfind('|', line.size() - 2));
  std::set<std::string> out;
  for (std::size_t at = emits.find('`'); at != std::string::npos; at = emits.find('`', at)) {
    const auto end = emits.find('`', at + 1);
    if (end == std::string::npos) break;
    for (const auto& name : expand_braces(emits.substr(at + 1, end - at - 1)))
      if (name.rfind(id + ".", 0) == 0) out.insert(name);
    at = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("registry: checks/README.md lists exactly the metrics each check declares") {
  std::ifstream readme(std::string(INFDOCTOR_SOURCE_DIR) + "/checks/README.md");
  REQUIRE(readme.good());
  std::stringstream ss;
  ss << readme.rdbuf();
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    std::set<std::string> declared;
    for (const auto& m : e.info->metrics) declared.insert(m.name);
    const std::set<std::string> documented = documented_metrics(ss.str(), e.id);
    for (const auto& name : declared) CHECK_MESSAGE(documented.count(name), "checks/README.md does not list " << name);
    for (const auto& name : documented) CHECK_MESSAGE(declared.count(name), "checks/README.md lists undeclared " << name);
  }
}

namespace {

// A string literal of a source file: its text as written, its line, and where it stands in the
// file's code (comments dropped, every literal written as "").
struct Literal {
  std::string text;
  int line = 0;
  std::size_t at = 0;
};

std::vector<Literal> literals_of(const std::string& src, std::string& code) {
  std::vector<Literal> out;
  int line = 1;
  for (std::size_t i = 0; i < src.size(); ++i) {
    const char c = src[i];
    if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) break;
      --i;  // the newline is counted as code
      continue;
    }
    if (src.compare(i, 2, "/*") == 0) {
      const auto end = src.find("*/", i + 2);
      line += static_cast<int>(std::count(src.begin() + static_cast<long>(i), src.begin() + static_cast<long>(std::min(end, src.size())), '\n'));
      i = end == std::string::npos ? src.size() : end + 1;
      continue;
    }
    if (c == '"' || c == '\'') {
      std::string text;
      for (++i; i < src.size() && src[i] != c; ++i) {
        if (src[i] == '\\' && i + 1 < src.size()) text += src[i++];
        text += src[i];
      }
      if (c == '"') out.push_back({text, line, code.size()});
      code += c == '"' ? "\"\"" : "' '";
      continue;
    }
    if (c == '\n') ++line;
    code += c;
  }
  return out;
}

// Where a check file names a metric by hand instead of through its declared constant
// (checks/<id>.h): a declared full name anywhere; a literal in the name of what a CheckResult
// sets or reads (a whole key, a stem or a piece of one); one of the check's own keys (`own`)
// handed to a call or as a headline's `when`. The keys of a details row ({"p50_ms", ...}) name
// fields of that row, not metrics. Each problem is "line N: why".
std::vector<std::string> hand_spelled_metrics(const std::string& src, const std::set<std::string>& full,
                                              const std::set<std::string>& own) {
  std::string code;
  const std::vector<Literal> literals = literals_of(src, code);
  static const std::regex metric_call(R"((\bset|\badd_summary|\badd_median_ci|\bmetric|\bmetrics\s*\.\s*\w+)\s*$)");
  static const std::regex metric_subscript(R"(\bmetrics\s*$)");
  std::vector<std::string> out;
  for (const auto& l : literals) {
    const std::string where = "line " + std::to_string(l.line) + ": \"" + l.text + "\" ";
    if (full.count(l.text)) {
      out.push_back(where + "is a metric's full name outside its declaration");
      continue;
    }
    // The innermost bracket open before the literal, and whether the literal is in its first part.
    char open = 0;
    std::size_t open_at = 0;
    bool first = true;
    for (std::size_t i = l.at, depth = 0; i-- > 0;) {
      const char c = code[i];
      if (c == ')' || c == ']' || c == '}') ++depth;
      else if (c == '(' || c == '[' || c == '{') {
        if (depth == 0) {
          open = c;
          open_at = i;
          break;
        }
        --depth;
      } else if (c == ',' && depth == 0) first = false;
    }
    const std::string callee = code.substr(open_at >= 40 ? open_at - 40 : 0, open_at >= 40 ? 40 : open_at);
    if (first && ((open == '(' && std::regex_search(callee, metric_call)) ||
                  (open == '[' && std::regex_search(callee, metric_subscript)))) {
      out.push_back(where + "names a metric a result sets or reads");
      continue;
    }
    if (!own.count(l.text)) continue;
    const std::string after = code.substr(l.at + 2, 16);
    if (open == '(') out.push_back(where + "is one of the check's metrics, handed to a call");
    else if (open == '{' && first && std::regex_search(after, std::regex(R"(^\s*,\s*"")")))
      out.push_back(where + "is one of the check's metrics, as a headline's when");
  }
  return out;
}

}  // namespace

TEST_CASE("registry: the scan for hand-spelled metric names finds each way of spelling one") {
  const std::string planted = R"(// planted
  out.set("ttft_p50_ms", v);
  out.add_summary("tcp_rtt", "ms", xs);
  out.set(prefix + "_ttft_p50_ms", v);
  const auto m = put("ttft_p50_ms", xs);
  {"baseline.ttft_p50_ms", "ms", "help"},
  {{"ttft_p50_ms", "TTFT {ttft_p50_ms}"},
  out.metrics["ttft_p50_ms"] = 1; if (out.metrics.count("ttft_p50_ms")) {}
  primary->set("ttft_p50_ms", v);
  // out.set("in_a_comment_ms", 1); /* out.set("in_a_block_ms", 1); */
  row = {{"ttft_p50_ms", 1}, {"p50_ms", 2}, {"note", "a \"quoted\" set(\"x\") in text"}};
  if (auto v = median(xs)) set["ttft_p50_ms"] = *v;  // a details row named set
  out.set(baseline_metric::ttft_p50_ms, cell(row["ttft_p50_ms"], "ms") == "" ? 1 : 0);
  ctx.progress("baseline: " + model);
)";
  const auto found = hand_spelled_metrics(planted, {"baseline.ttft_p50_ms"}, {"ttft_p50_ms"});
  std::vector<int> lines;
  for (const auto& f : found) lines.push_back(std::stoi(f.substr(5)));
  const std::vector<int> planted_lines = {2, 3, 4, 5, 6, 7, 8, 8, 9};
  CHECK_MESSAGE(lines == planted_lines, core::join(found, "\n"));
}

TEST_CASE("registry: no check file spells a metric's name outside its declaration") {
  // Each metric is declared once, as a constant in checks/<id>.h: the check's CheckInfo names it
  // through that constant, the check sets it through it, and other code reads it through it.
  std::set<std::string> full;
  std::map<std::string, std::set<std::string>> own;  // check id -> its keys
  for (const auto& e : checks::registry())
    for (const auto& m : e.info->metrics) {
      full.insert(m.name);
      own[e.id].insert(m.name.substr(e.id.size() + 1));
    }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(INFDOCTOR_SOURCE_DIR) + "/checks")) {
    if (entry.path().extension() != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string id = entry.path().stem().string();
    CAPTURE(id);
    for (const auto& problem : hand_spelled_metrics(ss.str(), full, own[id]))
      FAIL_CHECK("checks/" << id << ".cpp " << problem << ": declare it in checks/" << id << ".h (" << id
                                << "_metric) and name it through the constant");
  }
  CHECK(files >= static_cast<int>(checks::registry().size()));
}

TEST_CASE("registry: a result stores a metric set through its constant under its key, and a summary's under each") {
  checks::CheckResult r = checks::CheckResult::start("path");
  r.set(checks::path_metric::tcp_loss_ratio, 0.25);
  CHECK(r.metrics == std::map<std::string, double>{{"tcp_loss_ratio", 0.25}});
  namespace pm = checks::path_metric;
  r.add_summary({pm::tcp_rtt_p50_ms, pm::tcp_rtt_p90_ms, pm::tcp_rtt_max_ms, pm::tcp_rtt_samples_count}, {});
  CHECK(r.metrics.count("tcp_rtt_samples_count") == 1);
  CHECK(r.metrics.count("tcp_rtt_p50_ms") == 0);  // nothing to summarise: only the count
  const std::vector<double> rtt = {10, 30, 20, 40, 50, 60, 70, 80, 90, 100};
  r.add_summary({pm::tcp_rtt_p50_ms, pm::tcp_rtt_p90_ms, pm::tcp_rtt_max_ms, pm::tcp_rtt_samples_count}, rtt);
  r.add_median_ci({pm::tcp_rtt_p50_ci_low_ms, pm::tcp_rtt_p50_ci_high_ms}, rtt);
  CHECK(r.metrics["tcp_rtt_samples_count"] == 10);
  CHECK(r.metrics["tcp_rtt_p50_ms"] == 55);  // an even count's median: between its middle two
  CHECK(r.metrics["tcp_rtt_p90_ms"] == 90);
  CHECK(r.metrics["tcp_rtt_max_ms"] == 100);
  REQUIRE(r.metrics.count("tcp_rtt_p50_ci_low_ms") == 1);
  CHECK(r.metrics["tcp_rtt_p50_ci_low_ms"] <= 50);
  CHECK(r.metrics["tcp_rtt_p50_ci_high_ms"] >= 50);
  // Without a count key (the transport check counts its samples by their first bytes) none is set.
  checks::CheckResult t = checks::CheckResult::start("transport");
  namespace tm = checks::transport_metric;
  t.add_summary({tm::connect_p50_ms, tm::connect_p90_ms, tm::connect_max_ms}, rtt);
  CHECK(t.metrics == std::map<std::string, double>{{"connect_p50_ms", 55}, {"connect_p90_ms", 90}, {"connect_max_ms", 100}});
}

TEST_CASE("registry: the round trip to the endpoint is the route the requests take, through a proxy the tunnel's") {
  namespace pm = checks::path_metric;
  namespace tm = checks::transport_metric;
  checks::CheckResult path = checks::CheckResult::start("path"), transport = checks::CheckResult::start("transport");
  path.set(pm::tcp_rtt_p50_ms, 0.4);  // to whatever the path check probed
  transport.set(tm::reused_ttfb_p50_ms, 36);
  CHECK(checks::endpoint_round_trip_ms({}) == std::nullopt);
  CHECK(checks::endpoint_round_trip_ms({path, transport}) == 0.4);  // direct: the path check's connects
  path.set(pm::via_proxy_count, 1);  // the path check reached the proxy
  CHECK(checks::endpoint_round_trip_ms({path}) == std::nullopt);  // not the proxy's round trip
  CHECK(checks::endpoint_round_trip_ms({path, transport}) == 36);
  path.metrics.erase("via_proxy_count");
  transport.set(tm::via_proxy_count, 1);
  CHECK(checks::endpoint_round_trip_ms({path, transport}) == 36);
}

TEST_CASE("registry: a check reads exactly the settings it declares, and every default passes its declaration") {
  for (const auto& e : checks::registry()) {
    CAPTURE(e.id);
    checks::Options o;
    (void)e.make(o);
    std::set<std::string> declared;
    // A list capped by another check's setting (the load's users by the cap on parallel streams)
    // reads that cap too: a dependency its declaration names.
    std::set<std::string> caps;
    for (const auto& s : e.info->settings)
      if (s.capped_by && s.capped_by->check() != e.id) caps.insert(s.capped_by->key);
    for (const auto& s : e.info->settings) {
      CAPTURE(s.key);
      CHECK(declared.insert(s.key).second);
      CHECK(s.check() == e.id);
      CHECK(std::string(s.help).size() > 5);
      CHECK(checks::setting_problem(s, s.def) == "");
      CHECK(checks::find_setting(s.key) != nullptr);
    }
    std::set<std::string> expected = declared;
    expected.insert(caps.begin(), caps.end());
    CHECK(o.asked() == expected);
    CHECK(o.errors().empty());
  }
}

TEST_CASE("registry: checks/README.md's settings table lists every declared setting with its default") {
  std::ifstream readme(std::string(INFDOCTOR_SOURCE_DIR) + "/checks/README.md");
  REQUIRE(readme.good());
  std::map<std::string, std::string> documented;  // key -> default
  for (std::string line; std::getline(readme, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const auto cells = core::split(line.substr(2), '|');
    if (cells.size() < 3) continue;
    const auto trim = [](std::string t) {
      while (!t.empty() && t.front() == ' ') t.erase(t.begin());
      while (!t.empty() && t.back() == ' ') t.pop_back();
      return t;
    };
    const std::string key = trim(cells[0]);
    if (key.find('.') != std::string::npos && key.find(' ') == std::string::npos) documented[key] = trim(cells[1]);
  }
  std::map<std::string, std::string> declared;
  for (const auto& e : checks::registry())
    for (const auto& s : e.info->settings) declared[s.key] = s.def;
  CHECK(documented == declared);
}

TEST_CASE("registry: a value a setting refuses is named with what it accepts, a capped list with its cap") {
  namespace cs = checks::concurrency_setting;
  CHECK(checks::setting_problem(cs::levels, "1,2,4") == "");
  CHECK(checks::setting_problem(cs::levels, "1,4,2") ==
        "concurrency.levels: '1,4,2' is not an ascending list of numbers in [1, 4096], none above concurrency.max_streams");
  CHECK(checks::setting_problem(cs::levels, "") != "");
  CHECK(checks::setting_problem(cs::levels, "1,2,,4") != "");
  CHECK(checks::setting_problem(cs::levels, "1,2,16", 8.0) == "concurrency.levels: 16 is above concurrency.max_streams (8)");
  CHECK(checks::setting_problem(cs::max_streams, "8.5") == "concurrency.max_streams: '8.5' is not a whole number in [1, 4096]");
  CHECK(checks::setting_problem(cs::max_streams, "nan") != "");
  CHECK(checks::setting_problem(cs::max_streams, "1e3") == "");
  // A getter meeting a bad value anyway falls back to the default and keeps the problem.
  checks::Options o;
  o.set(cs::max_streams, "many");
  CHECK(o.whole(cs::max_streams) == 64);
  REQUIRE(o.errors().size() == 1);
  CHECK(o.errors()[0] == "concurrency.max_streams: 'many' is not a whole number in [1, 4096]");
}

}  // namespace infdoctor
