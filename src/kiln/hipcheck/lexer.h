#pragma once
// A C/C++/CUDA lexer made for counting, not compiling: it splits a source file into tokens and
// drops everything that is not code, so that nothing inside comments, string and character
// literals (raw strings included) or `#if 0` blocks is ever taken for a CUDA use.
//
// It never fails: any byte sequence lexes (an unterminated literal ends at its line's end, as
// in a compiler's skipped block), which the fuzz target fuzz/hipcheck_fuzz.cpp checks.

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln::hipcheck {

enum class TokenKind : std::uint8_t {
  identifier,
  number,
  punct,        // operators and punctuation; `<<<` and `>>>` are one token each
  string,       // "..." or R"(...)" with any prefix
  character,    // '...' with any prefix
  header_name,  // the <...> or "..." operand of #include
};

// Flags on a token.
inline constexpr std::uint8_t k_in_directive = 1;    // part of a preprocessor directive line
inline constexpr std::uint8_t k_directive_hash = 2;  // the `#` that starts a directive
inline constexpr std::uint8_t k_line_start = 4;      // the first token on its source line

struct Token {
  std::uint32_t offset = 0;
  std::uint32_t length = 0;
  std::uint32_t line = 0;        // 1-based
  std::uint32_t line_start = 0;  // offset of the first byte of that line
  TokenKind kind = TokenKind::punct;
  std::uint8_t flags = 0;

  // `source` must be the text the token came from (not checked: this is on the hot path).
  std::string_view text(std::string_view source) const {
    return std::string_view(source.data() + offset, length);
  }
  // Column, 1-based, in Unicode code points (what SARIF's "unicodeCodePoints" means).
  int column(std::string_view source) const;
};

struct LexStats {
  std::uint32_t lines = 0;       // physical lines in the file
  std::uint32_t code_lines = 0;  // lines with at least one token outside dead #if blocks
};

// Lexes `source` into `tokens` (cleared first; pass the same vector again to reuse its memory).
// Tokens in blocks that are dead by a constant condition (`#if 0`, the `#else` of `#if 1`,
// nested blocks inside them) are left out, as are those directive lines themselves.
LexStats lex(std::string_view source, std::vector<Token>& tokens);

}  // namespace kiln::hipcheck
