#pragma once
// `infdoctor history FILE`: the runs a scheduled check kept, and how each key metric trends; and
// `run --history FILE`'s row, written as an exporter.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "history/history.h"
#include "report/exporter.h"

namespace infdoctor::report {

nlohmann::json history_json(const std::vector<history::RunRecord>& runs);
std::string render_history(const std::string& file, int schema, const std::vector<history::RunRecord>& runs);

// The run's row: its exit code, top finding and flattened metrics (those the history compared it
// on included), under the target model's name.
class HistoryExporter final : public Exporter {
 public:
  HistoryExporter(history::History& history, std::string model, int exit_code, std::map<std::string, double> metrics)
      : history_(history), model_(std::move(model)), exit_code_(exit_code), metrics_(std::move(metrics)) {}
  core::Status write(const results::RunResult& r, const Say& say) override;

 private:
  history::History& history_;
  std::string model_;
  int exit_code_;
  std::map<std::string, double> metrics_;
};

}  // namespace infdoctor::report
