#pragma once
// `infdoctor probe`'s output: one request's phases in the manner of httpstat, or one JSON object
// (DESIGN.md, "Machine-readable output").
#include <string>

#include <nlohmann/json.hpp>

#include "api/sample.h"

namespace infdoctor::report {

nlohmann::json probe_json(const api::RequestSample& s);
std::string render_probe(const api::RequestSample& s, const std::string& url);

}  // namespace infdoctor::report
