// report.html: the diagnosis, then what people look at first (the reference request as a
// waterfall of its terms, every request of the run on one timeline, one stream's token arrivals),
// then every chart the checks declared, in the order they ran, and the checks' tables. Inline SVG,
// no script.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "bundle/bundle.h"
#include "bundle/svg.h"
#include "checks/baseline.h"
#include "checks/dns.h"
#include "checks/registry.h"
#include "checks/transport.h"
#include "core/clock.h"
#include "core/strings.h"
#include "report/text.h"
#include "results/requests.h"
#include "results/run_metrics.h"
#include "stats/series.h"

namespace infdoctor::bundle {

namespace rm = results::run_metric;

namespace {

using core::fmt;
using core::html_escape;

// The finding the waterfall marks: the first with a cause and milliseconds.
const rules::Finding* top_finding(const results::RunResult& r) {
  for (const auto& f : r.diagnosis)
    if (!f.cause.empty() && f.impact_ms > 0) return &f;
  return nullptr;
}

// The reference request's terms one after another (run/workload.h), else the baseline's first
// token and generation; the top finding's term marked, or its milliseconds drawn first when they
// come on top of the request.
std::string reference_waterfall(const results::RunResult& r, const std::map<std::string, double>& m, std::string& caption) {
  const auto get = [&](const std::string& name) -> std::optional<double> {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional(it->second);
  };
  struct Term {
    std::string term, label;
    std::optional<double> ms;
  };
  std::vector<Term> terms;
  const auto prompt = get(rm::workload_prompt_tokens_count), output = get(rm::workload_output_tokens_count);
  if (get(rm::workload_total_ms)) {
    terms = {{"network", "network round trip", get(rm::workload_network_ms)},
             {"overhead", "fixed overhead", get(rm::workload_overhead_ms)},
             {"prefill", "prefill, " + core::count_of(prompt.value_or(0), "token"), get(rm::workload_prefill_ms)},
             {"decode", "decode, " + core::count_of(output.value_or(1) - 1, "token"), get(rm::workload_decode_ms)}};
    caption = "The reference request of " + core::count_of(prompt.value_or(0), "prompt token") + " and " +
              core::count_of(output.value_or(0), "output token") + ": each term as the run measured it, one after another.";
  } else {
    const auto first = get(checks::baseline_metric::ttft_p50_ms.name), total = get(checks::baseline_metric::total_p50_ms.name);
    terms = {{"", "first token", first}, {"decode", "generation", first && total ? std::optional(*total - *first) : std::nullopt}};
    caption = "The baseline request's median first token and generation (the run priced no reference request).";
  }
  std::vector<WaterfallRow> rows;
  const rules::Finding* top = top_finding(r);
  const std::string term = top ? std::string(rules::cause_term(top->cause)) : "";
  double at = 0;
  if (top && term.empty() && !terms.empty()) {
    rows.push_back({top->cause + " (on top)", 0, top->impact_ms, true, "the top finding"});
    at = top->impact_ms;
  }
  for (const auto& t : terms) {
    if (!t.ms) continue;
    const bool marked = top && !term.empty() && t.term == term;
    rows.push_back({t.label, at, std::max(0.0, *t.ms), marked, marked ? "the top finding's term" : ""});
    at += std::max(0.0, *t.ms);
  }
  const bool marked = std::any_of(rows.begin(), rows.end(), [](const WaterfallRow& w) { return w.marked; });
  if (top && marked)
    caption += " In red, " + std::string(term.empty() ? "on top of the request, " : "the term holding ") + "the top finding: " +
               top->cause + ", " + fmt("%.0f ms", top->impact_ms) + ".";
  else if (top)
    caption += " The top finding, " + top->cause + " (" + fmt("%.0f ms", top->impact_ms) + "), is in a term this run did not measure.";
  return svg_waterfall("reference-request-svg", rows);
}

// Every model request of the run by its start: usual ones, those the run's time series read as
// slow per token (results::read_series, as the rules do), failures and refusals; the stretches of
// consecutive slow requests shaded.
// The target model's requests are dots, the small model's rings.
struct Timeline {
  Series ttft{"usual", {}, false, "#1f6feb"}, ttft_slow{"slow per token", {}, false, "#d1242f"};
  Series tpot{"usual", {}, false, "#1f6feb"}, tpot_slow{"slow per token", {}, false, "#d1242f"};
  Series small_ttft{"small model", {}, false, "#1f6feb", Mark::Ring}, small_ttft_slow{"small model, slow", {}, false, "#d1242f", Mark::Ring};
  Series small_tpot{"small model", {}, false, "#1f6feb", Mark::Ring}, small_tpot_slow{"small model, slow", {}, false, "#d1242f", Mark::Ring};
  Series failed{"failed", {}, false, "#b00020", Mark::Cross}, refused{"refused or limited", {}, false, "#a15c00", Mark::Ring};
  Shading slow_periods{"slow period", {}};
};

Timeline request_timeline(const results::RunResult& r) {
  Timeline out;
  const auto t0 = core::parse_rfc3339_utc(r.started_at);
  if (!t0) return out;
  const stats::SeriesReading series = results::read_series(r.checks, r.models.target);
  const std::set<std::string> slow(series.slow_ids.begin(), series.slow_ids.end()),
      usual(series.usual_ids.begin(), series.usual_ids.end());
  struct Seen {
    double start_s, end_s;
    const api::RequestSample* s;
  };
  std::vector<Seen> seen;
  for (const auto& c : r.checks)
    for (const auto& [s, _] : c.requests)
      if (const auto at = core::parse_rfc3339_utc(s.started_at))
        seen.push_back({*at - *t0, *at - *t0 + s.total_ms.value_or(0) / 1000, &s});
  std::sort(seen.begin(), seen.end(), [](const Seen& a, const Seen& b) { return a.start_s < b.start_s; });
  std::optional<std::pair<double, double>> period;
  for (const auto& e : seen) {
    const api::RequestSample& s = *e.s;
    if (!s.ok) {
      // A 429, an overloaded answer, a stated limit or the run's own deadline: refused, not broken.
      const bool refused = s.http_status == 429 || s.overloaded || !api::is_failure(s);
      (refused ? out.refused : out.failed).points.emplace_back(e.start_s, 0);
      continue;
    }
    const bool is_slow = !s.request_id.empty() && slow.count(s.request_id) > 0;
    const bool small = !r.models.small.empty() && s.model == r.models.small && s.model != r.models.target;
    Series& ttft = small ? (is_slow ? out.small_ttft_slow : out.small_ttft) : (is_slow ? out.ttft_slow : out.ttft);
    Series& tpot = small ? (is_slow ? out.small_tpot_slow : out.small_tpot) : (is_slow ? out.tpot_slow : out.tpot);
    if (s.ttft_ms) ttft.points.emplace_back(e.start_s, *s.ttft_ms);
    if (s.tpot_ms && s.output_tokens && *s.output_tokens > 1) tpot.points.emplace_back(e.start_s, *s.tpot_ms);
    if (is_slow) {
      period = period ? std::pair(period->first, std::max(period->second, e.end_s)) : std::pair(e.start_s, e.end_s);
    } else if (period && usual.count(s.request_id)) {  // a usual request of the series ends the stretch
      out.slow_periods.spans.push_back(*period);
      period.reset();
    }
  }
  if (period) out.slow_periods.spans.push_back(*period);
  return out;
}

// One stream's content events as they arrived: the target model's longest stream, the reference
// check's first (CheckInfo::reference). An even slope is tokens as generated; steps are clumps
// held back; flat stretches, stalls.
std::string token_arrivals(const results::RunResult& r, std::string& caption) {
  const api::RequestSample* best = nullptr;
  std::string from;
  for (const bool reference_only : {true, false})
    for (const auto& c : r.checks) {
      if (best || (reference_only && !checks::is_reference(c.id))) continue;
      for (const auto& [s, label] : c.requests) {
        if (!s.ok || !s.ttft_ms || s.itl_ms.size() < 2 || s.model != r.models.target) continue;
        if (label.is_object() && label.value("streams", 1) > 1) continue;
        if (!best || s.itl_ms.size() > best->itl_ms.size()) {
          best = &s;
          from = c.id;
        }
      }
    }
  Series arrivals{"content events", {}, true, "#1a7f37", Mark::Dot, true};
  caption = "One stream's content events as they arrived. An even slope is tokens as the model generated them; steps are "
            "clumps something held back; flat stretches are stalls.";
  if (best) {
    double t = *best->ttft_ms;
    arrivals.points.emplace_back(t, 1);
    for (std::size_t i = 0; i < best->itl_ms.size(); ++i) {
      t += best->itl_ms[i];
      arrivals.points.emplace_back(t, static_cast<double>(i + 2));
    }
    caption += " The " + from + " check's request " + (best->request_id.empty() ? "" : best->request_id + " ") + "to " +
               best->model + ", " + core::count_of(static_cast<double>(best->output_tokens.value_or(0)), "output token") +
               " in " + core::count_of(static_cast<double>(arrivals.points.size()), "event") + ".";
  }
  return svg_chart("token-arrivals-svg", {"ms from the request's start"}, {"content events arrived", true}, {arrivals});
}

// A check's chart as report.html draws it: measured points as dots, joined ones as a line, in
// colours taken in turn; a fit in red, a reference in grey. Each point's tooltip names its request.
std::string draw(const checks::Chart& c) {
  static const char* const kPalette[] = {"#1f6feb", "#1a7f37", "#8250df", "#bf3989", "#a15c00"};
  const auto axis = [](const checks::ChartAxis& a) {
    return Axis(a.unit.empty() ? a.label : a.label + " (" + a.unit + ")", a.counts);
  };
  std::vector<Series> series;
  std::size_t turn = 0;
  for (const auto& s : c.series) {
    Series drawn{s.name, {}, s.kind != checks::SeriesKind::Points, kPalette[turn % std::size(kPalette)]};
    if (s.kind == checks::SeriesKind::Fit) drawn.color = "#d1242f";
    else if (s.kind == checks::SeriesKind::Reference) drawn.color = "#999999";
    else ++turn;
    for (const auto& p : s.points) {
      drawn.points.emplace_back(p.x, p.y);
      drawn.notes.push_back(p.request_id.empty() ? "" : "request " + p.request_id);
    }
    series.push_back(std::move(drawn));
  }
  return figure(c.id, c.caption, svg_chart(c.id + "-svg", axis(c.x), axis(c.y), series));
}

}  // namespace

std::string render_html(const results::RunResult& r) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>infdoctor report: "
    << html_escape(r.target.base_url) << "</title>\n<style>"
    << "body{font:14px/1.4 system-ui,sans-serif;margin:24px;max-width:1240px;color:#222}"
    << "h1{font-size:20px}h2{font-size:16px;margin-top:28px}table{border-collapse:collapse}"
    << "td,th{border:1px solid #ddd;padding:4px 8px;text-align:left}figure{display:inline-block;margin:8px;vertical-align:top}"
    << "figcaption{font-size:12px;color:#555;max-width:600px}.tick{font-size:10px;fill:#555}.legend{font-size:11px}"
    << ".empty{fill:#999}.critical{color:#b00020}.warning{color:#a15c00}.info{color:#555}</style></head><body>\n";
  o << "<h1>infdoctor report: " << html_escape(r.target.base_url) << "</h1><p>" << html_escape(r.started_at) << " to "
    << html_escape(r.finished_at) << " (UTC)</p>\n";
  if (!r.interrupted_by.empty())
    o << "<p><b>Partial:</b> the run was interrupted (" << html_escape(r.interrupted_by) << ").</p>\n";
  if (!r.unreachable.empty()) o << "<p><b>The model could not be reached:</b> " << html_escape(r.unreachable) << "</p>\n";
  o << "<h2>Diagnosis</h2>\n";
  if (r.diagnosis.empty()) o << "<p>No finding: nothing measured explains slowness.</p>\n";
  o << "<ol id=\"diagnosis\">";
  const auto metrics = results::flatten_metrics(r);
  for (const auto& f : r.diagnosis) {
    o << "<li class=\"" << rules::severity_name(f.severity) << "\"><b>" << html_escape(f.title) << "</b> ("
      << rules::severity_name(f.severity) << ", " << html_escape(rules::cause_and_scope(f))
      << "): " << html_escape(rules::describe_impact(f, metrics)) << ", confidence " << fmt("%.2f", f.confidence) << "<br>"
      << html_escape(f.explanation);
    for (const auto& q : f.ask_provider) o << "<br>Ask the provider: " << html_escape(q);
    for (const auto& a : f.actions) o << "<br>You can: " << html_escape(a);
    for (const auto& a : f.also) {
      o << "<br>Also for this cause: <b>" << html_escape(a.title) << "</b> (" << rules::severity_name(a.severity)
        << "): " << html_escape(rules::describe_impact(a, metrics)) << ". " << html_escape(a.explanation);
      for (const auto& x : a.actions) o << " You can: " << html_escape(x);
    }
    o << "</li>";
  }
  o << "</ol>\n";

  o << "<h2>The reference request</h2>\n";
  std::string caption;
  const std::string waterfall = reference_waterfall(r, metrics, caption);
  o << figure("reference-request", caption, waterfall);

  o << "<h2>Every request of the run</h2>\n";
  const Timeline t = request_timeline(r);
  Axis when{"seconds into the run"};  // both charts over the whole run
  if (const auto t0 = core::parse_rfc3339_utc(r.started_at), t1 = core::parse_rfc3339_utc(r.finished_at); t0 && t1 && *t1 > *t0)
    when.reach = std::pair(0.0, *t1 - *t0);
  o << figure("requests-ttft",
              "Time to first token of every model request by when it started (the target model's dots, the small model's "
              "rings); red ones were slow per token (at least " +
                  fmt("%g", stats::kSlowFactor) + " times their model's usual time, as the run's time series reads them), "
                  "failures and refusals sit on the axis, and stretches of consecutive slow requests are shaded.",
              svg_chart("requests-ttft-svg", when, {"TTFT ms"},
                        {t.ttft, t.ttft_slow, t.small_ttft, t.small_ttft_slow, t.failed, t.refused}, t.slow_periods));
  o << figure("requests-tpot", "Time per output token of the same requests.",
              svg_chart("requests-tpot-svg", when, {"ms per token"}, {t.tpot, t.tpot_slow, t.small_tpot, t.small_tpot_slow},
                        t.slow_periods));

  o << "<h2>One stream</h2>\n";
  const std::string arrivals = token_arrivals(r, caption);
  o << figure("token-arrivals", caption, arrivals);

  // Every chart the checks declared, in the order they ran.
  o << "<h2>What the checks measured</h2>\n";
  for (const auto& c : r.checks)
    for (const auto& chart : c.charts) o << draw(chart);

  // Per-phase breakdown of a typical request.
  std::vector<std::pair<std::string, double>> bars;
  const auto total = results::metric(r, checks::baseline_metric::total_p50_ms.name), first = results::metric(r, checks::baseline_metric::ttft_p50_ms.name);
  for (const auto& [name, v] : std::vector<std::pair<std::string, std::optional<double>>>{
           {"DNS", results::metric(r, checks::dns_metric::p50_ms.name)},
           {"TCP connect", results::metric(r, checks::transport_metric::connect_p50_ms.name)},
           {"TLS", results::metric(r, checks::transport_metric::tls_p50_ms.name)},
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
    for (const auto& tb : c.tables) {
      o << "<h3>" << html_escape(tb.title) << "</h3><table><tr>";
      for (const auto& col : tb.columns) o << "<th>" << html_escape(col) << "</th>";
      o << "</tr>";
      for (const auto& row : tb.rows) {
        o << "<tr>";
        for (const auto& cell : row) o << "<td>" << html_escape(cell) << "</td>";
        o << "</tr>";
      }
      o << "</table>\n";
      if (!tb.note.empty()) o << "<p>" << html_escape(tb.note) << "</p>\n";
    }
  o << "</body></html>\n";
  return o.str();
}

}  // namespace infdoctor::bundle
