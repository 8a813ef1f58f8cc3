// Tokens of GitHub's expression language, and the number syntax shared by literals and by the
// string-to-number coercion.
#include <charconv>
#include <cmath>
#include <limits>

#include "kiln/workflow/expr/syntax.h"

namespace kiln::expr {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '-'; }
int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

// Length of the decimal number at the start of `text` ([-]digits[.digits][e[+-]digits], or
// [-].digits...), 0 when there is none. Does not look at what follows.
std::size_t scan_decimal(std::string_view text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  std::size_t digits = 0;
  while (i < text.size() && is_digit(text[i])) ++i, ++digits;
  if (i < text.size() && text[i] == '.') {
    std::size_t after = i + 1;
    std::size_t fraction = 0;
    while (after < text.size() && is_digit(text[after])) ++after, ++fraction;
    if (digits + fraction == 0) return 0;
    i = after;
    digits += fraction;
  }
  if (digits == 0) return 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    std::size_t after = i + 1;
    if (after < text.size() && (text[after] == '+' || text[after] == '-')) ++after;
    std::size_t exponent = 0;
    while (after < text.size() && is_digit(text[after])) ++after, ++exponent;
    if (exponent > 0) i = after;
  }
  return i;
}

// Converts a text that scan_decimal accepted in full.
double decimal_value(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) {
    // Too large or too small for a double: decide by the exponent's sign.
    auto e = text.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
    value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc{} || end != text.data() + text.size()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return negative ? -value : value;
}

// Length of a hex (0x...) or octal (0o...) literal at the start of `text`, 0 when there is
// none.
std::size_t scan_hex(std::string_view text) {
  if (text.size() < 3 || text[0] != '0') return 0;
  bool hex = text[1] == 'x' || text[1] == 'X';
  bool octal = text[1] == 'o' || text[1] == 'O';
  if (!hex && !octal) return 0;
  std::size_t i = 2;
  while (i < text.size() && (hex ? is_hex(text[i]) : (text[i] >= '0' && text[i] <= '7'))) ++i;
  return i > 2 ? i : 0;
}

double hex_number(std::string_view text) {
  double base = text[1] == 'o' || text[1] == 'O' ? 8 : 16;
  double value = 0;
  for (char c : text.substr(2)) value = value * base + hex_value(c);
  return value;
}

// A number as a JSON value: integral values that a double holds exactly become integers, so
// that they print and serialise as GitHub prints them (3, not 3.0).
Value number_value(double number) {
  constexpr double k_exact = 9007199254740992.0;  // 2^53
  if (std::isfinite(number) && std::trunc(number) == number && std::fabs(number) < k_exact &&
      !(number == 0 && std::signbit(number)))
    return Value(static_cast<std::int64_t>(number));
  return Value(number);
}

// A token that ends an operand: after it, `.` is a property dereference, not a number.
bool ends_operand(const std::vector<Token>& tokens) {
  if (tokens.empty()) return false;
  switch (tokens.back().kind) {
    case TokenKind::number:
    case TokenKind::string:
    case TokenKind::identifier:
    case TokenKind::keyword:
    case TokenKind::rparen:
    case TokenKind::rbracket:
    case TokenKind::star:
      return true;
    default:
      return false;
  }
}

}  // namespace

bool parse_number(std::string_view text, double& out) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.empty()) return false;
  if (text == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  std::string_view unsigned_text = text;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    unsigned_text.remove_prefix(1);
  }
  if (unsigned_text == "Infinity") {
    out = negative ? -std::numeric_limits<double>::infinity()
                   : std::numeric_limits<double>::infinity();
    return true;
  }
  if (std::size_t n = scan_hex(text); n > 0 && n == text.size()) {
    out = hex_number(text);
    return true;
  }
  if (std::size_t n = scan_decimal(text); n > 0 && n == text.size()) {
    out = decimal_value(text);
    return !std::isnan(out);
  }
  return false;
}

bool lex(std::string_view source, std::vector<Token>& tokens, LexError& error) {
  tokens.clear();
  std::size_t i = 0;
  auto add = [&](TokenKind kind, std::size_t start, std::size_t length) -> Token& {
    Token& token = tokens.emplace_back();
    token.kind = kind;
    token.offset = start;
    token.length = length;
    return token;
  };
  auto fail_here = [&](std::size_t offset, std::string message) {
    error.offset = offset;
    error.message = std::move(message);
    return false;
  };
  while (i < source.size()) {
    char c = source[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    std::size_t start = i;
    char next = i + 1 < source.size() ? source[i + 1] : '\0';
    if (c == '\'') {
      std::string text;
      ++i;
      bool closed = false;
      while (i < source.size()) {
        if (source[i] == '\'') {
          if (i + 1 < source.size() && source[i + 1] == '\'') {
            text += '\'';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        text += source[i++];
      }
      if (!closed) return fail_here(start, "unterminated string literal");
      add(TokenKind::string, start, i - start).text = std::move(text);
      continue;
    }
    if (c == '"') return fail_here(start, "strings must use single quotes, not '\"'");
    // After `.`, a property name may start with a digit (an output named `1st`).
    bool after_dot = !tokens.empty() && tokens.back().kind == TokenKind::dot;
    bool dot_number = c == '.' && is_digit(next) && !ends_operand(tokens);
    bool minus_number =
        c == '-' &&
        (is_digit(next) || (next == '.' && i + 2 < source.size() && is_digit(source[i + 2])));
    if (c == '-' && source.substr(i + 1, 8) == "Infinity") {
      i += 9;
      if (i < source.size() && is_name_char(source[i]))
        return fail_here(start,
                         fmt::format("invalid number '{}'", source.substr(start, i + 1 - start)));
      add(TokenKind::number, start, 9).value = -std::numeric_limits<double>::infinity();
      continue;
    }
    if ((is_digit(c) && !after_dot) || dot_number || minus_number) {
      std::size_t length = scan_hex(source.substr(i));
      double number = 0;
      if (length > 0) {
        number = hex_number(source.substr(i, length));
      } else {
        length = scan_decimal(source.substr(i));
        number = decimal_value(source.substr(i, length));
      }
      i += length;
      if (i < source.size() && (is_name_char(source[i]) || source[i] == '.')) {
        std::size_t end = i;
        while (end < source.size() && (is_name_char(source[end]) || source[end] == '.')) ++end;
        return fail_here(start,
                         fmt::format("invalid number '{}'", source.substr(start, end - start)));
      }
      add(TokenKind::number, start, length).value = number_value(number);
      continue;
    }
    if (is_alpha(c) || c == '_' || (after_dot && is_digit(c))) {
      while (i < source.size() && is_name_char(source[i])) ++i;
      std::string_view name = source.substr(start, i - start);
      Token& token = add(TokenKind::identifier, start, i - start);
      token.text = std::string(name);
      if (name == "true" || name == "false") {
        token.kind = TokenKind::keyword;
        token.value = name == "true";
      } else if (name == "null") {
        token.kind = TokenKind::keyword;
        token.value = nullptr;
      } else if (name == "NaN") {
        token.kind = TokenKind::keyword;
        token.value = std::numeric_limits<double>::quiet_NaN();
      } else if (name == "Infinity") {
        token.kind = TokenKind::keyword;
        token.value = std::numeric_limits<double>::infinity();
      }
      continue;
    }
    auto two = [&](char second, TokenKind kind) {
      if (next != second) return false;
      add(kind, start, 2);
      i += 2;
      return true;
    };
    switch (c) {
      case '(':
        add(TokenKind::lparen, start, 1);
        ++i;
        continue;
      case ')':
        add(TokenKind::rparen, start, 1);
        ++i;
        continue;
      case '[':
        add(TokenKind::lbracket, start, 1);
        ++i;
        continue;
      case ']':
        add(TokenKind::rbracket, start, 1);
        ++i;
        continue;
      case '.':
        add(TokenKind::dot, start, 1);
        ++i;
        continue;
      case ',':
        add(TokenKind::comma, start, 1);
        ++i;
        continue;
      case '*':
        add(TokenKind::star, start, 1);
        ++i;
        continue;
      case '!':
        if (!two('=', TokenKind::not_equal)) add(TokenKind::bang, start, 1), ++i;
        continue;
      case '<':
        if (!two('=', TokenKind::less_equal)) add(TokenKind::less, start, 1), ++i;
        continue;
      case '>':
        if (!two('=', TokenKind::greater_equal)) add(TokenKind::greater, start, 1), ++i;
        continue;
      case '=':
        if (two('=', TokenKind::equal)) continue;
        return fail_here(start, "unexpected '=' (did you mean '=='?)");
      case '&':
        if (two('&', TokenKind::and_and)) continue;
        return fail_here(start, "unexpected '&' (did you mean '&&'?)");
      case '|':
        if (two('|', TokenKind::or_or)) continue;
        return fail_here(start, "unexpected '|' (did you mean '||'?)");
      default:
        break;
    }
    auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f)
      return fail_here(start, fmt::format("unexpected character '{}'", c));
    return fail_here(start, fmt::format("unexpected character (byte 0x{:02x})", byte));
  }
  add(TokenKind::end, source.size(), 0);
  return true;
}

std::unexpected<Error> expression_error(const SourceLocation& where, std::string_view source,
                                        std::size_t offset, std::string_view message) {
  std::string_view shown = source;
  while (!shown.empty() && is_space(shown.front())) shown.remove_prefix(1);
  while (!shown.empty() && is_space(shown.back())) shown.remove_suffix(1);
  constexpr std::size_t k_shown = 200;  // a long expression is cut in the message
  SourceLocation at = advance(where, source, offset);
  if (shown.empty()) return fail_at(std::move(at), "{}", message);
  if (shown.size() > k_shown)
    return fail_at(std::move(at), "{} in expression '{}...'", message, shown.substr(0, k_shown));
  return fail_at(std::move(at), "{} in expression '{}'", message, shown);
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

SourceLocation advance(const SourceLocation& where, std::string_view source, std::size_t offset) {
  SourceLocation out = where;
  offset = std::min(offset, source.size());
  std::string_view before = source.substr(0, offset);
  auto newline = before.rfind('\n');
  if (newline == std::string_view::npos) {
    out.column = (where.column > 0 ? where.column : 1) + static_cast<int>(offset);
  } else {
    int lines = 0;
    for (char c : before) lines += c == '\n';
    if (out.line > 0) out.line += lines;
    out.column = static_cast<int>(offset - newline);
  }
  return out;
}

}  // namespace kiln::expr
