#include "kiln/core/dotenv.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(Dotenv, ReadsAssignmentsCommentsExportAndQuotes) {
  auto values = parse_dotenv(
      "# a comment\n\nA=1\nexport B='lit\\n eral'\n  C=\"two\\nlines \\\"q\\\"\"\r\nD=\nA=2\n",
      "s.env");
  ASSERT_TRUE(values) << values.error().to_string();
  EXPECT_EQ(values->at("A"), "2");  // the later line wins
  EXPECT_EQ(values->at("B"), "lit\\n eral");
  EXPECT_EQ(values->at("C"), "two\nlines \"q\"");
  EXPECT_EQ(values->at("D"), "");
}

TEST(Dotenv, BadLinesAreLocated) {
  auto no_equals = parse_dotenv("A=1\n  just words\n", "s.env");
  ASSERT_FALSE(no_equals);
  EXPECT_EQ(no_equals.error().to_string(), "s.env:2:3: error: expected KEY=VALUE");
  auto bad_name = parse_dotenv("MY KEY=1\n", "s.env");
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().where.line, 1);
  EXPECT_NE(bad_name.error().message.find("'MY KEY' is not a name"), std::string::npos);
  auto open_quote = parse_dotenv("A=ok\nTOKEN=\"abc\n", "s.env");
  ASSERT_FALSE(open_quote);
  EXPECT_EQ(open_quote.error().to_string(),
            "s.env:2:7: error: the value's \" is not closed at the end of the line");
  EXPECT_FALSE(parse_dotenv("=value\n", "s.env"));
  EXPECT_FALSE(parse_dotenv("1A=value\n", "s.env"));
  EXPECT_FALSE(parse_dotenv("A='\n", "s.env"));
}

}  // namespace
}  // namespace kiln::core
