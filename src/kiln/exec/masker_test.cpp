#include "kiln/exec/masker.h"

#include <string>
#include <string_view>
#include <thread>
#include <vector>

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

// The base64 of `text` (RFC 4648, padded), to build the encoded texts a job would print.
std::string b64(std::string_view text) {
  static constexpr char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 3) {
    unsigned v = 0;
    for (std::size_t j = 0; j < 3; ++j)
      v = v << 8 | (i + j < text.size() ? static_cast<unsigned char>(text[i + j]) : 0u);
    const std::size_t chars = std::min<std::size_t>(4, text.size() - i + 1);
    for (std::size_t j = 0; j < 4; ++j) out += j < chars ? k[(v >> (18 - 6 * j)) & 63] : '=';
  }
  return out;
}

TEST(Masker, Base64AtEveryAlignmentLeavesNoSecretGroup) {
  const std::string secret = "s3cr3t-V4LUE-0123456789";
  Masker m;
  m.add(secret);
  for (const std::string prefix : {"", "u", "us", "user:", "user:p"}) {
    for (const std::string suffix : {"", "x", "@host:443"}) {
      const std::string encoded = b64(prefix + secret + suffix);
      const std::string masked = m.mask("auth " + encoded + " end");
      // The 4-character groups that encode bytes of the secret only must all be gone.
      const std::size_t first = (prefix.size() + 2) / 3, end = (prefix.size() + secret.size()) / 3;
      ASSERT_LT(first, end);
      for (std::size_t group = first; group < end; ++group)
        EXPECT_EQ(masked.find(encoded.substr(4 * group, 4)), std::string::npos)
            << prefix << "|" << suffix << ": group " << group << " in " << masked;
      EXPECT_NE(masked.find("***"), std::string::npos) << masked;
    }
  }
  EXPECT_EQ(m.mask(b64(secret)), "***");
  EXPECT_EQ(m.size(), 1u);
}

TEST(Masker, UrlSafeBase64JsonAndPercentEncodings) {
  Masker m;
  m.add("p@ss w/rd+\"quoted\"?&=~");
  EXPECT_EQ(m.mask("{\"password\":\"p@ss w/rd+\\\"quoted\\\"?&=~\"}"), "{\"password\":\"***\"}");
  EXPECT_EQ(m.mask("https://h/?pw=p%40ss%20w%2Frd%2B%22quoted%22%3F%26%3D~&x=1"),
            "https://h/?pw=***&x=1");
  EXPECT_EQ(m.mask("pw=p%40ss+w%2Frd%2B%22quoted%22%3F%26%3D~"), "pw=***");
  EXPECT_EQ(m.mask("pw=p%40ss%20w%2frd%2b%22quoted%22%3f%26%3d~"), "pw=***");
  Masker binary;
  binary.add("\xfb\xff\xfe-token-\xfb\xff");  // base64 with '+' and '/' in it
  std::string standard = b64("\xfb\xff\xfe-token-\xfb\xff");
  std::string url_safe = standard;
  for (auto& c : url_safe) c = c == '+' ? '-' : c == '/' ? '_' : c;
  ASSERT_NE(standard, url_safe);
  EXPECT_EQ(binary.mask(standard), "***");
  EXPECT_EQ(binary.mask(url_safe), "***");
}

TEST(Masker, JsonEscapesOfAMultiLineSecret) {
  Masker m;
  m.add("line-one-AAA\nline-two\tBBB");
  EXPECT_EQ(m.mask("{\"k\": \"line-one-AAA\\nline-two\\tBBB\"}"), "{\"k\": \"***\"}");
}

TEST(Masker, ShortEncodingsAreLeftOut) {
  Masker m;
  m.add("abc");  // base64 "YWJj": 4 characters, under k_min_encoded
  EXPECT_EQ(m.mask("YWJj abc"), "YWJj ***");
}

TEST(Masker, DuplicatesAreStoredOnce) {
  Masker m;
  m.add("tok");
  m.add("tok");
  EXPECT_EQ(m.size(), 1u);
}

// The pieces of one line, each through mask_piece, joined.
std::string mask_in_pieces(const Masker& m, const std::vector<std::string_view>& pieces) {
  Masker::Line line;
  std::string shown;
  for (std::size_t i = 0; i < pieces.size(); ++i)
    shown += m.mask_piece(line, pieces[i], i + 1 == pieces.size());
  return shown;
}

TEST(Masker, PiecesHoldBackWhatCouldBeginASecret) {
  Masker m;
  m.add("SECRET");
  Masker::Line line;
  EXPECT_EQ(m.mask_piece(line, "data SEC", false), "data ");
  EXPECT_EQ(m.mask_piece(line, "RET and S", false), "*** and ");
  EXPECT_EQ(m.mask_piece(line, "x", true), "Sx");
  EXPECT_EQ(m.mask_piece(line, "again", true), "again");  // the line was reset
}

// The fuzzer's finding: a secret of repeated bytes inside a longer run of them. The cut went
// through the run and each side was masked alone: neither held a whole secret, both showed.
TEST(Masker, PiecesOfARunOfARepeatedByteSecretShowNothingOfIt) {
  Masker m;
  m.add("zzzz");
  EXPECT_EQ(mask_in_pieces(m, {"xzzzzzz", "zzy"}), "x***y");
  EXPECT_EQ(mask_in_pieces(m, {"xzzzzzz", "", "z", "zy"}), "x***y");
  EXPECT_EQ(mask_in_pieces(m, {"zzzzzzzzzz", "zzzz", "zz"}), "***");
}

// Whatever the secrets and wherever the cuts, the pieces show what mask() shows of the whole.
TEST(Masker, PiecesJoinedAreTheMaskOfTheWholeLine) {
  Masker m;
  m.add("aaa");
  m.add("abab");
  m.add("ba");
  m.add("q");
  const std::string_view texts[] = {"aaaaabababaqbaaxabaaa", "xxbabxaaqaaab", "abaabaaabaaaab"};
  for (auto text : texts) {
    const std::string whole = m.mask(text);
    for (std::size_t a = 0; a <= text.size(); ++a) {
      for (std::size_t b = a; b <= text.size(); ++b) {
        EXPECT_EQ(mask_in_pieces(m, {text.substr(0, a), text.substr(a, b - a), text.substr(b)}),
                  whole)
            << text << " cut at " << a << " and " << b;
      }
    }
  }
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
