#include "kiln/exec/masker.h"

#include <thread>

#include <gtest/gtest.h>

namespace kiln::exec {
namespace {

TEST(Masker, ReplacesEveryOccurrence) {
  Masker m;
  m.add("hunter2");
  EXPECT_EQ(m.mask("pw=hunter2 again hunter2!"), "pw=*** again ***!");
  EXPECT_EQ(m.mask("nothing here"), "nothing here");
}

TEST(Masker, LongestFirstAndOverlapsBecomeOneMask) {
  Masker m;
  m.add("abc");
  m.add("abcdef");
  m.add("defgh");
  // "abcdef" and "defgh" overlap: the union is masked as one range, nothing leaks.
  EXPECT_EQ(m.mask("xabcdefghy"), "x***y");
  EXPECT_EQ(m.mask("abc abcdef"), "*** ***");
}

TEST(Masker, MultiLineSecretMasksEachLine) {
  Masker m;
  m.add("-----BEGIN KEY-----\r\nMIIEsecret\n-----END KEY-----");
  EXPECT_EQ(m.size(), 4u);  // whole value + 3 lines
  EXPECT_EQ(m.mask("line: MIIEsecret"), "line: ***");
  EXPECT_EQ(m.mask("-----BEGIN KEY-----"), "***");
  EXPECT_EQ(m.mask("-----BEGIN KEY-----\r\nMIIEsecret\n-----END KEY-----"), "***");
}

TEST(Masker, IgnoresEmptyAndBlankValues) {
  Masker m;
  m.add("");
  m.add("   ");
  m.add("\n\n");
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.mask("a b c"), "a b c");
  m.add("x");  // any non-blank value is masked, however short
  EXPECT_EQ(m.mask("axb"), "a***b");
  Masker strict(4);
  strict.add("abc");
  strict.add("abcd");
  EXPECT_EQ(strict.mask("abc abcd"), "abc ***");
}

TEST(Masker, DuplicatesAreStoredOnce) {
  Masker m;
  m.add("tok");
  m.add("tok");
  EXPECT_EQ(m.size(), 1u);
}

TEST(Masker, HoldBackCoversSecretsSplitAcrossPieces) {
  Masker m;
  m.add("SECRET");
  EXPECT_EQ(m.hold_back("data SEC"), 3u);
  EXPECT_EQ(m.hold_back("data S"), 1u);
  EXPECT_EQ(m.hold_back("data SECRET"), 0u);  // complete: mask() handles it
  EXPECT_EQ(m.hold_back("data x"), 0u);
  EXPECT_EQ(m.hold_back("SECRE"), 5u);
}

TEST(Masker, ConcurrentAddAndMask) {
  Masker m;
  std::thread writer([&] {
    for (int i = 0; i < 500; ++i) m.add("secret" + std::to_string(i));
  });
  for (int i = 0; i < 500; ++i) {
    auto out = m.mask("xx secret499 yy");
    EXPECT_TRUE(out == "xx secret499 yy" || out == "xx *** yy" || out == "xx ***9 yy" ||
                out == "xx ***99 yy")
        << out;
  }
  writer.join();
  EXPECT_EQ(m.mask("xx secret499 yy"), "xx *** yy");
}

}  // namespace
}  // namespace kiln::exec
