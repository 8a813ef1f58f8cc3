// render_text and render_junit (report.h). render_html is in html.cpp.

#include <fmt/format.h>
#include <pugixml.hpp>

#include <sstream>

#include "kiln/core/time.h"
#include "kiln/report/report.h"

namespace kiln::report {
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string gpus_cell(const Json& job) {
  if (job["gpus"].empty()) return "-";
  std::string cell;
  for (const auto& g : job["gpus"])
    cell += fmt::format("{}{}", cell.empty() ? "" : ",", format_value(g.value("index", Json(""))));
  return cell;
}

std::string tests_cell(const Json& totals) {
  if (totals["total"].get<int>() == 0) return "-";
  return fmt::format("{}/{}", totals["passed"].get<int>(),
                     totals["total"].get<int>() - totals["skipped"].get<int>());
}

std::string table(const std::vector<std::vector<std::string>>& rows, const std::string& indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      if (widths.size() <= c) widths.push_back(0);
      widths[c] = std::max(widths[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

// "    queued 12.4 s (class release; gpus 10.1 s, priority 2.3 s)" for a job that started.
std::string queue_line(const Json& queue) {
  if (!queue["seconds"].is_number()) return "";
  std::string why;
  for (const auto& [reason, seconds] : queue["waited"].items())
    why += fmt::format(", {} {}", reason, format_number(seconds.get<double>(), "s"));
  return fmt::format(
      "    queued {} (class {}{})\n", format_number(queue["seconds"].get<double>(), "s"),
      format_value(queue["priority"]).empty() ? "-" : format_value(queue["priority"]), why);
}

}  // namespace

std::string render_text(const Json& report) {
  const auto& run = report["run"];
  std::string out = fmt::format(
      "Run #{} (id {}): {} · {} · {} · {}\nstatus: {}   duration: {}\n",
      run["number"].get<int64_t>(), run["id"].get<int64_t>(), format_value(run["name"]),
      format_value(run["event"]), format_value(run["ref"]), format_value(run["sha"]).substr(0, 12),
      format_value(run["status"]),
      core::format_duration(std::chrono::milliseconds(run["duration_ms"].get<std::int64_t>())));

  out += "\nJOBS\n";
  std::vector<std::vector<std::string>> rows = {{"STATUS", "DURATION", "GPUS", "TESTS", "JOB"}};
  for (const auto& job : report["jobs"])
    rows.push_back(
        {format_value(job["conclusion"]).empty() ? format_value(job["status"])
                                                 : format_value(job["conclusion"]),
         core::format_duration(std::chrono::milliseconds(job["duration_ms"].get<std::int64_t>())),
         gpus_cell(job), tests_cell(job["tests"]), format_value(job["name"])});
  out += table(rows, "  ");
  for (const auto& job : report["jobs"]) {
    out += fmt::format("\n  {}\n", format_value(job["name"]));
    if (!format_value(job["message"]).empty())
      out += fmt::format("    {}\n", format_value(job["message"]));
    if (job.contains("failure_class") && job["failure_class"].is_string())
      out += fmt::format("    class {}: {}\n", format_value(job["failure_class"]),
                         format_value(job["failure_evidence"]));
    if (job.contains("queue")) out += queue_line(job["queue"]);
    for (const auto& step : job["steps"])
      out += fmt::format(
          "    {:<9} {:>8}  {}\n",
          format_value(step["conclusion"]).empty() ? format_value(step["status"])
                                                   : format_value(step["conclusion"]),
          core::format_duration(std::chrono::milliseconds(step["duration_ms"].get<std::int64_t>())),
          format_value(step["name"]));
    if (job["gpu_summary"].is_object()) {
      std::string summary;
      for (const auto& [key, value] : job["gpu_summary"].items())
        if (value.is_primitive())
          summary += fmt::format("{}{}={}", summary.empty() ? "" : " ", key, format_value(value));
      out += fmt::format("    GPU: {}\n", summary);
    }
    if (!format_value(job["step_summary"]).empty()) {
      out += "    Summary:\n";
      std::istringstream lines(format_value(job["step_summary"]));
      for (std::string line; std::getline(lines, line);) out += "      " + line + "\n";
    }
  }

  const auto& tests = report["tests"];
  out += "\nTESTS\n";
  if (tests["total"].get<int>() == 0) {
    out += "  no test results (docs/reports.md says where Kiln looks)\n";
  } else {
    out += fmt::format("  {} passed, {} failed, {} errors, {} skipped, {} flaky ({:.2f}s)\n",
                       tests["passed"].get<int>(), tests["failed"].get<int>(),
                       tests["errors"].get<int>(), tests["skipped"].get<int>(),
                       tests["flaky"].get<int>(), tests["seconds"].get<double>());
    if (!tests["failures"].empty()) {
      out += "\nFAILURES\n";
      for (const auto& f : tests["failures"])
        out += fmt::format("  {} › {} ({}{}): {}\n", format_value(f["job"]),
                           format_value(f["test"]), format_value(f["status"]),
                           f.value("quarantined", false) ? ", quarantined" : "",
                           first_line(format_value(f["message"])));
    }
    if (!tests["flaky_tests"].empty()) {
      out += "\nFLAKY (failed in another run of this commit)\n";
      for (const auto& f : tests["flaky_tests"])
        out += fmt::format("  {} › {}\n", format_value(f["job"]), format_value(f["test"]));
    }
    if (!tests["quarantined_tests"].empty()) {
      out += "\nQUARANTINED (still run; their failures alone do not fail a job)\n";
      for (const auto& q : tests["quarantined_tests"]) {
        std::string failed;
        for (const auto& job : q["failed_in"])
          failed += (failed.empty() ? "" : ", ") + format_value(job);
        out += fmt::format("  {} ({}: {}){}\n", format_value(q["test"]), format_value(q["by"]),
                           format_value(q["reason"]),
                           failed.empty() ? "" : fmt::format(", failed here in {}", failed));
      }
    }
    out += "\nSLOWEST TESTS\n";
    for (const auto& s : tests["slowest"])
      out += fmt::format("  {:>9.3f}s  {} › {}\n", s["seconds"].get<double>(),
                         format_value(s["job"]), format_value(s["test"]));
  }

  if (!report["benchmarks"].empty()) {
    out += "\nBENCHMARKS\n";
    std::vector<std::vector<std::string>> bench = {{"JOB", "BENCHMARK", "METRIC", "VALUE", "UNIT"}};
    for (const auto& b : report["benchmarks"])
      bench.push_back({format_value(b["job"]), format_value(b["benchmark"]),
                       format_value(b["metric"]), format_number(b["value"].get<double>()),
                       format_value(b["unit"])});
    out += table(bench, "  ");
  }
  return out;
}

std::string render_junit(const Json& report) {
  pugi::xml_document document;
  auto declaration = document.append_child(pugi::node_declaration);
  declaration.append_attribute("version") = "1.0";
  declaration.append_attribute("encoding") = "UTF-8";
  const auto& run = report["run"];
  auto suites = document.append_child("testsuites");
  suites.append_attribute("name") =
      fmt::format("kiln run #{}: {}", run["number"].get<int64_t>(), format_value(run["name"]))
          .c_str();
  int all_tests = 0, all_failures = 0, all_skipped = 0;
  double all_time = 0;
  for (const auto& job : report["jobs"]) {
    auto suite = suites.append_child("testsuite");
    suite.append_attribute("name") = format_value(job["name"]).c_str();
    int tests = 0, failures = 0, skipped = 0;
    double time = 0;
    for (const auto& step : job["steps"]) {
      auto testcase = suite.append_child("testcase");
      testcase.append_attribute("classname") = format_value(job["key"]).c_str();
      testcase.append_attribute("name") = format_value(step["name"]).c_str();
      double seconds = std::max<std::int64_t>(0, step["duration_ms"].get<std::int64_t>()) / 1000.0;
      testcase.append_attribute("time") = format_number(seconds).c_str();
      ++tests;
      time += seconds;
      std::string conclusion = format_value(step["conclusion"]);
      if (conclusion == "failure") {
        ++failures;
        auto failure = testcase.append_child("failure");
        std::string message =
            step["exit_code"].is_number()
                ? fmt::format("step failed with exit code {}", step["exit_code"].get<int>())
                : std::string("step failed");
        failure.append_attribute("message") = message.c_str();
        if (!format_value(job["message"]).empty())
          failure.append_child(pugi::node_pcdata).set_value(format_value(job["message"]).c_str());
      } else if (conclusion == "skipped" || conclusion == "cancelled") {
        ++skipped;
        testcase.append_child("skipped").append_attribute("message") = conclusion.c_str();
      }
    }
    // A job that failed before any step (set-up, services) is one failed test case.
    if (job["steps"].empty() && format_value(job["conclusion"]) == "failure") {
      auto testcase = suite.append_child("testcase");
      testcase.append_attribute("classname") = format_value(job["key"]).c_str();
      testcase.append_attribute("name") = "set up job";
      testcase.append_attribute("time") = "0";
      testcase.append_child("failure").append_attribute("message") =
          format_value(job["message"]).c_str();
      ++tests;
      ++failures;
    }
    suite.append_attribute("tests") = tests;
    suite.append_attribute("failures") = failures;
    suite.append_attribute("errors") = 0;
    suite.append_attribute("skipped") = skipped;
    suite.append_attribute("time") = format_number(time).c_str();
    all_tests += tests;
    all_failures += failures;
    all_skipped += skipped;
    all_time += time;
  }
  suites.append_attribute("tests") = all_tests;
  suites.append_attribute("failures") = all_failures;
  suites.append_attribute("errors") = 0;
  suites.append_attribute("skipped") = all_skipped;
  suites.append_attribute("time") = format_number(all_time).c_str();
  std::ostringstream out;
  document.save(out, "  ", pugi::format_default, pugi::encoding_utf8);
  return out.str();
}

}  // namespace kiln::report
