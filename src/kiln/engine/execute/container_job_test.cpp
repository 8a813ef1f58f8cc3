#include "kiln/engine/execute/container_job.h"

#include <gtest/gtest.h>

namespace kiln::engine {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, GoStyleDurationsAsTheEnginesTakeThem) {
  EXPECT_EQ(parse_duration("1s"), milliseconds(1000));
  EXPECT_EQ(parse_duration("500ms"), milliseconds(500));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90'000));
  EXPECT_EQ(parse_duration("2h"), milliseconds(7'200'000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_FALSE(parse_duration(""));
  EXPECT_FALSE(parse_duration("10"));  // the engines want a unit
  EXPECT_FALSE(parse_duration("5x"));
  EXPECT_FALSE(parse_duration("s"));
  EXPECT_FALSE(parse_duration("99999999999999999999h"));
}

}  // namespace
}  // namespace kiln::engine
