#pragma once
// What `kiln run` shows while it runs: each log line prefixed by its job, a `[done/total]`
// status line with the running jobs, and a summary table at the end.

#include <cstdio>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "kiln/engine/engine.h"

namespace kiln::cli {

class TerminalObserver : public engine::RunObserver {
 public:
  // Log lines go to `out` (stderr when --json keeps stdout for the JSON document).
  TerminalObserver(std::FILE* out, bool verbose);

  void run_started(const std::string& workflow_name, std::int64_t run_id) override;
  void job_started(const std::string& job_key) override;
  void job_line(const std::string& job_key, std::string_view kind, std::string_view text) override;
  // The lines printed together, with one write.
  void job_lines(const std::string& job_key, std::span<const engine::ShownLine> lines) override;
  void job_finished(const engine::JobSummary& job) override;
  void progress(int done, int total, const std::vector<std::string>& running) override;
  void warning(const std::string& text) override;

  // Clears the status line (before the summary is printed).
  void finish();

 private:
  // A line into pending_; write_out_locked() writes pending_ to out_.
  // `prefix`: prefix_locked(job_key), computed once for a block of lines.
  void print_line_locked(const std::string& job_key, std::string_view prefix, std::string_view kind,
                         std::string_view text);
  void write_out_locked();
  void clear_status_locked();
  void draw_status_locked();
  std::string prefix_locked(const std::string& job_key);

  std::FILE* out_;
  bool verbose_;
  bool live_;  // a terminal: the status line is redrawn in place
  bool colour_;
  std::mutex mutex_;
  std::string status_;
  std::string pending_;
  std::map<std::string, int> job_colours_;
  std::map<std::string, int> group_depth_;
  size_t prefix_width_ = 0;
};

// The table printed after a run: job, status, duration.
void print_summary(std::FILE* out, const engine::RunReport& report, bool colour);

}  // namespace kiln::cli
