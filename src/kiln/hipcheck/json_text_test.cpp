#include "kiln/hipcheck/json_text.h"

#include <cstdint>
#include <limits>
#include <random>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

namespace kiln::hipcheck {
namespace {

std::string as_json(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

// What the reports wrote before they were written by hand: nlohmann::json's dump.
std::string reference(std::string_view text) {
  return nlohmann::ordered_json(std::string(text))
      .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

TEST(JsonString, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(as_json("plain/path.cu"), "\"plain/path.cu\"");
  EXPECT_EQ(as_json("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(as_json("\b\t\n\f\r"), R"("\b\t\n\f\r")");
  EXPECT_EQ(as_json(std::string_view("\0\x01\x0b\x1f", 4)), R"("\u0000\u0001\u000b\u001f")");
  EXPECT_EQ(as_json("\x7f"), "\"\x7f\"");  // DEL is not a control character to JSON
  EXPECT_EQ(as_json(""), "\"\"");
}

TEST(JsonString, KeepsUtf8AndReplacesEachIllFormedPartOnce) {
  EXPECT_EQ(as_json("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(as_json("a\xFF"
                    "b"),
            "\"a" + fffd + "b\"");                            // a byte that starts nothing
  EXPECT_EQ(as_json("\x80\x80"), "\"" + fffd + fffd + "\"");  // lone continuation bytes
  // A sequence cut short is one replacement, and the byte that cut it is read again.
  EXPECT_EQ(as_json("\xE2\x82"
                    "x"),
            "\"" + fffd + "x\"");
  EXPECT_EQ(as_json("\xE2\x82"), "\"" + fffd + "\"");  // at the end of the text
  EXPECT_EQ(as_json("\xC3\xC3\xA9"), "\"" + fffd + "\xC3\xA9\"");
  // Overlong forms, surrogates and code points above U+10FFFF are not UTF-8.
  EXPECT_EQ(as_json("\xC0\xAF"), "\"" + fffd + fffd + "\"");
  EXPECT_EQ(as_json("\xE0\x80\xAF"), "\"" + fffd + fffd + fffd + "\"");
  EXPECT_EQ(as_json("\xED\xA0\x80"), "\"" + fffd + fffd + fffd + "\"");
  EXPECT_EQ(as_json("\xF4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");
  EXPECT_EQ(as_json("\xF4\x8F\xBF\xBF"), "\"\xF4\x8F\xBF\xBF\"");  // U+10FFFF is one
}

// Random byte strings, drawn mostly from the bytes where UTF-8 has its edges, are written as
// nlohmann::json wrote them: the output of a report is byte for byte what it was.
TEST(JsonString, MatchesNlohmannOnRandomBytes) {
  constexpr unsigned char k_edges[] = {0x00, 0x01, 0x08, 0x09, 0x0a, 0x0c, 0x0d, 0x1f, 0x20,
                                       '"',  '\\', '/',  'a',  0x7f, 0x80, 0x8f, 0x90, 0x9f,
                                       0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec,
                                       0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  std::mt19937 random(17);
  for (int round = 0; round < 20000; ++round) {
    std::string text(random() % 12, '\0');
    for (char& c : text)
      c = static_cast<char>(random() % 4 == 0 ? random() % 256
                                              : k_edges[random() % sizeof k_edges]);
    ASSERT_EQ(as_json(text), reference(text)) << "round " << round;
  }
}

TEST(JsonNumbers, DecimalAndHex) {
  std::string out;
  append_decimal(out, std::uint64_t{0});
  out += ' ';
  append_decimal(out, std::numeric_limits<std::uint64_t>::max());
  out += ' ';
  append_decimal(out, -42);
  out += ' ';
  append_decimal(out, std::numeric_limits<std::int64_t>::min());
  out += ' ';
  append_hex16(out, 0x00ab'cdef'0123'4567ull);
  EXPECT_EQ(out, "0 18446744073709551615 -42 -9223372036854775808 00abcdef01234567");
}

}  // namespace
}  // namespace kiln::hipcheck
