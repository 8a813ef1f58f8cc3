// core/time.h: the one duration reader (kiln's spelling and the container engines') and printer.

#include "kiln/core/time.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

using std::chrono::milliseconds;

TEST(Duration, KilnSpellingTakesOneOrSeveralUnitsUpToDays) {
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("10s"), milliseconds(10'000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("2h"), milliseconds(7'200'000));
  EXPECT_EQ(parse_duration("7d"), milliseconds(604'800'000));
}

TEST(Duration, KilnSpellingRefusesWhatItDoesNotKnow) {
  for (const char* text : {"", "10", "5x", "s", "1.2.3s", "-5s", "1m30", " 5s", "5s ", "1us"}) {
    auto parsed = parse_duration(text);
    ASSERT_FALSE(parsed) << text;
    EXPECT_EQ(parsed.error().message,
              fmt::format("'{}' is not a duration (e.g. 500ms, 10s, 2m, 7d)", text));
  }
}

TEST(Duration, TooLongIsRefusedNotWrapped) {
  auto parsed = parse_duration("99999999999999999999h");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().message, "'99999999999999999999h' is too long a duration");
  EXPECT_FALSE(parse_duration("400000d"));
  EXPECT_TRUE(parse_duration("10000d"));
}

TEST(Duration, EngineSpellingIsGos) {
  const auto engine = DurationSyntax::engine;
  EXPECT_EQ(parse_duration("0", engine), milliseconds(0));
  EXPECT_EQ(parse_duration("1m30s", engine), milliseconds(90'000));
  EXPECT_EQ(parse_duration("1500us", engine), milliseconds(1));
  EXPECT_EQ(parse_duration("2000000ns", engine), milliseconds(2));
  EXPECT_EQ(parse_duration("3\xc2\xb5s", engine), milliseconds(0));
  EXPECT_FALSE(parse_duration("1d", engine));  // Go has no days: podman would refuse it
  EXPECT_FALSE(parse_duration("10", engine));
  EXPECT_EQ(parse_duration("x", engine).error().message,
            "'x' is not a duration (e.g. 500ms, 30s, 1m30s)");
  EXPECT_FALSE(parse_duration("0", DurationSyntax::kiln));
}

TEST(Duration, PrintedInTheLargestUnitsThatMatter) {
  EXPECT_EQ(format_duration(milliseconds(-1)), "-");
  EXPECT_EQ(format_duration(milliseconds(0)), "0ms");
  EXPECT_EQ(format_duration(milliseconds(250)), "250ms");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(format_duration(milliseconds(184'000)), "3m04s");
  EXPECT_EQ(format_duration(milliseconds(3'720'000)), "1h02m");
}

}  // namespace
}  // namespace kiln::core
