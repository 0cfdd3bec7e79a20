#include "run/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "checks/registry.h"
#include "core/files.h"
#include "core/message.h"
#include "results/requests.h"
#include "core/exit_code.h"
#include "core/json_text.h"
#include "core/redact.h"
#include "results/run_metrics.h"

namespace infdoctor::run {

namespace rm = results::run_metric;

namespace {

std::optional<double> get(const std::map<std::string, double>& m, const std::string& k) {
  auto it = m.find(k);
  if (it == m.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

std::string num(std::optional<double> v, const char* fmt = "%.1f") {
  if (!v) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, *v);
  return buf;
}

const LayerDiff& layer_named(const Comparison& c, const std::string& name) {
  return *std::find_if(c.layers.begin(), c.layers.end(), [&](const LayerDiff& l) { return l.layer == name; });
}

// Two values within 5 % of each other are the same, end to end and layer by layer: separated
// intervals around 80.1 and 80.3 ms tell a real difference that no request would notice.
constexpr double kEqualWithin = 0.05;

bool differ(double a, double b) { return std::fabs(b - a) > kEqualWithin * std::min(std::fabs(a), std::fabs(b)); }

// A slope's fit explains its points when its R² is 0.9 or more.
constexpr double kFitExplains = 0.9;

// The request both sides are priced on: the reference request (--workload) when both runs priced
// the same one, else the baseline's short request.
struct Reference {
  std::optional<double> total_a, total_b, prompt_tokens, output_tokens;
  std::string what;
};

Reference reference_of(const std::map<std::string, double>& ma, const std::map<std::string, double>& mb) {
  Reference r;
  const auto pa = get(ma, rm::workload_prompt_tokens_count), pb = get(mb, rm::workload_prompt_tokens_count);
  const auto oa = get(ma, rm::workload_output_tokens_count), ob = get(mb, rm::workload_output_tokens_count);
  const auto ta = get(ma, rm::workload_total_ms), tb = get(mb, rm::workload_total_ms);
  if (pa && pb && oa && ob && *pa == *pb && *oa == *ob && ta && tb) {
    r.total_a = ta;
    r.total_b = tb;
    r.prompt_tokens = pa;
    r.output_tokens = oa;
    char what[160];
    std::snprintf(what, sizeof what, "the reference request, %.0f prompt and %.0f output tokens, priced from each side's own measurements",
                  *pa, *oa);
    r.what = what;
    return r;
  }
  const std::string total = checks::typical_metric(checks::Typical::EndToEnd);
  r.total_a = get(ma, total);
  r.total_b = get(mb, total);
  r.output_tokens = get(ma, checks::typical_metric(checks::Typical::OutputTokens));
  r.what = "the baseline's short request, p50 (the two runs priced no common reference request)";
  return r;
}

}  // namespace

Comparison compare_runs(const results::RunResult& ra, const results::RunResult& rb, const std::string& name_a, const std::string& name_b) {
  const auto ma = flatten_metrics(ra), mb = flatten_metrics(rb);
  Comparison c;
  c.name_a = name_a;
  c.name_b = name_b;
  const Reference ref = reference_of(ma, mb);
  c.total_a = ref.total_a;
  c.total_b = ref.total_b;
  c.priced_on = ref.what;
  const auto out_tokens = ref.output_tokens;
  // The layers are the metrics their checks tag with one, in run order.
  for (const auto& m : results::all_metrics()) {
    if (!m.tags.layer) continue;
    LayerDiff l;
    l.layer = m.tags.layer;
    l.metric = m.name;
    l.unit = m.name.find("_per_token") != std::string::npos ? m.unit + " a token"
             : m.name.find("_per_mb") != std::string::npos  ? m.unit + " a MB"
                                                              : m.unit;
    l.scope = m.tags.per ? m.tags.per : "";
    l.a = get(ma, m.name);
    l.b = get(mb, m.name);
    if (l.a && l.b) {
      if (*l.a > 0) l.ratio = *l.b / *l.a;
      // A median with a bootstrap interval (`<stem>_ci_low_<unit>`, `<stem>_ci_high_<unit>` beside
      // `<stem>_<unit>`) is told different by it.
      const std::string suffix = "_" + m.unit;
      if (m.name.size() > suffix.size() && m.name.compare(m.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const std::string stem = m.name.substr(0, m.name.size() - suffix.size());
        const std::string lo = stem + "_ci_low" + suffix, hi = stem + "_ci_high" + suffix;
        const auto alo = get(ma, lo), ahi = get(ma, hi), blo = get(mb, lo), bhi = get(mb, hi);
        if (alo && ahi && blo && bhi) l.significant = (*bhi < *alo || *blo > *ahi) && differ(*l.a, *l.b) ? "yes" : "no";
      }
      // What the layer adds to the request both are priced on: time to first token as a whole, of
      // which the path's round trip; decode per token times the tokens after the first; prefill
      // per token times the prompt's tokens.
      const double diff = *l.b - *l.a;
      if (m.tags.explains == checks::Explains::Whole) l.explains_ms = diff;
      if (m.tags.explains == checks::Explains::PerOutputToken && out_tokens && *out_tokens > 1)
        l.explains_ms = diff * (*out_tokens - 1);
      if (m.tags.explains == checks::Explains::PerPromptToken && ref.prompt_tokens) l.explains_ms = diff * *ref.prompt_tokens;
      const double r = l.ratio ? std::max(*l.ratio, 1.0 / std::max(*l.ratio, 1e-9)) : 0;
      // A slope whose line explains its points on both sides is measured at every point of its
      // fit: 1.5x apart, and milliseconds apart on the priced request, it differs.
      if (l.significant.empty() && m.tags.fit_r2) {
        const auto ra = get(ma, m.tags.fit_r2), rb = get(mb, m.tags.fit_r2);
        if (ra && rb && *ra >= kFitExplains && *rb >= kFitExplains)
          l.significant = r >= 1.5 && std::fabs(l.explains_ms) >= 5 ? "yes" : "no";
      }
      if (l.significant.empty()) {
        // Per-token and per-megabyte costs are judged on what they add to the priced request.
        const double ms_apart = m.tags.explains == checks::Explains::Whole || m.tags.explains == checks::Explains::Nothing
                                    ? std::fabs(diff)
                                    : std::fabs(l.explains_ms);
        l.significant = r >= 1.5 && (m.unit != "ms" || ms_apart >= 5) ? "likely" : "unclear";
      }
    }
    c.layers.push_back(std::move(l));
  }
  if (c.total_a && c.total_b && differ(*c.total_a, *c.total_b))
    c.slower = *c.total_b > *c.total_a ? name_b : name_a;
  // The reference request's terms, each priced on its own side: they add up to each side's total
  // (the queue comes on top), so their differences add up to the gap.
  if (ref.what.rfind("the reference request", 0) == 0) {
    for (const auto& [name, label] : {std::pair{rm::workload_setup_ms, "connection setup"}, {rm::workload_network_ms, "network"},
                                      {rm::workload_overhead_ms, "overhead"}, {rm::workload_prefill_ms, "prefill"},
                                      {rm::workload_decode_ms, "decode"}}) {
      TermDiff t{label, get(ma, name), get(mb, name)};
      if (t.a || t.b) c.terms.push_back(t);
    }
    double sum_a = 0, sum_b = 0;
    for (const auto& t : c.terms) {
      sum_a += t.a.value_or(0);
      sum_b += t.b.value_or(0);
    }
    // What the terms leave of each total (an overhead read as zero below a round trip).
    if (std::fabs(*c.total_a - sum_a) >= 0.5 || std::fabs(*c.total_b - sum_b) >= 0.5)
      c.terms.push_back({"not in a term", *c.total_a - sum_a, *c.total_b - sum_b});
    c.terms.push_back({"= the request alone", c.total_a, c.total_b});
    TermDiff queue{"queue (on top)", get(ma, rm::workload_queue_ms), get(mb, rm::workload_queue_ms)};
    if (queue.a || queue.b) c.terms.push_back(queue);
  }
  // The layers that explain the gap: significant, the same sign as the gap, a tenth of it or more.
  if (!c.slower.empty()) {
    const double gap = *c.total_b - *c.total_a;
    std::vector<const LayerDiff*> parts;
    for (const auto& l : c.layers)
      if ((l.significant == "yes" || l.significant == "likely") && l.explains_ms * gap > 0 &&
          std::fabs(l.explains_ms) >= 0.1 * std::fabs(gap))
        parts.push_back(&l);
    std::sort(parts.begin(), parts.end(),
              [](const LayerDiff* x, const LayerDiff* y) { return std::fabs(x->explains_ms) > std::fabs(y->explains_ms); });
    for (const auto* p : parts) c.explaining.push_back(p->layer);
  }
  return c;
}

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json layers = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const auto& l : c.layers)
    layers.push_back({{"layer", l.layer},
                      {"metric", l.metric},
                      {"scope", l.scope},
                      {"a", opt(l.a)},
                      {"b", opt(l.b)},
                      {"ratio", opt(l.ratio)},
                      {"unit", l.unit},
                      {"significant", core::text_or_null(l.significant)},
                      {"explains_ms", l.explains_ms}});
  nlohmann::json terms = nlohmann::json::array();
  for (const auto& t : c.terms) terms.push_back({{"term", t.term}, {"a_ms", opt(t.a)}, {"b_ms", opt(t.b)}});
  return {{"schema", "infdoctor.compare/1"},
          {"a", c.name_a},
          {"b", c.name_b},
          {"total_p50_ms", {{"a", opt(c.total_a)}, {"b", opt(c.total_b)}}},
          {"priced_on", c.priced_on},
          {"slower", core::text_or_null(c.slower)},
          {"explaining", c.explaining},
          {"terms", terms},
          {"layers", layers}};
}

std::string render_comparison(const Comparison& c) {
  std::ostringstream o;
  char line[256];
  // The verdict first, then the reference request's terms on each side, which add up to the gap,
  // then every layer measured.
  o << "end to end (" << c.priced_on << "): " << c.name_a << " " << num(c.total_a, "%.0f") << " ms, " << c.name_b << " "
    << num(c.total_b, "%.0f") << " ms\n";
  if (!c.total_a || !c.total_b) {
    o << "No end-to-end time on " << (!c.total_a ? c.name_a : c.name_b)
      << " (the baseline check measured none): the two cannot be compared end to end.\n";
  } else if (c.slower.empty()) {
    o << "No gap worth explaining: the two are within 5 % end to end.\n";
  } else {
    const double gap = std::fabs(*c.total_b - *c.total_a);
    o << c.slower << " is slower by " << num(gap, "%.0f") << " ms a request.";
    if (c.explaining.empty()) {
      o << " No single measured layer explains it.\n";
    } else {
      o << " Explained by:\n";
      for (const auto& name : c.explaining) {
        const LayerDiff& l = layer_named(c, name);
        o << "  " << name << ": " << num(std::fabs(l.explains_ms), "%.0f") << " ms ("
          << num(100.0 * std::fabs(l.explains_ms) / gap, "%.0f") << " % of the gap), " << c.name_b << "/" << c.name_a
          << " " << num(l.ratio, "%.2fx") << "\n";
      }
    }
  }
  if (!c.terms.empty()) {
    std::snprintf(line, sizeof line, "\n%-30s %12s %12s %12s\n", "the reference request's terms", (c.name_a + " ms").c_str(),
                  (c.name_b + " ms").c_str(), "B - A ms");
    o << line;
    for (const auto& t : c.terms) {
      std::snprintf(line, sizeof line, "%-30s %12s %12s %12s\n", t.term.c_str(), num(t.a, "%.0f").c_str(),
                    num(t.b, "%.0f").c_str(), t.a && t.b ? num(*t.b - *t.a, "%+.0f").c_str() : "-");
      o << line;
    }
  }
  std::snprintf(line, sizeof line, "\n%-36s %12s %12s %-14s %8s  %-11s %12s\n", "layer", c.name_a.c_str(), c.name_b.c_str(),
                "unit", "B/A", "different?", "explains ms");
  o << line;
  for (const auto& l : c.layers) {
    const bool count = l.metric.find("count") != std::string::npos;
    const char* fmt = l.metric.find("per_token") != std::string::npos ? "%.3f" : (count ? "%.0f" : "%.1f");
    std::snprintf(line, sizeof line, "%-36s %12s %12s %-14s %8s  %-11s %12s\n", l.layer.c_str(), num(l.a, fmt).c_str(),
                  num(l.b, fmt).c_str(), l.unit.c_str(), num(l.ratio, "%.2fx").c_str(),
                  l.significant.empty() ? "-" : l.significant.c_str(),
                  std::fabs(l.explains_ms) >= 0.5 ? num(l.explains_ms, "%+.0f").c_str() : "");
    o << line;
  }
  o << "(different?: yes = the 95 % intervals of the medians do not overlap and the medians are more than 5 % "
       "apart, or for a fitted slope both fits explain their points (R2 0.9 or more) and the slopes are 1.5x and 5 ms "
       "of the priced request apart; likely = no interval, 1.5x and 5 ms "
       "apart; explains = ms of the priced request's gap, B - A)\n";
  return o.str();
}

std::string render_comparison_summary(const Comparison& c, const results::RunResult& a, const results::RunResult& b) {
  std::ostringstream o;
  const bool b_slower = c.slower == c.name_b;
  const std::string& slow = c.slower.empty() ? c.name_b : c.slower;
  const std::string& fast = b_slower || c.slower.empty() ? c.name_a : c.name_b;
  o << "# Latency comparison: " << slow << " against " << fast << "\n\n";
  o << "infdoctor ran the same checklist, with the same model requests, against both endpoints in one session, "
       "alternating check by check so that time of day and client load fell on both alike.\n\n";
  o << "- " << c.name_a << ": " << a.target.base_url << " (" << a.started_at << " to " << a.finished_at << ")\n";
  o << "- " << c.name_b << ": " << b.target.base_url << " (" << b.started_at << " to " << b.finished_at << ")\n\n";
  if (!c.total_a || !c.total_b) {
    o << "End to end the two could not be compared: " << (!c.total_a ? c.name_a : c.name_b) << " has no measured request.\n\n";
  } else if (c.slower.empty()) {
    o << "End to end the two are within 5 % of each other.\n\n";
  } else {
    o << "**" << slow << " takes " << num(b_slower ? c.total_b : c.total_a, "%.0f") << " ms for " << c.priced_on << " where "
      << fast << " takes " << num(b_slower ? c.total_a : c.total_b, "%.0f") << " ms.**\n\n";
    if (!c.explaining.empty()) {
      o << "The difference is in:\n\n";
      for (const auto& name : c.explaining) {
        const LayerDiff& l = layer_named(c, name);
        o << "- " << name << ": " << num(b_slower ? l.b : l.a, "%.3g") << " on " << slow << " against "
          << num(b_slower ? l.a : l.b, "%.3g") << " on " << fast << " (" << num(std::fabs(l.explains_ms), "%.0f")
          << " ms of each request)\n";
      }
      o << "\n";
    }
  }
  o << "| layer | " << c.name_a << " | " << c.name_b << " | " << c.name_b << "/" << c.name_a << " | different? |\n|---|---|---|---|---|\n";
  for (const auto& l : c.layers)
    if (l.a || l.b)
      o << "| " << l.layer << " (" << l.metric << ") | " << num(l.a, "%.3g") << " | " << num(l.b, "%.3g") << " | "
        << num(l.ratio, "%.2fx") << " | " << (l.significant.empty() ? "-" : l.significant) << " |\n";
  o << "\n## Questions for " << slow << "\n\n";
  for (const auto& name : c.explaining) {
    if (name.find("decode") != std::string::npos)
      o << "- Decoding is slower per token on your side for the same model: which engine, instance type and batch "
           "size serve it, and is speculative decoding or quantization configured differently?\n";
    else if (name.find("first token") != std::string::npos)
      o << "- Time to first token is higher on your side: is there queueing before prefill, a gateway in front, or "
           "a smaller prefill capacity?\n";
    else if (name.find("network") != std::string::npos)
      o << "- The round trip to your endpoint is longer: which region serves us, and is there a closer one?\n";
  }
  o << "- The request IDs of every measured request are in the runs' samples.jsonl; please look them up.\n\n";
  // The slower side's slowest requests, for the provider's own logs.
  const results::RunResult& slow_run = (b_slower || c.slower.empty()) ? b : a;
  const auto slowest = results::slowest_requests(slow_run, 5, [](const api::RequestSample& s) {
    return s.ok && s.total_ms && !s.request_id.empty();
  });
  if (!slowest.empty()) {
    o << "## The slowest requests on " << slow << "\n\n| request id | started (UTC) | check | first token ms | total ms |\n"
      << "|---|---|---|---|---|\n";
    for (const auto& [check, s] : slowest)
      o << "| " << s->request_id << " | " << s->started_at << " | " << check->id << " | " << num(s->ttft_ms, "%.0f") << " | "
        << num(s->total_ms, "%.0f") << " |\n";
    o << "\n";
  }
  o << "Each side's full evidence bundle is in its own directory (" << c.name_a << "/, " << c.name_b
    << "/); comparison.json has this table as data.\n";
  return o.str();
}

int measure_and_compare(Session& sa, Session& sb, const std::string& name_a, const std::string& name_b,
                        const Outputs& outputs, int max_requests) {
  core::say("", "comparing " + name_a + " and " + name_b + ", check by check (at most " + std::to_string(max_requests) +
                    " model requests each)");
  auto results = Session::measure_together({&sa, &sb});
  sa.diagnose(results[0]);
  sb.diagnose(results[1]);
  const Comparison c = compare_runs(results[0], results[1], name_a, name_b);
  const nlohmann::json j = {{"comparison", to_json(c)},
                            {"runs", {{name_a, to_json(results[0])}, {name_b, to_json(results[1])}}}};
  bool ok = true;
  auto write = [&](const std::string& path, const std::string& text) {
    if (core::write_replacing(path, core::scrub(text)).ok()) return;
    core::say("error", "cannot write " + path);
    ok = false;
  };
  if (outputs.json == "-") {
    std::cout << core::scrub(j.dump(2)) << '\n';
  } else {
    std::cout << core::scrub(render_comparison(c));
    if (!outputs.json.empty()) write(outputs.json, j.dump(2) + "\n");
  }
  const int code_a = sa.finish(results[0]), code_b = sb.finish(results[1]);
  if (!outputs.bundle.empty()) {
    write(outputs.bundle + "/comparison.json", to_json(c).dump(2) + "\n");
    write(outputs.bundle + "/summary.md", render_comparison_summary(c, results[0], results[1]));
    if (ok) core::say("", "comparison bundle written to " + outputs.bundle);
  }
  if (!results[0].interrupted_by.empty()) {
    core::say("error", "interrupted (" + results[0].interrupted_by + "): the comparison is partial");
    return core::kExitCouldNotRun;
  }
  if (!ok || code_a == core::kExitCouldNotRun || code_b == core::kExitCouldNotRun) return core::kExitCouldNotRun;
  if (!c.total_a || !c.total_b) {  // nothing to compare is not "within 5 %"
    core::say("error", "no end-to-end time on " + (!c.total_a ? name_a : name_b) +
                           ": run the baseline check (it needs model=M) to compare the two end to end");
    return core::kExitCouldNotRun;
  }
  return c.slower.empty() ? core::kExitOk : core::kExitDegraded;
}

}  // namespace infdoctor::run
