#include "kiln/server/query.h"

#include <gtest/gtest.h>

namespace kiln::server {
namespace {

TEST(Query, IdsThatDoNotFitAreNoId) {
  EXPECT_EQ(parse_id("42"), 42);
  EXPECT_EQ(parse_id("0"), 0);
  EXPECT_EQ(parse_id("99999999999999999999"), std::nullopt);  // was std::stoll's out_of_range
  EXPECT_EQ(parse_id(""), std::nullopt);
  EXPECT_EQ(parse_id("-1"), std::nullopt);
}

TEST(Query, IntegersInRangeOrANamedError) {
  std::int64_t limit = 50, after = 7;
  EXPECT_TRUE(read_integers({{"limit", "10"}}, {{"limit", &limit, 0, 100}, {"after", &after}}));
  EXPECT_EQ(limit, 10);
  EXPECT_EQ(after, 7);  // absent: the default stays

  auto not_number = read_integers({{"limit", "ten"}}, {{"limit", &limit, 0, 100}});
  ASSERT_FALSE(not_number);
  EXPECT_EQ(not_number.error().code, ErrorCode::invalid_input);
  EXPECT_EQ(not_number.error().message, "query parameter 'limit' must be an integer, got 'ten'");
  auto too_big = read_integers({{"limit", "99999999999"}}, {{"limit", &limit, 0, 100}});
  ASSERT_FALSE(too_big);
  EXPECT_EQ(too_big.error().message,
            "query parameter 'limit' must be in [0, 100], got 99999999999");
  auto overflow = read_integers({{"after", "99999999999999999999"}}, {{"after", &after}});
  ASSERT_FALSE(overflow);
  EXPECT_NE(overflow.error().message.find("must be an integer"), std::string::npos);
  auto twice = read_integers({{"after", "1"}, {"after", "2"}}, {{"after", &after}});
  ASSERT_FALSE(twice);
  EXPECT_EQ(twice.error().message, "query parameter 'after' is given more than once");
  EXPECT_FALSE(read_integers({{"after", "-3"}}, {{"after", &after}}));
  EXPECT_FALSE(read_integers({{"after", ""}}, {{"after", &after}}));
  EXPECT_EQ(after, 7);
}

}  // namespace
}  // namespace kiln::server
