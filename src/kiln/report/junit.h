#pragma once
// JUnit XML in and out. In: the files test runners write (pytest --junitxml, ctest
// --output-junit, gtest --gtest_output=xml, and anything else of the common shape
// <testsuites><testsuite><testcase>), read with pugixml. Out: Kiln's own jobs and steps as
// JUnit XML for another CI to consume (report.h's render_junit).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::report {

// Texts longer than this (a test's output, a long traceback) are cut, with a marker.
inline constexpr std::size_t k_max_test_text = 64 * 1024;

struct JunitCase {
  std::string suite;      // the nearest enclosing <testsuite name>
  std::string classname;  // <testcase classname> (gtest: the fixture; pytest: the module)
  std::string name;
  std::string status;   // "passed", "failed", "error" or "skipped"
  double seconds = 0;   // <testcase time>; 0 when absent or not a number
  std::string message;  // of <failure>/<error>/<skipped>
  std::string details;  // the text inside <failure>/<error>, truncated
  std::string output;   // <system-out> then <system-err>, truncated
  // <testcase file= line=> (gtest, pytest's xunit1 family): the test's source, as written.
  std::string source_file;
  int source_line = 0;  // 0: not given
};

struct JunitFile {
  std::vector<JunitCase> cases;
  // Things a reader should know but that did not stop the parse ("time 'abc' of test x is not
  // a number").
  std::vector<std::string> notes;
};

// Parses JUnit XML text. `source` names the file in errors. Not XML, or a root that is neither
// <testsuites> nor <testsuite>, is invalid_input naming the source (and the byte offset for
// XML errors).
Result<JunitFile> parse_junit(std::string_view xml, std::string_view source);
// Reads and parses a file; io_error when it cannot be read.
Result<JunitFile> parse_junit_file(const std::filesystem::path& path);

// Cuts `text` to at most `limit` bytes (at a UTF-8 boundary) with a note of what was cut.
std::string truncate_text(std::string text, std::size_t limit = k_max_test_text);

// The default result files, searched in a job's workspace after its steps: **/junit*.xml,
// **/TEST-*.xml and **/test-results/**/*.xml (`relative` is the path below the workspace,
// '/'-separated).
bool is_default_result_file(std::string_view relative);

}  // namespace kiln::report
