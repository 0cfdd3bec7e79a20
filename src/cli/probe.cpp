// infdoctor probe: one streamed chat request, shown as a phase breakdown in the manner of
// httpstat, or as one JSON object (DESIGN.md, "Machine-readable output").
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "api/chat.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/endpoint_flags.h"
#include "core/message.h"
#include "core/redact.h"
#include "run/pacer.h"
#include "run/plan.h"
#include "report/probe.h"

namespace infdoctor::cli {
namespace {

struct ProbeOptions {
  api::EndpointSpec endpoint;
  std::string model;
  std::string prompt;
  int prompt_tokens = 0;
  int max_tokens = 64;
  std::string body;  // --body FILE
  std::string json;  // --json [FILE]
  bool verbose = false;
  bool quiet = false;
};

// The first body of --body's file: one JSON object, or the first line of JSON Lines.
core::Result<nlohmann::json> first_body(const std::string& path) {
  auto text = run::read_body(path);
  if (!text.ok()) return text.error();
  auto whole = nlohmann::json::parse(text.value(), nullptr, false);
  if (whole.is_discarded()) {
    std::istringstream lines(text.value());
    std::string line;
    while (std::getline(lines, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
    }
    whole = nlohmann::json::parse(line, nullptr, false);
  }
  if (whole.is_discarded() || !whole.is_object() || !whole.contains("messages") || !whole["messages"].is_array())
    return core::make_error(core::ErrorCode::InvalidArgument,
                            "--body " + path + ": its first body is not a chat or messages request (a JSON object with "
                            "a \"messages\" list)");
  return whole;
}

int run_probe(const ProbeOptions& o) {
  auto ep = api::make_endpoint(o.endpoint);
  if (!ep.ok()) return fail(ep.error());
  api::ChatRequest chat;
  chat.model = o.model;
  if (!o.body.empty()) {
    auto body = first_body(o.body);
    if (!body.ok()) return fail(body.error());
    chat.body = body.value();
    if (o.model.empty() && !chat.body->contains("model")) return fail_usage("--body: the body names no model; give --model");
  } else if (o.model.empty()) {
    return fail_usage("--model is required (or a --body that names its model)");
  }
  chat.prompt = o.prompt_tokens > 0 ? api::synthetic_prompt(o.prompt_tokens)
                                    : (o.prompt.empty() ? std::string("Say hello.") : o.prompt);
  chat.max_tokens = o.max_tokens;
  if (o.endpoint.insecure)
    core::say("warning", "-k: the server's certificate and name are not checked; anyone on the path could answer");
  if (const std::string proxy = api::proxy_in_use(*ep); !proxy.empty() && !o.quiet)
    core::say("note", "the request goes through the proxy " + proxy + ", and its timings include it");
  http::Client client;
  api::RequestSample s = api::run_chat(client, *ep, chat, /*fresh_connection=*/true);
  // A reasoning model refuses max_tokens or temperature with a 400: changed as `run` changes it,
  // once per parameter, and sent again.
  for (std::vector<std::string> adapted; !s.ok && !s.refused_parameter.empty() &&
                                         std::find(adapted.begin(), adapted.end(), s.refused_parameter) == adapted.end();) {
    adapted.push_back(s.refused_parameter);
    api::adapt_request(chat, s.refused_parameter);
    if (!o.quiet)
      core::say("note", "the endpoint refused " + s.refused_parameter + ": " + api::adaptation_for(s.refused_parameter) +
                            " (it said: " + s.error_message + ")");
    s = api::run_chat(client, *ep, chat, /*fresh_connection=*/true);
  }
  const std::string url = core::redact_url(ep->url(ep->chat_path()));
  if (o.verbose) {  // as curl -v shows them: what went out, what came back
    std::cerr << "> POST " << url << '\n';
    if (!s.remote_ip.empty()) std::cerr << "* " << (s.connection_reused ? "reused" : "connected to") << ' ' << s.remote_ip << '\n';
    if (s.http_status > 0) std::cerr << "< HTTP/" << s.http_version << ' ' << s.http_status << '\n';
    for (const auto& [name, value] : s.headers) std::cerr << "< " << name << ": " << core::scrub(value) << '\n';
  }
  if (!o.json.empty())
    if (const int code = emit_json(o.json, report::probe_json(s)); code != kExitOk) return code;
  if (o.json != "-" && s.ok) std::cout << report::render_probe(s, url);
  if (!s.ok) {
    // The cause and its fix where a fix is known (the key, the URL, the model), as `run` says it.
    std::string line = run::failure_line(*ep, s);
    if (!s.request_id.empty()) line += " (request id " + s.request_id + ")";
    core::say("error", line);
    return kExitCouldNotRun;
  }
  return kExitOk;
}

}  // namespace

void add_probe_command(CLI::App& app, std::function<int()>& chosen) {
  auto [cmd, opts] = add_command<ProbeOptions>(
      app, chosen, "probe",
      "Send one streamed chat request and show where its time went: DNS, connect, TLS, server wait, first token,\n"
      "generation; inter-token latency percentiles, output tokens per second, the request id.\n"
      "Example: OPENAI_API_KEY=... infdoctor probe --base-url https://api.example.com/v1 --model my-model",
      run_probe);
  add_endpoint_flags(*cmd, opts->endpoint);
  cmd->add_option("--model", opts->model, "model to ask (with --body: instead of the body's)");
  auto* prompt = cmd->add_option("--prompt", opts->prompt, "prompt text (default: a short greeting)");
  auto* body = cmd->add_option("--body", opts->body,
                  "FILE: send your own request body as it is (OpenAI chat or Anthropic messages JSON; the first of "
                  "JSON Lines; - for stdin), streamed with usage asked for")
      ->excludes(prompt);
  cmd->add_option("--prompt-tokens", opts->prompt_tokens, "use a synthetic prompt of about N tokens instead")
      ->check(CLI::Range(1, 10000000))
      ->excludes(prompt)
      ->excludes(body);
  cmd->add_option("--max-tokens", opts->max_tokens, "max_tokens of the request (with --body: the body's)")
      ->check(CLI::Range(1, 10000000))
      ->capture_default_str();
  add_json_flag(*cmd, opts->json, "one JSON object");
  cmd->add_flag("--quiet,-s", opts->quiet, "no notes on stderr: errors and warnings only");
  cmd->add_flag("--verbose,-v", opts->verbose, "also the request line, the peer and the response's kept headers on stderr");
}

}  // namespace infdoctor::cli
