// The fixtures in tests/data/hipcheck/ are scanned as one project (so a header's macros reach
// the .cu files that use them); each source's findings must equal the <source>.expected file
// beside it: one line per finding, "LINE:COL category rule name[ -> hip][ [CUDA only: MACRO]]".
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "kiln/hipcheck/hipcheck.h"

namespace kiln::hipcheck {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(Fixtures, FindingsMatchTheExpectedFiles) {
  fs::path dir = fs::path(KILN_SOURCE_DIR) / "tests/data/hipcheck";
  Options options;
  options.paths = {dir.string()};
  auto report = run_check(options);
  ASSERT_TRUE(report) << report.error().to_string();
  ASSERT_GE(report->files.size(), 6u);
  for (const FileScan& file : report->files) {
    fs::path expected_file = file.path + ".expected";
    ASSERT_TRUE(fs::exists(expected_file)) << "no expected findings for " << file.path;
    std::string actual;
    for (const Finding& f : file.findings) {
      actual += fmt::format("{}:{} {} {} {}", f.line, f.column, category_name(f.category),
                            rule_info(f.rule).id, f.name);
      if (!f.replacement.empty()) actual += fmt::format(" -> {}", f.replacement);
      if (f.guarded) actual += fmt::format(" [CUDA only: {}]", f.guard);
      actual += "\n";
    }
    EXPECT_EQ(actual, read(expected_file)) << "in " << file.path;
  }
}

}  // namespace
}  // namespace kiln::hipcheck
