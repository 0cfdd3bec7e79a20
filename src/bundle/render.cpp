// The human files of the bundle: summary.md for the ticket, repro.sh for the provider,
// report.html with inline SVG plots for anyone with a browser.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "bundle/bundle.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/version.h"
#include "report/text.h"
#include "run/workload.h"

namespace infdoctor::bundle {
namespace {

using nlohmann::json;
using core::html_escape;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

checks::CheckResult* find_mut(run::RunResult& r, const std::string& id) {
  for (auto& c : r.checks)
    if (c.id == id) return &c;
  return nullptr;
}

// Text for a Markdown table cell or heading: one line, no column breaks.
std::string md_cell(const std::string& s) {
  std::string out;
  for (const char ch : s) {
    if (ch == '|') out += "\\|";
    else if (ch == '\n' || ch == '\r') out += ' ';
    else out += ch;
  }
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}


// A small SVG chart: axes with ticks, one or more series as lines or points.
struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
  bool line = true;
  std::string color = "#1f6feb";
};

std::string svg_chart(const std::string& id, const std::string& x_label, const std::string& y_label,
                      const std::vector<Series>& series) {
  const double W = 560, H = 300, L = 64, R = 16, T = 16, B = 48;
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  std::size_t n = 0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y1 = std::max(y1, y);
      y0 = std::min(y0, y);
      ++n;
    }
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" << id << "\" data-points=\"" << n << "\" viewBox=\"0 0 " << W
    << " " << H << "\" width=\"" << W << "\" height=\"" << H << "\" role=\"img\">";
  if (n == 0) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\" class=\"empty\">not measured in this run</text></svg>";
    return o.str();
  }
  if (x1 == x0) {
    x0 -= 1;
    x1 += 1;
  }
  if (y1 <= y0) y1 = y0 + 1;
  y1 *= 1.1;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#555\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#555\"/>";
  for (int i = 0; i <= 4; ++i) {
    const double xv = x0 + (x1 - x0) * i / 4, yv = y0 + (y1 - y0) * i / 4;
    o << "<text x=\"" << px(xv) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\" class=\"tick\">" << fmt("%.4g", xv) << "</text>";
    o << "<text x=\"" << L - 6 << "\" y=\"" << py(yv) + 4 << "\" text-anchor=\"end\" class=\"tick\">" << fmt("%.4g", yv) << "</text>";
    o << "<line x1=\"" << L << "\" y1=\"" << py(yv) << "\" x2=\"" << W - R << "\" y2=\"" << py(yv) << "\" stroke=\"#eee\"/>";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">" << html_escape(x_label) << "</text>";
  o << "<text x=\"14\" y=\"" << (T + H - B) / 2 << "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << (T + H - B) / 2 << ")\">"
    << html_escape(y_label) << "</text>";
  int legend = 0;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    if (s.line && s.points.size() > 1) {
      o << "<polyline fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"2\" points=\"";
      for (const auto& [x, y] : s.points) o << px(x) << "," << py(y) << " ";
      o << "\"/>";
    }
    for (const auto& [x, y] : s.points)
      o << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << s.color << "\"><title>" << fmt("%.4g", x)
        << ", " << fmt("%.4g", y) << "</title></circle>";
    o << "<text x=\"" << W - R - 4 << "\" y=\"" << T + 14 + 14 * legend++ << "\" text-anchor=\"end\" fill=\"" << s.color << "\">"
      << html_escape(s.name) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

// Horizontal bars, one per named value, for a breakdown.
std::string svg_bars(const std::string& id, const std::string& unit, const std::vector<std::pair<std::string, double>>& bars) {
  const double W = 560, row = 30, L = 110, R = 90, T = 10;
  const double H = T * 2 + row * std::max<std::size_t>(bars.size(), 1);
  double mx = 0;
  for (const auto& b : bars) mx = std::max(mx, b.second);
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"" << id << "\" data-points=\"" << bars.size() << "\" viewBox=\"0 0 "
    << W << " " << H << "\" width=\"" << W << "\" height=\"" << H << "\" role=\"img\">";
  if (bars.empty()) {
    o << "<text x=\"" << W / 2 << "\" y=\"" << H / 2 << "\" text-anchor=\"middle\" class=\"empty\">not measured in this run</text></svg>";
    return o.str();
  }
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const double y = T + row * static_cast<double>(i);
    const double w = mx > 0 ? std::max(1.0, bars[i].second / mx * (W - L - R)) : 1.0;
    o << "<text x=\"" << L - 8 << "\" y=\"" << y + 19 << "\" text-anchor=\"end\">" << html_escape(bars[i].first) << "</text>"
      << "<rect x=\"" << L << "\" y=\"" << y + 6 << "\" width=\"" << w << "\" height=\"18\" fill=\"#0969da\"><title>"
      << fmt("%.1f", bars[i].second) << " " << unit << "</title></rect>"
      << "<text x=\"" << L + w + 6 << "\" y=\"" << y + 19 << "\">" << fmt("%.1f ", bars[i].second) << unit << "</text>";
  }
  o << "</svg>";
  return o.str();
}

std::string figure(const std::string& id, const std::string& caption, const std::string& svg) {
  return "<figure data-plot=\"" + id + "\">" + svg + "<figcaption>" + html_escape(caption) + "</figcaption></figure>\n";
}

}  // namespace

std::string render_summary(const run::RunResult& r, const Context& ctx) {
  std::ostringstream o;
  o << "# infdoctor evidence: " << r.target.base_url << "\n\n";
  o << "Run from " << r.started_at << " to " << r.finished_at << " (UTC) by infdoctor " << core::kVersion;
  if (!ctx.models.empty()) {
    o << "; models:";
    for (const auto& m : ctx.models) o << " `" << m << "`";
  }
  o << (ctx.partial ? ". **The run was interrupted: this bundle holds what was measured until then.**" : ".") << "\n\n";
  if (!r.unreachable.empty()) o << "**The model could not be reached:** " << r.unreachable << "\n\n";
  o << "## Symptom\n\n";
  bool stated = false;
  auto line = [&](const char* label, const std::string& name) {
    if (auto v = run::metric(r, name)) {
      o << "- " << label << ": " << rules::format_metric(name, *v) << " (`" << name << "`)\n";
      stated = true;
    }
  };
  line("Time to first token, short prompt, median", "baseline.ttft_p50_ms");
  line("Time per output token, median", "baseline.tpot_p50_ms");
  line("End-to-end, median", "baseline.total_p50_ms");
  line("Same for the small model, per token", "baseline.small_tpot_p50_ms");
  line("TCP round trip, median", "path.tcp_rtt_p50_ms");
  line("TLS handshake, median", "transport.tls_p50_ms");
  line("DNS lookup, median", "dns.p50_ms");
  // A probe (the exporter's module) has no checklist medians: its one request speaks for it.
  for (const auto& c : r.checks)
    for (const auto& [s, _] : c.requests)
      if (!stated && s.ok && s.ttft_ms && s.total_ms) {
        o << "- One request (" << c.id << "): time to first token " << rules::format_metric("ttft_ms", *s.ttft_ms)
          << ", end to end " << rules::format_metric("total_ms", *s.total_ms) << "\n";
        stated = true;
      }
  o << "\n## Ranked causes\n\n";
  if (r.diagnosis.empty()) o << "No finding: nothing measured explains slowness.\n";
  if (const auto priced = run::describe_workload(r.run_metrics); !priced.empty()) o << priced << "\n\n";
  const auto metrics = run::flatten_metrics(r);
  if (!r.adaptations.empty()) o << run::describe_adaptations(r.adaptations) << "\n";
  if (const auto how = run::describe_requests(r); !how.empty()) o << how << "\n";
  if (const auto engine = run::describe_engine(r.engine, r.run_metrics); !engine.empty()) o << engine << "\n";
  int i = 0;
  for (const auto& f : r.diagnosis) {
    o << ++i << ". **" << f.title << "** (" << rules::severity_name(f.severity) << "; " << rules::cause_and_scope(f)
      << "): " << rules::describe_impact(f, metrics) << ", confidence " << fmt("%.2f", f.confidence) << ".  \n   "
      << f.explanation << "\n";
  }
  std::vector<std::string> questions;
  for (const auto& f : r.diagnosis)
    for (const auto& q : f.ask_provider)
      if (std::find(questions.begin(), questions.end(), q) == questions.end()) questions.push_back(q);
  if (!questions.empty()) {
    o << "\n## Questions for the provider\n\n";
    for (const auto& q : questions) o << "- " << q << "\n";
  }
  // The requests that show the top finding best, ranked by its own signal (a cold start by time to
  // first token, slow decode by time per token); without one, the slowest.
  const rules::Finding* top = nullptr;
  for (const auto& f : r.diagnosis)
    if (f.severity != rules::Severity::Info) {
      top = &f;
      break;
    }
  const run::CauseSignal signal = top ? run::signal_of(rules::cause_label(*top)) : run::CauseSignal{};
  const auto rows = run::slowest_requests(r, 10, {}, signal.rank);
  if (!rows.empty()) {
    if (signal.rank)
      o << "\n## Requests that show " << rules::cause_label(*top) << " most (ranked by " << signal.name << ")\n\n";
    else
      o << "\n## Slowest requests\n\n";
    o << "| started (UTC) | check | model | request id | trace id | prompt tokens | output tokens | TTFT ms | ms per token "
         "| total ms | status |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    const auto count = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
    for (const auto& [check, s] : rows)
      o << "| " << s->started_at << " | " << check->id << " | " << md_cell(s->model) << " | `" << md_cell(s->request_id) << "` | `"
        << md_cell(s->trace_id) << "` | " << count(s->prompt_tokens) << " | " << count(s->output_tokens) << " | "
        << (s->ttft_ms ? fmt("%.1f", *s->ttft_ms) : "-") << " | " << (s->tpot_ms ? fmt("%.2f", *s->tpot_ms) : "-") << " | "
        << (s->total_ms ? fmt("%.1f", *s->total_ms) : "-") << " | " << (s->ok ? "ok" : s->error.empty() ? "failed" : s->error)
        << " |\n";
  }
  // Where the requests left from, as this host saw it (behind NAT the provider sees another address).
  std::set<std::string> local;
  for (const auto& c : r.checks)
    for (const auto& req : c.requests)
      if (!req.sample.local_ip.empty()) local.insert(req.sample.local_ip);
  if (!local.empty()) {
    o << "\nClient: requests left from " << core::join(std::vector<std::string>(local.begin(), local.end()), ", ")
      << " (this host's address on the connection; behind NAT or a proxy the provider sees another).\n";
  }
  o << "\n## How to reproduce\n\n- `sh repro.sh` sends again, with curl, the requests that showed "
    << (ctx.repro_shows.empty() ? std::string("the run's baseline") : "the top finding (" + ctx.repro_shows + ")")
    << " and prints each one's time to its first content beside the run's; it reads the API key from `$"
    << ctx.api_key_env << "`.\n- The run itself: `" << ctx.command_line << "`\n";
  o << "\n## Checks\n\n| check | status | took | result |\n|---|---|---|---|\n";
  for (const auto& c : r.checks)
    o << "| " << c.id << " | " << checks::status_name(c.status) << " | " << fmt("%.1f s", c.duration_ms / 1000) << " | "
      << md_cell(report::check_headline(c)) << " |\n";
  for (const auto& c : r.checks)
    for (const auto& t : c.tables) {
      o << "\n### " << md_cell(t.title) << "\n\n|";
      for (const auto& col : t.columns) o << " " << md_cell(col) << " |";
      o << "\n|";
      for (std::size_t i = 0; i < t.columns.size(); ++i) o << "---|";
      o << "\n";
      for (const auto& row : t.rows) {
        o << "|";
        for (std::size_t i = 0; i < t.columns.size(); ++i) o << " " << md_cell(i < row.size() ? row[i] : "") << " |";
        o << "\n";
      }
      if (!t.note.empty()) o << "\n" << md_cell(t.note) << "\n";
    }
  o << "\nEvery number above is in results.json; samples.jsonl has one line per request; report.html has the plots.\n";
  return o.str();
}

std::string render_repro(const Context& ctx) {
  std::ostringstream o;
  const std::string base = core::redact_url(ctx.base_url);
  std::string headers = "-H \"" + api::key_header(ctx.auth, "${" + ctx.api_key_env + ":-}") + "\"";
  for (const auto& h : ctx.headers) headers += " -H " + shell_quote(h);
  const std::string query = ctx.query.empty() ? "" : "?" + ctx.query;
  const bool anthropic = ctx.flavour == api::Flavour::Anthropic;
  o << "#!/bin/sh\n"
    << "# Sends again, with curl, the requests that showed "
    << (ctx.repro_shows.empty() ? std::string("the run's baseline") : "the top finding (" + ctx.repro_shows + ")")
    << ":\n# the same prompt length, max_tokens and idle gap before each. Each is timed to its first\n"
    << "# content event, as infdoctor timed it (without connection setup), and printed beside the\n"
    << "# run's number; the raw stream goes to a file ($OUT/repro-N.sse), not the terminal.\n"
    << "# The API key is read from $" << ctx.api_key_env << " at run time; it is not in this file.\n"
    << "set -eu\nBASE_URL=${BASE_URL:-" << shell_quote(base) << "}\n"
    << "# MODEL and SMALL_MODEL, like BASE_URL, default to the run's and can be set to ask elsewhere.\n"
    << "MODEL=${MODEL:-" << shell_quote(ctx.models.empty() ? "" : ctx.models[0]) << "}\n"
    << (ctx.models.size() > 1 ? "SMALL_MODEL=${SMALL_MODEL:-" + shell_quote(ctx.models[1]) + "}\n" : "")
    << "OUT=${OUT:-.}\nn=0\n"
    << "# Nanoseconds since the epoch: GNU date's %N, else Perl's clock (BSD and macOS date lack %N).\n"
    << "now() {\n  t=$(date +%s%N)\n  case \"$t\" in\n    *N) perl -MTime::HiRes=time -e 'printf \"%.0f\\n\", time * 1e9' ;;\n"
    << "    *) echo \"$t\" ;;\n  esac\n}\n\n"
    << "echo '== GET /models (curl: connect, TLS, first byte)'\n"
    << "curl -sS -o /dev/null -w 'connect %{time_connect}s tls %{time_appconnect}s first byte %{time_starttransfer}s http %{http_code}\\n' "
    << headers << " \"$BASE_URL/models" << query << "\"\n\n"
    << "# ask WHAT IDLE_S RUN_TTFT_MS BODY: waits IDLE_S, sends BODY streamed, keeps the stream in\n"
    << "# $OUT/repro-N.sse and prints the time to its first content event beside the run's ('-': none).\n"
    << "ask() {\n"
    << "  n=$((n + 1)); out=\"$OUT/repro-$n.sse\"; : > \"$out\"\n"
    << "  if [ \"$2\" != 0 ]; then echo \"(idle $2 s)\"; sleep \"$2\"; fi\n"
    << "  start=$(now)\n"
    << "  first=$(curl -sS -N -w '%{stderr}%{time_pretransfer}\\n' -H 'Content-Type: application/json' " << headers
    << " \\\n    -d \"$4\" \"$BASE_URL" << api::chat_path(ctx.flavour) << query << "\" 2>\"$out.curl\" | {\n"
    << "    first=\n"
    << "    while IFS= read -r line; do\n"
    << "      printf '%s\\n' \"$line\" >>\"$out\"\n"
    << "      if [ -z \"$first\" ]; then\n"
    << "        case \"$line\" in *'\"content\":\"'[!\\\"]* | *'\"text\":\"'[!\\\"]*) first=$(now) ;; esac\n"
    << "      fi\n"
    << "    done\n"
    << "    echo \"$first\"\n"
    << "  }) || true\n"
    << "  setup=$(tail -n 1 \"$out.curl\")\n"
    << "  if [ -z \"$first\" ]; then echo \"$1: no content event (see $out and $out.curl)\"; return 0; fi\n"
    << "  awk -v a=\"$start\" -v b=\"$first\" -v s=\"$setup\" -v run=\"$3\" -v what=\"$1\" -v out=\"$out\" 'BEGIN {\n"
    << "    ms = (b - a) / 1e6 - s * 1000\n"
    << "    if (run == \"-\") printf \"%s: first content after %.0f ms; stream in %s\\n\", what, ms, out\n"
    << "    else printf \"%s: first content after %.0f ms (run: %.0f ms, %+.0f %%); stream in %s\\n\", what, ms, run, (ms / run - 1) * 100, out\n"
    << "  }'\n"
    << "}\n";
  // Each request's body as the run sent it: the model from the shell, the prompt's first word
  // made unique at send time (as the run makes it, so no prefix cache serves it).
  for (const auto& r : ctx.repro) {
    const std::string prompt = api::synthetic_prompt(std::max(1, r.prompt_words));
    const auto space = prompt.find(' ');
    json body = {{"model", "@MODEL@"},
                 {"messages", json::array({{{"role", "user"}, {"content", "@WORD@" + (space == std::string::npos ? "" : prompt.substr(space))}}})},
                 {"max_tokens", r.max_tokens},
                 {"stream", true}};
    if (!anthropic) body["stream_options"] = {{"include_usage", true}};
    std::string text = body.dump();
    std::string shell;
    for (;;) {
      const auto m = text.find("@MODEL@"), w = text.find("@WORD@");
      if (m == std::string::npos && w == std::string::npos) break;
      const bool model_first = w == std::string::npos || (m != std::string::npos && m < w);
      const auto at = model_first ? m : w;
      shell += shell_quote(text.substr(0, at)) + (model_first ? (r.small_model ? "\"$SMALL_MODEL\"" : "\"$MODEL\"")
                                                              : std::string("\"r$(now)\""));
      text = text.substr(at + (model_first ? 7 : 6));
    }
    shell += shell_quote(text);
    char run_ms[32] = "-";  // a warm-up: nothing to compare with
    if (r.run_ttft_ms > 0) std::snprintf(run_ms, sizeof run_ms, "%.0f", r.run_ttft_ms);
    o << "\nask " << shell_quote(r.what) << " " << checks::format_number(std::ceil(r.idle_before_s)) << " " << run_ms << " \\\n  "
      << shell << "\n";
  }
  return o.str();
}

std::string render_html(const run::RunResult& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>infdoctor report: "
    << html_escape(r.target.base_url) << "</title>\n<style>"
    << "body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1200px;color:#222}"
    << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}table{border-collapse:collapse}"
    << "td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}figure{display:inline-block;margin:8px;vertical-align:top}"
    << "figcaption{font-size:12px;color:#555;max-width:560px}.tick{font-size:10px;fill:#555}.empty{fill:#999}"
    << ".critical{color:#b00020}.warning{color:#a15c00}.info{color:#555}</style></head><body>\n";
  o << "<h1>infdoctor report: " << html_escape(r.target.base_url) << "</h1><p>" << html_escape(r.started_at) << " to "
    << html_escape(r.finished_at) << " (UTC)</p>\n";
  if (!r.interrupted_by.empty())
    o << "<p><b>Partial:</b> the run was interrupted (" << html_escape(r.interrupted_by) << ").</p>\n";
  if (!r.unreachable.empty()) o << "<p><b>The model could not be reached:</b> " << html_escape(r.unreachable) << "</p>\n";
  o << "<h2>Diagnosis</h2>\n";
  if (r.diagnosis.empty()) o << "<p>No finding: nothing measured explains slowness.</p>\n";
  o << "<ol id=\"diagnosis\">";
  const auto metrics = run::flatten_metrics(r);
  for (const auto& f : r.diagnosis) {
    o << "<li class=\"" << rules::severity_name(f.severity) << "\"><b>" << html_escape(f.title) << "</b> (" << rules::severity_name(f.severity)
      << ", " << html_escape(rules::cause_and_scope(f)) << "): " << html_escape(rules::describe_impact(f, metrics))
      << ", confidence " << fmt("%.2f", f.confidence) << "<br>" << html_escape(f.explanation);
    for (const auto& q : f.ask_provider) o << "<br>Ask the provider: " << html_escape(q);
    for (const auto& a : f.actions) o << "<br>You can: " << html_escape(a);
    o << "</li>";
  }
  o << "</ol>\n<h2>Plots</h2>\n";

  // The plots read each check's free-form details and samples. Results read back from a file may
  // have been edited or come from another version: what cannot be read is said, not drawn.
  {
    run::RunResult rc = r;  // non-const access: a missing key reads as null, not undefined behaviour
    std::ostringstream p;
    try {
      // TTFT against prompt tokens, with the fit.
      Series pts{"measured", {}, false, "#1f6feb"}, fit{"fit", {}, true, "#d1242f"};
      if (auto* c = find_mut(rc, "sweep")) {
        for (const auto& [s, label] : c->requests)
          if (label.is_object() && label.value("sweep", "") == "prefill" && s.ttft_ms && s.prompt_tokens)
            pts.points.emplace_back(static_cast<double>(*s.prompt_tokens), *s.ttft_ms);
        auto slope = c->metrics.find("prefill_ms_per_token"), icpt = c->metrics.find("prefill_overhead_ms");
        if (slope != c->metrics.end() && icpt != c->metrics.end() && !pts.points.empty()) {
          const auto [mn, mx] = std::minmax_element(pts.points.begin(), pts.points.end());
          for (double x : {mn->first, mx->first}) fit.points.emplace_back(x, icpt->second + slope->second * x);
        }
      }
      p << figure("ttft-vs-prompt", "Time to first token against prompt tokens (max_tokens=1), with the Theil-Sen fit.",
                  svg_chart("ttft-vs-prompt-svg", "prompt tokens", "TTFT ms", {pts, fit}));

      // Latency and throughput against concurrency.
      Series ttft_c{"TTFT p50 ms", {}, true, "#1f6feb"}, thr_c{"tokens/s", {}, true, "#1a7f37"};
      if (auto* c = find_mut(rc, "concurrency"); c && c->details.contains("levels"))
        for (auto& l : c->details["levels"]) {
          ttft_c.points.emplace_back(l["streams"].get<double>(), l["ttft_p50_ms"].get<double>());
          thr_c.points.emplace_back(l["streams"].get<double>(), l["throughput_tokens_per_s"].get<double>());
        }
      p << figure("latency-vs-concurrency", "Median time to first token against parallel streams.",
                  svg_chart("latency-vs-concurrency-svg", "parallel streams", "TTFT ms", {ttft_c}));
      p << figure("throughput-vs-concurrency", "Output tokens per second against parallel streams.",
                  svg_chart("throughput-vs-concurrency-svg", "parallel streams", "tokens/s", {thr_c}));

      // TTFT against idle gap.
      Series gap{"TTFT after the gap", {}, true, "#8250df"}, base{"back-to-back baseline", {}, true, "#999999"};
      if (auto* c = find_mut(rc, "coldstart"); c && c->details.contains("gaps")) {
        for (auto& g : c->details["gaps"]) gap.points.emplace_back(g["gap_s"].get<double>(), g["ttft_ms"].get<double>());
        if (auto b = c->metrics.find("baseline_ttft_p50_ms"); b != c->metrics.end() && !gap.points.empty()) {
          base.points.emplace_back(gap.points.front().first, b->second);
          base.points.emplace_back(gap.points.back().first, b->second);
        }
      }
      p << figure("ttft-vs-idle-gap", "Time to first token after an idle gap, against back-to-back requests.",
                  svg_chart("ttft-vs-idle-gap-svg", "idle seconds", "TTFT ms", {gap, base}));

      // Hop RTTs.
      Series hops{"median RTT", {}, true, "#bf3989"};
      if (auto* c = find_mut(rc, "path"); c && c->details.contains("addresses") && !c->details["addresses"].empty()) {
        auto& a = c->details["addresses"][0];
        if (a.contains("hops"))
          for (auto& h : a["hops"]["table"])
            if (h["p50_ms"].is_number()) hops.points.emplace_back(h["ttl"].get<double>(), h["p50_ms"].get<double>());
      }
      p << figure("hop-rtts", "Round trip to each hop of the path (first address).", svg_chart("hop-rtts-svg", "hop", "RTT ms", {hops}));
      o << p.str();
    } catch (const json::exception& e) {
      o << "<p>Plots: the details in these results are unreadable (" << html_escape(e.what()) << ").</p>\n";
    }
  }

  // Per-phase breakdown of a typical request.
  std::vector<std::pair<std::string, double>> bars;
  const auto total = run::metric(r, "baseline.total_p50_ms"), first = run::metric(r, "baseline.ttft_p50_ms");
  for (const auto& [name, v] : std::vector<std::pair<std::string, std::optional<double>>>{
           {"DNS", run::metric(r, "dns.p50_ms")},
           {"TCP connect", run::metric(r, "transport.connect_p50_ms")},
           {"TLS", run::metric(r, "transport.tls_p50_ms")},
           {"first token", first},
           {"generation", total && first ? std::optional<double>(*total - *first) : std::nullopt}})
    if (v) bars.emplace_back(name, *v);
  o << figure("phase-breakdown",
              "Median time per phase of a request: DNS, connect and TLS of a fresh connection, then the baseline "
              "request's first token (without connection setup) and its generation.",
              svg_bars("phase-breakdown-svg", "ms", bars));

  o << "<h2>Checks</h2><table><tr><th>check</th><th>status</th><th>took</th><th>result</th></tr>";
  for (const auto& c : r.checks)
    o << "<tr><td>" << c.id << "</td><td>" << checks::status_name(c.status) << "</td><td>" << fmt("%.1f s", c.duration_ms / 1000)
      << "</td><td>" << html_escape(report::check_headline(c)) << "</td></tr>";
  o << "</table>\n";
  for (const auto& c : r.checks)
    for (const auto& t : c.tables) {
      o << "<h3>" << html_escape(t.title) << "</h3><table><tr>";
      for (const auto& col : t.columns) o << "<th>" << html_escape(col) << "</th>";
      o << "</tr>";
      for (const auto& row : t.rows) {
        o << "<tr>";
        for (const auto& cell : row) o << "<td>" << html_escape(cell) << "</td>";
        o << "</tr>";
      }
      o << "</table>\n";
      if (!t.note.empty()) o << "<p>" << html_escape(t.note) << "</p>\n";
    }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace infdoctor::bundle
