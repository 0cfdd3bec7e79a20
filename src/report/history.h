#pragma once
// `infdoctor history FILE`: the runs a scheduled check kept, and how each key metric trends.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history/history.h"

namespace infdoctor::report {

nlohmann::json history_json(const std::vector<history::RunRecord>& runs);
std::string render_history(const std::string& file, int schema, const std::vector<history::RunRecord>& runs);

}  // namespace infdoctor::report
