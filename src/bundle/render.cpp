// The human files of the bundle: summary.md for the ticket, repro.sh for the provider,
// report.html with inline SVG plots for anyone with a browser.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "bundle/bundle.h"
#include "checks/baseline.h"
#include "checks/dns.h"
#include "checks/path.h"
#include "checks/transport.h"
#include "core/redact.h"
#include "core/strings.h"
#include "core/version.h"
#include "report/text.h"
#include "report/describe.h"
#include "results/requests.h"

namespace infdoctor::bundle {
namespace {

using nlohmann::json;
using core::fmt;
using core::html_escape;

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

// What repro.sh's requests are: those that showed the top finding, or, when no request of its own
// evidence can be sent again, those that stand for the run as a whole (each check says which).
std::string what_repro_shows(const Context& ctx) {
  return ctx.repro_shows.empty() ? "stand for the run as a whole (no request of a finding's own evidence to send again)"
                                 : "showed the top finding (" + ctx.repro_shows + ")";
}

}  // namespace

std::string render_summary(const results::RunResult& r, const Context& ctx) {
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
    if (auto v = results::metric(r, name)) {
      o << "- " << label << ": " << rules::format_metric(name, *v) << " (`" << name << "`)\n";
      stated = true;
    }
  };
  line("Time to first token, short prompt, median", checks::baseline_metric::ttft_p50_ms.name);
  line("Time per output token, median", checks::baseline_metric::tpot_p50_ms.name);
  line("End-to-end, median", checks::baseline_metric::total_p50_ms.name);
  line("Same for the small model, per token", checks::baseline_metric::small_tpot_p50_ms.name);
  line("TCP round trip, median", checks::path_metric::tcp_rtt_p50_ms.name);
  line("TLS handshake, median", checks::transport_metric::tls_p50_ms.name);
  line("DNS lookup, median", checks::dns_metric::p50_ms.name);
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
  if (const auto priced = report::describe_workload(r.run_metrics); !priced.empty()) o << priced << "\n\n";
  const auto metrics = results::flatten_metrics(r);
  if (!r.adaptations.empty()) o << report::describe_adaptations(r.adaptations) << "\n";
  if (const auto how = report::describe_requests(r); !how.empty()) o << how << "\n";
  if (const auto engine = report::describe_engine(r.engine, r.run_metrics); !engine.empty()) o << engine << "\n";
  int i = 0;
  for (const auto& f : r.diagnosis) {
    o << ++i << ". **" << f.title << "** (" << rules::severity_name(f.severity) << "; " << rules::cause_and_scope(f)
      << "): " << rules::describe_impact(f, metrics) << ", confidence " << fmt("%.2f", f.confidence) << ".  \n   "
      << f.explanation << "\n";
    for (const auto& a : f.also)
      o << "   - Also for this cause: **" << a.title << "** (" << rules::severity_name(a.severity) << "; rule " << a.rule
        << "): " << rules::describe_impact(a, metrics) << ". " << a.explanation << "\n";
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
  const results::CauseSignal signal = top ? results::signal_of(rules::cause_label(*top)) : results::CauseSignal{};
  const auto rows = results::slowest_requests(r, 10, {}, signal.rank);
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
  o << "\n## How to reproduce\n\n- `sh repro.sh` sends again, with curl, the requests that " << what_repro_shows(ctx)
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
    << "# Sends again, with curl, the requests that " << what_repro_shows(ctx)
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

}  // namespace infdoctor::bundle
