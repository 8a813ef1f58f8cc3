#pragma once
// What a job's GitHub check run says (server/check_client.h): its conclusion, a title, a
// Markdown summary (how it ended, the failed step's last lines, test totals, the perf gate's
// table, annotations that name no file), the job summary ($GITHUB_STEP_SUMMARY) as its text,
// and its annotations on files and lines in the check API's shape.

#include <string>

#include <nlohmann/json.hpp>

#include "kiln/engine/engine.h"

namespace kiln::server {

// GitHub takes at most 50 annotations per request, and 65,535 characters of summary or text.
inline constexpr std::size_t k_check_annotations_per_request = 50;
inline constexpr std::size_t k_check_text_limit = 65'535;

struct CheckOutput {
  std::string conclusion{};  // success, failure, cancelled, skipped, timed_out
  std::string title{};
  std::string summary{};
  std::string text{};
  nlohmann::json annotations = nlohmann::json::array();  // [{path, start_line, ...}]
  std::string details_url{};  // the run's page on the server; empty: left as it was
  std::string external_id{};  // the run's id, for a re-run requested on the forge; empty: as is
};

CheckOutput check_output(const engine::JobSummary& job);

// `text` cut to at most `limit` bytes at a UTF-8 character boundary, with a line saying so.
std::string cut_for_check(std::string text, std::size_t limit = k_check_text_limit);

}  // namespace kiln::server
