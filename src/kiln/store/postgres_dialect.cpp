#include "kiln/store/postgres_dialect.h"

#include <array>
#include <cctype>
#include <utility>

namespace kiln::store::pg {
namespace {

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Longest first, so that the primary key's three words are replaced before INTEGER alone.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> k_words = {{
    {"INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY"},
    {"INTEGER", "BIGINT"},
    {"REAL", "DOUBLE PRECISION"},
}};

// The length of the UTF-8 sequence at the start of `text`, 0 when it is not valid.
std::size_t utf8_length(std::string_view text) {
  auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead == 0) return 0;
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // beyond U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string to_postgres(std::string_view sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  std::size_t i = 0;
  while (i < sql.size()) {
    const char c = sql[i];
    if (c == '\'') {  // a quoted string, '' inside it included
      auto end = sql.find('\'', i + 1);
      while (end != std::string_view::npos && end + 1 < sql.size() && sql[end + 1] == '\'')
        end = sql.find('\'', end + 2);
      end = end == std::string_view::npos ? sql.size() : end + 1;
      out.append(sql.substr(i, end - i));
      i = end;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {  // a comment
      auto end = sql.find('\n', i);
      end = end == std::string_view::npos ? sql.size() : end;
      out.append(sql.substr(i, end - i));
      i = end;
    } else if (c == '?') {
      out += '$';
      ++i;
    } else if (is_word_char(c) && (i == 0 || !is_word_char(sql[i - 1]))) {
      bool replaced = false;
      for (const auto& [from, to] : k_words) {
        const auto end = i + from.size();
        if (sql.substr(i, from.size()) == from && (end == sql.size() || !is_word_char(sql[end]))) {
          out.append(to);
          i = end;
          replaced = true;
          break;
        }
      }
      if (!replaced) {
        auto end = i;
        while (end < sql.size() && is_word_char(sql[end])) ++end;
        out.append(sql.substr(i, end - i));
        i = end;
      }
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string to_postgres_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto length = utf8_length(text);
    if (length == 0) {
      out.append("\xEF\xBF\xBD");
      text.remove_prefix(1);
    } else {
      out.append(text.substr(0, length));
      text.remove_prefix(length);
    }
  }
  return out;
}

}  // namespace kiln::store::pg
