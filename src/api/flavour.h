#pragma once
// API flavours and provider presets. A flavour is the wire shape of a chat request and its
// stream (OpenAI chat completions, Anthropic Messages); a preset is what is known of a common
// endpoint: its base URL, how it wants the key, its flavour and the timing signals it sends.
#include <optional>
#include <string>
#include <vector>

namespace infdoctor::api {

enum class Flavour { OpenAI, Anthropic };
const char* flavour_name(Flavour f);

// How the key travels.
enum class Auth {
  Bearer,   // Authorization: Bearer KEY
  ApiKey,   // api-key: KEY (Azure OpenAI)
  XApiKey,  // x-api-key: KEY (Anthropic)
};

struct Preset {
  std::string name;
  std::string base_url;  // the default; "" when the user must give one (Azure: their resource)
  Flavour flavour = Flavour::OpenAI;
  Auth auth = Auth::Bearer;
  std::string key_env;   // where the key is read from by default; "" = the server needs none
  std::string query;     // appended to every request URL (Azure: api-version)
  std::vector<std::string> headers;  // sent with every request, e.g. "anthropic-version: 2023-06-01"
  // What the endpoint is known to send with each response: a header name, a header prefix
  // ending in '*', or "timings" for llama.cpp's timing object in the stream. A run reports how
  // many requests carried each: a signal missing may have been stripped by a gateway on the way.
  std::vector<std::string> signals;
  std::string note;                  // for --preset help and the report
};

// "Authorization: Bearer VALUE", "api-key: VALUE" or "x-api-key: VALUE": the header line that
// carries a key (or, in repro.sh, the shell expression that reads it).
std::string key_header(Auth auth, const std::string& value);
// Where chat requests go, after the base URL: /chat/completions, or /messages for Anthropic.
const char* chat_path(Flavour f);

const std::vector<Preset>& presets();
const Preset* find_preset(const std::string& name);
// "openai, azure-openai, ..." for help texts and errors.
std::string preset_names();

}  // namespace infdoctor::api
