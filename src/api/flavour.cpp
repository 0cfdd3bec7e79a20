#include "api/flavour.h"

namespace infdoctor::api {

const char* flavour_name(Flavour f) { return f == Flavour::Anthropic ? "anthropic" : "openai"; }

std::string key_header(Auth auth, const std::string& value) {
  switch (auth) {
    case Auth::ApiKey: return "api-key: " + value;
    case Auth::XApiKey: return "x-api-key: " + value;
    case Auth::Bearer: break;
  }
  return "Authorization: Bearer " + value;
}

const char* chat_path(Flavour f) { return f == Flavour::Anthropic ? "/messages" : "/chat/completions"; }

const std::vector<Preset>& presets() {
  static const std::vector<Preset> k = {
      {"openai", "https://api.openai.com/v1", Flavour::OpenAI, Auth::Bearer, "OPENAI_API_KEY", "", {},
       {"openai-processing-ms", "x-request-id", "x-ratelimit-*"}, "OpenAI's own API"},
      {"azure-openai", "", Flavour::OpenAI, Auth::ApiKey, "AZURE_OPENAI_API_KEY", "api-version=2024-06-01", {},
       {"apim-request-id", "x-ratelimit-*", "openai-processing-ms"},
       "give --base-url https://RESOURCE.openai.azure.com/openai/deployments/DEPLOYMENT; the key goes in api-key"},
      {"vllm", "http://localhost:8000/v1", Flavour::OpenAI, Auth::Bearer, "VLLM_API_KEY", "", {}, {},
       "vLLM's OpenAI server (key only with --api-key on the server)"},
      {"tgi", "http://localhost:8080/v1", Flavour::OpenAI, Auth::Bearer, "", "", {},
       {"x-compute-time", "x-queue-time", "x-inference-time", "x-time-per-token"},
       "Hugging Face text-generation-inference, Messages API"},
      {"llama.cpp", "http://localhost:8080/v1", Flavour::OpenAI, Auth::Bearer, "LLAMA_API_KEY", "", {},
       {"timings"}, "llama.cpp's llama-server"},
      {"ollama", "http://localhost:11434/v1", Flavour::OpenAI, Auth::Bearer, "", "", {}, {},
       "Ollama's OpenAI-compatible endpoint"},
      {"sglang", "http://localhost:30000/v1", Flavour::OpenAI, Auth::Bearer, "SGLANG_API_KEY", "", {}, {},
       "SGLang's OpenAI server"},
      {"together", "https://api.together.xyz/v1", Flavour::OpenAI, Auth::Bearer, "TOGETHER_API_KEY", "", {},
       {"x-request-id", "x-ratelimit-*"}, "Together AI"},
      {"fireworks", "https://api.fireworks.ai/inference/v1", Flavour::OpenAI, Auth::Bearer, "FIREWORKS_API_KEY", "",
       {}, {"server-timing", "x-request-id"}, "Fireworks AI"},
      {"groq", "https://api.groq.com/openai/v1", Flavour::OpenAI, Auth::Bearer, "GROQ_API_KEY", "", {},
       {"x-request-id", "x-ratelimit-*"}, "Groq"},
      {"openrouter", "https://openrouter.ai/api/v1", Flavour::OpenAI, Auth::Bearer, "OPENROUTER_API_KEY", "", {},
       {}, "OpenRouter (routes to other providers: compare with the provider directly)"},
      {"anthropic", "https://api.anthropic.com/v1", Flavour::Anthropic, Auth::XApiKey, "ANTHROPIC_API_KEY", "",
       {"anthropic-version: 2023-06-01"}, {"request-id", "anthropic-ratelimit-*"},
       "Anthropic Messages API (POST /messages)"},
  };
  return k;
}

const Preset* find_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::string preset_names() {
  std::string out;
  for (const auto& p : presets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace infdoctor::api
