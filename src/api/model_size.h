#pragma once
// A model's size as its name states it: "llama-3.1-70b-instruct" -> 70, "Qwen2.5-0.5B" -> 0.5,
// "SmolLM2-360M" -> 0.36 (billions of parameters). A mixture of experts decodes at the cost of its
// active parameters: "Qwen3-30B-A3B" -> 3. A name without a size, or with experts but no active
// count ("mixtral-8x7b"), has none.
#include <optional>
#include <string>

namespace infdoctor::api {

std::optional<double> parameters_from_name(const std::string& model);

}  // namespace infdoctor::api
