// The JUnit XML reader against the three writers Kiln promises (pytest, ctest, gtest; the
// samples are fuzz/corpus/junit/) and against bad input.

#include "kiln/report/junit.h"

#include <gtest/gtest.h>

namespace kiln::report {
namespace {

const std::filesystem::path k_corpus = std::filesystem::path(KILN_SOURCE_DIR) / "fuzz/corpus/junit";

TEST(JunitTest, ReadsPytest) {
  auto parsed = parse_junit_file(k_corpus / "pytest.xml");
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  ASSERT_EQ(parsed->cases.size(), 4u);
  const auto& pass = parsed->cases[0];
  EXPECT_EQ(pass.suite, "pytest");
  EXPECT_EQ(pass.classname, "tests.test_math");
  EXPECT_EQ(pass.name, "test_add");
  EXPECT_EQ(pass.status, "passed");
  EXPECT_DOUBLE_EQ(pass.seconds, 0.001);
  const auto& failed = parsed->cases[1];
  EXPECT_EQ(failed.status, "failed");
  EXPECT_EQ(failed.message, "assert 1 == 2");
  EXPECT_NE(failed.details.find("tests/test_math.py:5: AssertionError"), std::string::npos);
  EXPECT_EQ(failed.output, "printed <b>");
  EXPECT_EQ(parsed->cases[2].status, "skipped");
  EXPECT_EQ(parsed->cases[2].message, "needs a GPU");
  EXPECT_EQ(parsed->cases[3].status, "error");
  EXPECT_EQ(parsed->cases[3].message, "failed on setup with \"RuntimeError: no device\"");
  EXPECT_TRUE(parsed->notes.empty());
}

TEST(JunitTest, ReadsCtest) {
  auto parsed = parse_junit_file(k_corpus / "ctest.xml");
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  ASSERT_EQ(parsed->cases.size(), 3u);
  EXPECT_EQ(parsed->cases[0].suite, "Linux-c++");
  EXPECT_EQ(parsed->cases[0].status, "passed");
  EXPECT_DOUBLE_EQ(parsed->cases[0].seconds, 0.0123);
  EXPECT_EQ(parsed->cases[1].name, "integration_gpu");
  EXPECT_EQ(parsed->cases[1].status, "failed");
  EXPECT_EQ(parsed->cases[1].message, "Failed");
  EXPECT_EQ(parsed->cases[1].output, "CUDA error: out of memory");
  EXPECT_EQ(parsed->cases[2].status, "skipped");
  EXPECT_EQ(parsed->cases[2].message, "Disabled");
}

TEST(JunitTest, ReadsGtest) {
  auto parsed = parse_junit_file(k_corpus / "gtest.xml");
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  ASSERT_EQ(parsed->cases.size(), 3u);
  EXPECT_EQ(parsed->cases[0].suite, "MathTest");
  EXPECT_EQ(parsed->cases[0].classname, "MathTest");
  EXPECT_EQ(parsed->cases[0].status, "passed");
  EXPECT_EQ(parsed->cases[1].status, "failed");
  EXPECT_EQ(parsed->cases[1].message.substr(0, 13), "math_test.cc:");
  EXPECT_EQ(parsed->cases[1].source_file, "math_test.cc");
  EXPECT_EQ(parsed->cases[1].source_line, 8);
  EXPECT_NE(parsed->cases[1].details.find("Expected equality"), std::string::npos);
  // DISABLED_ tests are reported as not run: skipped.
  EXPECT_EQ(parsed->cases[2].status, "skipped");
}

TEST(JunitTest, NestedSuitesAndBadTimes) {
  auto parsed = parse_junit_file(k_corpus / "nested.xml");
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  ASSERT_EQ(parsed->cases.size(), 2u);
  EXPECT_EQ(parsed->cases[0].suite, "a");
  EXPECT_EQ(parsed->cases[0].seconds, 0);
  EXPECT_EQ(parsed->cases[1].suite, "b");
  ASSERT_EQ(parsed->notes.size(), 1u);
  EXPECT_NE(parsed->notes[0].find("'abc'"), std::string::npos);
}

TEST(JunitTest, MalformedXmlNamesTheFile) {
  auto parsed = parse_junit_file(k_corpus / "truncated.xml");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::invalid_input);
  EXPECT_NE(parsed.error().to_string().find("truncated.xml"), std::string::npos);

  auto other = parse_junit("<html><body/></html>", "page.xml");
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().to_string().find("page.xml: not JUnit XML"), std::string::npos);

  auto missing = parse_junit_file(k_corpus / "missing.xml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::io_error);
}

TEST(JunitTest, LongOutputIsCutAtACharacterBoundary) {
  std::string text = std::string(10, 'a') + "\xc3\xa9" + std::string(10, 'b');
  auto cut = truncate_text(text, 11);  // would split é
  EXPECT_EQ(cut.substr(0, 10), std::string(10, 'a'));
  EXPECT_NE(cut.find("12 bytes cut by kiln"), std::string::npos);
  EXPECT_EQ(truncate_text("short", 11), "short");

  std::string huge = "<testsuite><testcase name=\"t\"><system-out>" +
                     std::string(k_max_test_text * 2, 'x') + "</system-out></testcase></testsuite>";
  auto parsed = parse_junit(huge, "huge.xml");
  ASSERT_TRUE(parsed);
  EXPECT_LT(parsed->cases[0].output.size(), k_max_test_text + 64);
}

TEST(JunitTest, DefaultResultFiles) {
  EXPECT_TRUE(is_default_result_file("junit.xml"));
  EXPECT_TRUE(is_default_result_file("build/junit-unit.xml"));
  EXPECT_TRUE(is_default_result_file("target/surefire-reports/TEST-com.acme.FooTest.xml"));
  EXPECT_TRUE(is_default_result_file("test-results/unit/results.xml"));
  EXPECT_TRUE(is_default_result_file("out/test-results/x.xml"));
  EXPECT_FALSE(is_default_result_file("pom.xml"));
  EXPECT_FALSE(is_default_result_file("junit.json"));
  EXPECT_FALSE(is_default_result_file("my-test-results/x.xml"));
}

}  // namespace
}  // namespace kiln::report
