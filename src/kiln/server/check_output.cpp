#include "kiln/server/check_output.h"

#include <fmt/core.h>

namespace kiln::server {
namespace {

std::string_view level_of(exec::AnnotationLevel level) {
  switch (level) {
    case exec::AnnotationLevel::error:
      return "failure";
    case exec::AnnotationLevel::warning:
      return "warning";
    case exec::AnnotationLevel::notice:
      return "notice";
  }
  return "failure";
}

std::string seconds(std::chrono::milliseconds duration) {
  return fmt::format("{:.1f}s", static_cast<double>(duration.count()) / 1000.0);
}

// How the job ended, in a few words: the title of the check run.
std::string title_of(const engine::JobSummary& job, const std::string& conclusion) {
  const auto& failure = job.failure;
  if (conclusion == "success") return fmt::format("succeeded in {}", seconds(job.duration));
  if (conclusion == "skipped") return job.reason.empty() ? "skipped" : "skipped: " + job.reason;
  if (failure && failure->kind == "exit code")
    return fmt::format("step '{}' exited with {}", failure->step, failure->exit_code);
  if (failure && failure->kind == "gate") return "the perf gate failed the job";
  if (failure && !failure->step.empty())
    return fmt::format("step '{}': {}", failure->step, failure->kind);
  if (!job.reason.empty()) return job.reason;
  return conclusion == "cancelled" ? "cancelled" : "failed";
}

// A code block that the text cannot end early: a fence longer than any run of backticks in it.
std::string fenced(const std::string& text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  return fmt::format("{}\n{}\n{}\n", fence, text, fence);
}

// A table cell: a pipe or a line break would end it.
std::string cell(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|')
      out += "\\|";
    else if (c == '\n' || c == '\r')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::string perf_table(const nlohmann::ordered_json& perf) {
  if (!perf.is_object() || !perf.contains("rows") || !perf["rows"].is_array() ||
      perf["rows"].empty())
    return {};
  std::string out =
      "### Perf gate\n\n| benchmark | metric | change | threshold | verdict |\n"
      "|---|---|---|---|---|\n";
  for (const auto& row : perf["rows"]) {
    auto text = [&](const char* key) {
      return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
    };
    auto percent = [&](const char* key) {
      return row.contains(key) && row[key].is_number()
                 ? fmt::format("{:+.1f}%", row[key].get<double>())
                 : std::string("–");
    };
    std::string verdict = text("verdict");
    if (!text("reason").empty()) verdict += ": " + text("reason");
    out +=
        fmt::format("| {} | {} | {} | {} | {} |\n", cell(text("benchmark")), cell(text("metric")),
                    percent("change_percent"), percent("threshold_percent"), cell(verdict));
  }
  return out + "\n";
}

std::string count_of(const nlohmann::json& totals, const char* key) {
  return totals.contains(key) && totals[key].is_number_integer()
             ? std::to_string(totals[key].get<long long>())
             : "0";
}

// The JUnit totals and the failed tests, a row each: what a reviewer reads first.
std::string tests_section(const engine::JobSummary& job) {
  if (!job.tests.is_object() && job.test_failures.empty()) return {};
  std::string out = "### Tests\n\n";
  if (job.tests.is_object()) {
    out += fmt::format("{} tests: {} passed, {} failed, {} errors, {} skipped",
                       count_of(job.tests, "total"), count_of(job.tests, "passed"),
                       count_of(job.tests, "failed"), count_of(job.tests, "errors"),
                       count_of(job.tests, "skipped"));
    if (count_of(job.tests, "quarantined") != "0")
      out += fmt::format(" ({} of the failures quarantined)", count_of(job.tests, "quarantined"));
    out += "\n\n";
  }
  if (job.test_failures.empty()) return out;
  out += "| failed test | message | where |\n|---|---|---|\n";
  for (const auto& failure : job.test_failures) {
    std::string where =
        failure.file.empty() ? "" : fmt::format("{}:{}", failure.file, failure.line);
    out += fmt::format("| {}{} | {} | {} |\n", cell(failure.name),
                       failure.quarantined ? " (quarantined)" : "", cell(failure.message),
                       cell(where));
  }
  std::size_t failed = 0;
  if (job.tests.is_object())
    for (const char* key : {"failed", "errors"})
      if (job.tests.contains(key) && job.tests[key].is_number_integer())
        failed += job.tests[key].get<std::size_t>();
  if (failed > job.test_failures.size())
    out += fmt::format("\n(the first {} of {} failed tests)\n", job.test_failures.size(), failed);
  return out + "\n";
}

// A failed test whose file the XML names, as an annotation on the test's line.
nlohmann::json test_annotation(const engine::TestFailure& failure) {
  std::string message = failure.message.empty() ? "failed" : failure.message;
  if (!failure.details.empty() && failure.details != failure.message)
    message += "\n\n" + failure.details;
  return {{"path", failure.file},
          {"start_line", failure.line},
          {"end_line", failure.line},
          {"annotation_level", failure.quarantined ? "warning" : "failure"},
          {"title", cut_for_check(failure.name, 255)},
          {"message", cut_for_check(std::move(message), 64 * 1024)}};
}

}  // namespace

std::string cut_for_check(std::string text, std::size_t limit) {
  if (text.size() <= limit) return text;
  constexpr std::string_view k_cut = "\n\n(cut: longer than a check run shows)\n";
  std::size_t end = limit > k_cut.size() ? limit - k_cut.size() : 0;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  if (limit > k_cut.size()) text += k_cut;
  return text;
}

CheckOutput check_output(const engine::JobSummary& job) {
  CheckOutput out;
  const bool timed_out = job.failure && job.failure->kind == "timeout";
  switch (job.conclusion) {
    case store::Conclusion::success:
      out.conclusion = "success";
      break;
    case store::Conclusion::cancelled:
      out.conclusion = "cancelled";
      break;
    case store::Conclusion::skipped:
      out.conclusion = "skipped";
      break;
    default:
      out.conclusion = timed_out ? "timed_out" : "failure";
  }
  out.title = title_of(job, out.conclusion);

  std::string summary = fmt::format("**{}** in {}", out.conclusion, seconds(job.duration));
  if (!job.reason.empty() && out.conclusion != "success") summary += ": " + job.reason;
  summary += "\n\n";
  if (job.failure && !job.failure->last_lines.empty()) {
    std::string lines;
    for (const auto& line : job.failure->last_lines) lines += line + "\n";
    if (!lines.empty()) lines.pop_back();
    summary += fmt::format("Last lines of step '{}':\n\n{}\n", job.failure->step, fenced(lines));
  }
  summary += perf_table(job.perf);
  std::string loose;  // annotations without a file: GitHub places none, so they are listed
  for (const auto& note : job.annotations) {
    if (!note.file.empty() && note.line > 0) {
      nlohmann::json annotation = {
          {"path", note.file},
          {"start_line", note.line},
          {"end_line", note.end_line >= note.line ? note.end_line : note.line},
          {"annotation_level", level_of(note.level)},
          {"message", note.message.empty() ? "(no message)" : note.message}};
      if (!note.title.empty()) annotation["title"] = note.title;
      // Columns only within one line, as the API requires.
      if (annotation["end_line"] == note.line && note.column > 0) {
        annotation["start_column"] = note.column;
        annotation["end_column"] = note.end_column >= note.column ? note.end_column : note.column;
      }
      out.annotations.push_back(std::move(annotation));
    } else {
      loose += fmt::format("- **{}**{}: {}\n", exec::to_string(note.level),
                           note.file.empty() ? "" : " " + note.file, cell(note.message));
    }
  }
  if (!loose.empty()) summary += "### Annotations\n\n" + loose + "\n";
  summary += tests_section(job);
  for (const auto& failure : job.test_failures)
    if (!failure.file.empty()) out.annotations.push_back(test_annotation(failure));
  out.summary = cut_for_check(std::move(summary));
  out.text = cut_for_check(job.step_summary);
  return out;
}

}  // namespace kiln::server
