// The small text helpers of core/text.h.

#include "kiln/core/text.h"

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

TEST(Text, TrimRemovesCLocaleSpaceAtBothEnds) {
  EXPECT_EQ(trim("  a b \t\r\n"), "a b");
  EXPECT_EQ(trim("\v\fx\f"), "x");
  EXPECT_EQ(trim(" \t\n"), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("x"), "x");
}

TEST(Text, Base64AsRfc4648SaysWithAndWithoutPadding) {
  // RFC 4648 section 10's test vectors.
  const char* vectors[][2] = {{"", ""},
                              {"f", "Zg=="},
                              {"fo", "Zm8="},
                              {"foo", "Zm9v"},
                              {"foob", "Zm9vYg=="},
                              {"fooba", "Zm9vYmE="},
                              {"foobar", "Zm9vYmFy"}};
  for (const auto& [in, out] : vectors) {
    EXPECT_EQ(base64(in), out) << in;
    std::string unpadded = out;
    while (!unpadded.empty() && unpadded.back() == '=') unpadded.pop_back();
    EXPECT_EQ(base64(in, true, false), unpadded) << in;
  }
  // The URL alphabet replaces + and / (bytes fb ff bf).
  EXPECT_EQ(base64("\xfb\xff\xbf"), "+/+/");
  EXPECT_EQ(base64("\xfb\xff\xbf", true), "-_-_");
}

}  // namespace
}  // namespace kiln::core
