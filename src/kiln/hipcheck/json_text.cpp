#include "kiln/hipcheck/json_text.h"

#include <array>
#include <charconv>
#include <cstring>

namespace kiln::hipcheck {

namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8

// What a byte needs when it is written inside a JSON string: 0 kept as it is, 1 an escape,
// 2 the start of a multi-byte UTF-8 sequence (or a byte that cannot be one).
constexpr std::array<std::uint8_t, 256> k_class = [] {
  std::array<std::uint8_t, 256> c{};
  for (int b = 0; b < 0x20; ++b) c[b] = 1;
  c['"'] = 1;
  c['\\'] = 1;
  for (int b = 0x80; b < 0x100; ++b) c[b] = 2;
  return c;
}();

void append_escape(std::string& out, unsigned char c) {
  switch (c) {
    case '"':
      out += "\\\"";
      return;
    case '\\':
      out += "\\\\";
      return;
    case '\b':
      out += "\\b";
      return;
    case '\t':
      out += "\\t";
      return;
    case '\n':
      out += "\\n";
      return;
    case '\f':
      out += "\\f";
      return;
    case '\r':
      out += "\\r";
      return;
    default: {
      constexpr std::string_view k_hex = "0123456789abcdef";
      char u[6] = {'\\', 'u', '0', '0', k_hex[c >> 4], k_hex[c & 0xf]};
      out.append(u, sizeof u);
    }
  }
}

// The length of the well-formed UTF-8 sequence at the start of `s` (s[0] >= 0x80), or, when
// there is none, minus the length of its ill-formed part: the bytes of the longest start of a
// sequence (at least 1), which one U+FFFD replaces (Unicode's table 3-7 of well-formed
// sequences: no overlong forms, no surrogates, nothing above U+10FFFF).
int utf8_sequence(std::string_view s) {
  auto b0 = static_cast<unsigned char>(s[0]);
  int length;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return -1;  // a continuation byte, C0, C1 or F5-FF: starts nothing
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<std::size_t>(i) >= s.size()) return -i;
    auto b = static_cast<unsigned char>(s[i]);
    if (b < low || b > high) return -i;
    low = 0x80;
    high = 0xBF;
  }
  return length;
}

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out.reserve(out.size() + text.size() + 2);
  out.push_back('"');
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t run = i;
    while (run < text.size() && k_class[static_cast<unsigned char>(text[run])] == 0) ++run;
    out.append(text.data() + i, run - i);
    i = run;
    if (i == text.size()) break;
    auto c = static_cast<unsigned char>(text[i]);
    if (k_class[c] == 1) {
      append_escape(out, c);
      ++i;
      continue;
    }
    int n = utf8_sequence(text.substr(i));
    if (n > 0) {
      out.append(text.data() + i, static_cast<std::size_t>(n));
      i += static_cast<std::size_t>(n);
    } else {
      out += k_replacement;
      i += static_cast<std::size_t>(-n);
    }
  }
  out.push_back('"');
}

void append_decimal(std::string& out, std::uint64_t value) {
  char digits[20];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, static_cast<std::size_t>(end - digits));
}

void append_decimal(std::string& out, std::int64_t value) {
  char digits[20];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, static_cast<std::size_t>(end - digits));
}

void append_hex16(std::string& out, std::uint64_t value) {
  constexpr std::string_view k_hex = "0123456789abcdef";
  char digits[16];
  for (int i = 15; i >= 0; --i) {
    digits[i] = k_hex[value & 0xf];
    value >>= 4;
  }
  out.append(digits, sizeof digits);
}

}  // namespace kiln::hipcheck
