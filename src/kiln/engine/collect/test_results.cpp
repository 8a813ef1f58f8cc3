#include "kiln/engine/collect/test_results.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "kiln/engine/collect/quarantine.h"
#include "kiln/report/junit.h"

namespace kiln::engine {
namespace {

std::string relative_name(const std::filesystem::path& path,
                          const std::filesystem::path& workspace) {
  std::error_code ec;
  auto relative = std::filesystem::relative(path, workspace, ec);
  if (ec || relative.empty() || relative.native().starts_with("..")) return path.string();
  return relative.generic_string();
}

// The first `limit` lines of `text`.
std::string first_lines(const std::string& text, std::size_t limit) {
  std::size_t end = 0;
  for (std::size_t n = 0; n < limit; ++n) {
    end = text.find('\n', end);
    if (end == std::string::npos) return text;
    if (n + 1 < limit) ++end;
  }
  return text.substr(0, end);
}

TestFailure failure_of(const report::JunitCase& c, const std::filesystem::path& workspace) {
  TestFailure failure;
  failure.name = test_name(c.classname, c.name);
  failure.message = c.message.substr(0, c.message.find('\n'));
  failure.details = first_lines(c.details, k_test_failure_lines);
  // A path the XML gives relative is relative to where the tests ran: the workspace, mostly.
  if (!c.source_file.empty()) {
    std::filesystem::path source = c.source_file;
    if (source.is_relative()) source = workspace / source;
    auto relative = source.lexically_normal().lexically_relative(workspace.lexically_normal());
    if (!relative.empty() && *relative.begin() != "..") failure.file = relative.generic_string();
  }
  if (failure.file.empty()) return failure;
  failure.line = c.source_line > 0 ? c.source_line : 1;
  // gtest's message starts with the failing assertion's place, "math_test.cc:9": a better line
  // than the test's first.
  const std::string prefix = std::filesystem::path(c.source_file).filename().string() + ":";
  const std::string& message = failure.message;
  if (auto at = message.find(prefix);
      at != std::string::npos && (at == 0 || message[at - 1] == '/')) {
    int line = 0;
    const char* digits = message.data() + at + prefix.size();
    auto [end, error] = std::from_chars(digits, message.data() + message.size(), line);
    if (error == std::errc() && line > 0) failure.line = line;
  }
  return failure;
}

}  // namespace

std::vector<std::filesystem::path> find_default_result_files(const std::filesystem::path& workspace,
                                                             std::size_t limit) {
  std::vector<std::filesystem::path> found;
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(
      workspace, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const auto& entry = *it;
    auto name = entry.path().filename().string();
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) {
      if (name == ".git" || name == "node_modules") it.disable_recursion_pending();
      continue;
    }
    if (!entry.is_regular_file(type_ec)) continue;
    if (!report::is_default_result_file(relative_name(entry.path(), workspace))) continue;
    found.push_back(entry.path());
    if (found.size() >= limit) break;
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<std::filesystem::path> result_files(const std::filesystem::path& list,
                                                const std::filesystem::path& workspace) {
  std::vector<std::filesystem::path> files = find_default_result_files(workspace);
  std::set<std::filesystem::path> seen(files.begin(), files.end());
  std::ifstream in(list);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::filesystem::path path = line;
    if (path.is_relative()) path = workspace / path;
    path = path.lexically_normal();
    if (seen.insert(path).second) files.push_back(path);
  }
  return files;
}

TestResultsOutcome collect_test_results(store::Store& store, const TestResultsContext& context,
                                        const std::filesystem::path& list,
                                        const std::filesystem::path& workspace,
                                        const core::RunAs* run_as) {
  TestResultsOutcome outcome;
  std::vector<std::filesystem::path> files = result_files(list, workspace);
  if (files.empty()) return outcome;

  // Tests that failed in other runs of this commit: a pass here makes them flaky.
  std::set<std::pair<std::string, std::string>> failed_before;
  if (!context.commit.empty()) {
    store::TestCaseQuery query;
    query.repository = context.repository;
    query.commit = context.commit;
    query.exclude_run_id = context.run_id;
    query.failed_only = true;
    if (auto failed = store.list_test_cases(query))
      for (const auto& c : *failed) failed_before.emplace(c.classname, c.name);
  }

  int passed = 0, failed = 0, errors = 0, skipped = 0, flaky = 0, read = 0;
  double seconds = 0;
  std::vector<std::string> failures;
  for (const auto& path : files) {
    auto name = relative_name(path, workspace);
    if (run_as)
      if (auto readable = core::check_readable_by(path, *run_as); !readable) {
        outcome.lines.emplace_back("warning", "test results: skipped " + readable.error().message);
        continue;
      }
    auto parsed = report::parse_junit_file(path);
    if (!parsed) {
      outcome.lines.emplace_back("warning", "test results: skipped " + parsed.error().to_string());
      continue;
    }
    for (const auto& note : parsed->notes)
      outcome.lines.emplace_back("warning", fmt::format("test results: {}: {}", name, note));
    std::vector<store::TestCase> rows;
    for (const auto& c : parsed->cases) {
      store::TestCase& row = rows.emplace_back();
      row.run_id = context.run_id;
      row.job_id = context.job_id;
      row.repository = context.repository;
      row.commit_sha = context.commit;
      row.suite = c.suite;
      row.classname = c.classname;
      row.name = c.name;
      row.status = c.status;
      row.seconds = c.seconds;
      row.message = c.message;
      row.details = c.details;
      row.output = c.output;
      row.file = name;
      row.flaky = c.status == "passed" && failed_before.contains({c.classname, c.name});
      seconds += c.seconds;
      if (row.flaky) ++flaky;
      if (c.status == "passed") ++passed;
      if (c.status == "skipped") ++skipped;
      if (c.status == "failed") ++failed;
      if (c.status == "error") ++errors;
      if ((c.status == "failed" || c.status == "error") &&
          outcome.failures.size() < k_max_job_test_failures)
        outcome.failures.push_back(failure_of(c, workspace));
      if ((c.status == "failed" || c.status == "error") && failures.size() < 20)
        failures.push_back(fmt::format("{}{}{}: {}", c.classname, c.classname.empty() ? "" : "::",
                                       c.name, c.message.substr(0, c.message.find('\n'))));
    }
    if (context.run_id != 0 && context.job_id != 0) {
      if (auto stored = store.add_test_cases(rows); !stored) {
        outcome.lines.emplace_back("warning", fmt::format("test results: cannot store {}: {}", name,
                                                          stored.error().to_string()));
        continue;
      }
    }
    ++read;
    outcome.cases.insert(outcome.cases.end(), rows.begin(), rows.end());
    outcome.lines.emplace_back(
        "kiln", fmt::format("Test results: {} test(s) from {}", parsed->cases.size(), name));
  }
  if (read == 0) return outcome;
  int total = passed + failed + errors + skipped;
  outcome.totals = {{"total", total},     {"passed", passed},   {"failed", failed},
                    {"errors", errors},   {"skipped", skipped}, {"flaky", flaky},
                    {"seconds", seconds}, {"files", read}};
  outcome.lines.emplace_back(
      "kiln", fmt::format("Tests: {} passed, {} failed, {} errors, {} skipped{} ({:.2f}s)", passed,
                          failed, errors, skipped,
                          flaky ? fmt::format(", {} flaky", flaky) : std::string(), seconds));
  for (const auto& text : failures) outcome.lines.emplace_back("kiln", "  failed: " + text);
  return outcome;
}

}  // namespace kiln::engine
