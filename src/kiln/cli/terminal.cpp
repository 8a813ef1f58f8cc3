#include "kiln/cli/terminal.h"

#include <unistd.h>

#include <algorithm>
#include <iterator>

#include <fmt/format.h>

#include "kiln/cli/common.h"
#include "kiln/core/time.h"

namespace kiln::cli {
namespace {

constexpr int k_palette[] = {36, 35, 33, 32, 34, 96, 95, 93, 92, 94};

std::string colourise(bool colour, int code, std::string_view text) {
  if (!colour) return std::string(text);
  return fmt::format("\033[{}m{}\033[0m", code, text);
}

int conclusion_colour(engine::Conclusion conclusion) {
  switch (conclusion) {
    case engine::Conclusion::success:
      return 32;
    case engine::Conclusion::failure:
      return 31;
    case engine::Conclusion::cancelled:
      return 33;
    case engine::Conclusion::skipped:
      return 90;
  }
  return 0;
}

}  // namespace

TerminalObserver::TerminalObserver(std::FILE* out, bool verbose) : out_(out), verbose_(verbose) {
  live_ = isatty(fileno(out)) == 1;
  colour_ = live_ && std::getenv("NO_COLOR") == nullptr;
}

void TerminalObserver::run_started(const std::string& workflow_name, std::int64_t run_id) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  fmt::print(out_, "{} {} (run {})\n", colourise(colour_, 1, "kiln:"), workflow_name, run_id);
  draw_status_locked();
}

std::string TerminalObserver::prefix_locked(const std::string& job_key) {
  auto [it, inserted] = job_colours_.try_emplace(job_key, static_cast<int>(job_colours_.size()));
  prefix_width_ = std::min<size_t>(std::max(prefix_width_, job_key.size()), 32);
  int code = k_palette[it->second % std::size(k_palette)];
  std::string label = fmt::format("[{}]", job_key);
  int depth = group_depth_[job_key];
  return colourise(colour_, code, label) + std::string(depth * 2 + 1, ' ');
}

void TerminalObserver::job_started(const std::string& job_key) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  fmt::print(out_, "{}{}\n", prefix_locked(job_key), colourise(colour_, 1, "job started"));
  draw_status_locked();
}

void TerminalObserver::job_line(const std::string& job_key, std::string_view kind,
                                std::string_view text) {
  std::lock_guard lock(mutex_);
  if (kind == "debug" && !verbose_) return;
  clear_status_locked();
  print_line_locked(job_key, prefix_locked(job_key), kind, text);
  write_out_locked();
  draw_status_locked();
}

void TerminalObserver::job_lines(const std::string& job_key,
                                 std::span<const engine::ShownLine> lines) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  // The job's prefix once a block; a group's start or end changes its indentation.
  std::string prefix = prefix_locked(job_key);
  for (const auto& line : lines) {
    if (line.kind == "debug" && !verbose_) continue;
    print_line_locked(job_key, prefix, line.kind, line.text);
    if (line.kind == "group" || line.kind == "endgroup") prefix = prefix_locked(job_key);
  }
  write_out_locked();
  draw_status_locked();
}

void TerminalObserver::print_line_locked(const std::string& job_key, std::string_view prefix,
                                         std::string_view kind, std::string_view text) {
  auto out = std::back_inserter(pending_);
  if (kind == "endgroup") {
    group_depth_[job_key] = std::max(0, group_depth_[job_key] - 1);
  } else if (kind == "group") {
    fmt::format_to(out, "{}{}\n", prefix, colourise(colour_, 1, fmt::format("▼ {}", text)));
    ++group_depth_[job_key];
  } else if (kind == "output" || kind == "stderr") {
    pending_.append(prefix).append(text) += '\n';  // most lines: no formatting
  } else if (kind == "kiln") {
    fmt::format_to(out, "{}{}\n", prefix, colourise(colour_, 1, text));
  } else {
    int code = kind == "error" ? 31 : kind == "warning" ? 33 : 36;
    fmt::format_to(out, "{}{}\n", prefix,
                   colourise(colour_, code, fmt::format("{}: {}", kind, text)));
  }
}

void TerminalObserver::write_out_locked() {
  // One fwrite: on an unbuffered stderr (--json) a block of lines is one write().
  if (!pending_.empty()) std::fwrite(pending_.data(), 1, pending_.size(), out_);
  pending_.clear();
}

void TerminalObserver::job_finished(const engine::JobSummary& job) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  std::string verdict = std::string(store::to_string(job.conclusion));
  std::string line = fmt::format("job {} in {}", verdict, core::format_duration(job.duration));
  if (!job.reason.empty()) line += fmt::format(" ({})", job.reason);
  fmt::print(out_, "{}{}\n", prefix_locked(job.key),
             colourise(colour_, conclusion_colour(job.conclusion), line));
  group_depth_.erase(job.key);
  draw_status_locked();
}

void TerminalObserver::progress(int done, int total, const std::vector<std::string>& running) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  std::string names;
  for (const auto& name : running) names += (names.empty() ? "" : ", ") + name;
  status_ = fmt::format("[{}/{}]{}{}", done, total, running.empty() ? "" : " running: ", names);
  if (!live_) {
    // Without a terminal the status line is printed whenever it changes.
    fmt::print(out_, "{}\n", status_);
    status_.clear();
  }
  draw_status_locked();
}

void TerminalObserver::warning(const std::string& text) {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  fmt::print(stderr, "kiln: {}\n", text);
  draw_status_locked();
}

void TerminalObserver::finish() {
  std::lock_guard lock(mutex_);
  clear_status_locked();
  status_.clear();
  std::fflush(out_);
}

void TerminalObserver::clear_status_locked() {
  if (live_ && !status_.empty()) fmt::print(out_, "\r\033[K");
}

void TerminalObserver::draw_status_locked() {
  if (live_ && !status_.empty()) {
    std::string shown = status_.size() > 120 ? status_.substr(0, 117) + "..." : status_;
    fmt::print(out_, "{}", colourise(colour_, 2, shown));
  }
  std::fflush(out_);
}

void print_summary(std::FILE* out, const engine::RunReport& report, bool colour) {
  for (const auto& [workflow, reason] : report.not_triggered)
    fmt::print(out, "kiln: {} not triggered: {}\n", workflow, reason);
  // An automatic retry's earlier attempts stay visible: each failed attempt, with its jobs'
  // classes.
  for (const auto& run : report.retried) {
    fmt::print(out, "\n{} — run {} (attempt {}) {}, retried automatically\n", run.workflow_name,
               run.run_id, run.attempt,
               colourise(colour, conclusion_colour(run.conclusion),
                         std::string(store::to_string(run.conclusion))));
    for (const auto& job : run.jobs)
      if (job.failure_class != store::FailureClass::none)
        fmt::print(out, "  {} {}: class {}: {}\n", std::string(store::to_string(job.conclusion)),
                   job.key, store::to_string(job.failure_class), job.failure_evidence);
  }
  for (const auto& run : report.runs) {
    size_t width = 3;
    for (const auto& job : run.jobs) width = std::max(width, job.key.size());
    fmt::print(out, "\n{} — run {} {}\n", run.workflow_name, run.run_id,
               colourise(colour, conclusion_colour(run.conclusion),
                         std::string(store::to_string(run.conclusion))));
    if (run.retry_of != 0)
      fmt::print(out, "  attempt {}, an automatic retry of run {}: {}\n", run.attempt, run.retry_of,
                 run.retry_reason);
    fmt::print(out, "  {:<{}}  {:<9}  {}\n", "JOB", width, "STATUS", "DURATION");
    for (const auto& job : run.jobs) {
      std::string status = std::string(store::to_string(job.conclusion));
      std::string padded = fmt::format("{:<9}", status);
      fmt::print(out, "  {:<{}}  {}  {}\n", job.key, width,
                 colourise(colour, conclusion_colour(job.conclusion), padded),
                 job.conclusion == engine::Conclusion::skipped
                     ? "-"
                     : core::format_duration(job.duration));
    }
    // What failed, per failed or cancelled job: the step, how it ended, its last lines.
    for (const auto& job : run.jobs) {
      if (job.conclusion != engine::Conclusion::failure &&
          job.conclusion != engine::Conclusion::cancelled)
        continue;
      std::string how = job.reason;
      if (job.failure && !job.failure->step.empty())
        how =
            job.failure->kind == "exit code"
                ? fmt::format("step '{}': exit code {}", job.failure->step, job.failure->exit_code)
                : fmt::format("step '{}': {}", job.failure->step, job.failure->kind);
      fmt::print(out, "\n  {} {}: {}\n",
                 colourise(colour, conclusion_colour(job.conclusion),
                           job.conclusion == engine::Conclusion::failure ? "FAILED" : "CANCELLED"),
                 job.key, how.empty() ? "no reason known" : how);
      // docs/failures.md: whose fault it was, and the line that says so.
      if (job.failure_class != store::FailureClass::none)
        fmt::print(out, "    class {}: {}\n", store::to_string(job.failure_class),
                   job.failure_evidence);
      if (job.failure)
        for (const auto& line : job.failure->last_lines) fmt::print(out, "    | {}\n", line);
    }
    // A job green only because quarantined tests' failures did not count: said, not hidden.
    for (const auto& job : run.jobs) {
      if (job.conclusion != engine::Conclusion::success ||
          job.failure_class != store::FailureClass::test)
        continue;
      fmt::print(out, "\n  {} {}: passed with quarantined tests failing\n",
                 colourise(colour, 33, "WARNING"), job.key);
      fmt::print(out, "    class test: {} (kiln tests list)\n", job.failure_evidence);
    }
    // The GPU summary of each job that held GPUs (docs/gpus.md "Telemetry").
    for (const auto& job : run.jobs) {
      if (!job.gpu.is_object()) continue;
      const auto& g = job.gpu;
      auto number = [&](const char* key, const char* format_unit) -> std::string {
        return g[key].is_number() ? fmt::format(fmt::runtime(format_unit), g[key].get<double>())
                                  : "-";
      };
      fmt::print(out,
                 "  GPU {}: {} GPU(s), memory peak {} MiB mean {:.0f} MiB, utilization {}, "
                 "energy {}, max {}, throttled {:.1f} s, GPU-seconds busy {:.1f} of {:.1f} held\n",
                 job.key, g["gpus"].get<int>(), g["peak_memory_mib"].get<std::uint64_t>(),
                 g["mean_memory_mib"].get<double>(), number("mean_utilization_pct", "{:.0f}%"),
                 number("energy_wh", "{:.3f} Wh"), number("max_temperature_c", "{:.0f} C"),
                 g["throttled_seconds"].get<double>(), g["gpu_seconds_busy"].get<double>(),
                 g["gpu_seconds_held"].get<double>());
    }
  }
  std::fflush(out);
}

}  // namespace kiln::cli
