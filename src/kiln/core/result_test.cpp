#include "kiln/core/result.h"

#include <gtest/gtest.h>

namespace kiln {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return fail_at({"w.yml", 3, 7}, "expected a positive number, got {}", v);
  return v;
}

Result<int> doubled(int v) {
  KILN_TRY(int x, parse_positive(v));
  return 2 * x;
}

TEST(Result, PropagatesErrorsWithLocation) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().to_string(), "w.yml:3:7: error: expected a positive number, got -1");
  EXPECT_EQ(bad.error().exit_code(), 2);
}

TEST(Result, ErrorWithoutLocation) {
  Error e{ErrorCode::io_error, "disk full", {}};
  EXPECT_EQ(e.to_string(), "error: disk full");
  EXPECT_EQ(e.exit_code(), 3);
}

}  // namespace
}  // namespace kiln
