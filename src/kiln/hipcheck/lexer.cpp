#include "kiln/hipcheck/lexer.h"

#include <array>
#include <cstring>

namespace kiln::hipcheck {

int Token::column(std::string_view source) const {
  int column = 1;
  for (std::uint32_t i = line_start; i < offset && i < source.size(); ++i)
    if ((static_cast<unsigned char>(source[i]) & 0xC0) != 0x80) ++column;
  return column;
}

namespace {

// Identifier bytes: ASCII letters, digits, '_', '$', and every byte of a UTF-8 sequence.
constexpr std::array<bool, 256> make_ident_table() {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c)
    t[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c >= 0x80;
  return t;
}
constexpr std::array<bool, 256> k_ident = make_ident_table();

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident(char c) { return k_ident[static_cast<unsigned char>(c)]; }

// A constant #if condition: 0 (false), 1 (true) or unknown (-1).
int constant_condition(std::string_view source, const Token* begin, const Token* end) {
  while (end - begin >= 3 && begin->length == 1 && source[begin->offset] == '(' &&
         (end - 1)->length == 1 && source[(end - 1)->offset] == ')') {
    ++begin;
    --end;
  }
  if (end - begin != 1) return -1;
  std::string_view text = begin->text(source);
  if (begin->kind == TokenKind::identifier) {
    if (text == "false") return 0;
    if (text == "true") return 1;
    return -1;
  }
  if (begin->kind != TokenKind::number) return -1;
  std::size_t i = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) i = 2;
  bool any_digit = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'') continue;
    bool hex = i >= 2 && text[1] != '0' && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
    if (!is_digit(c) && !hex) break;
    any_digit = true;
    if (c != '0') return 1;
  }
  return any_digit ? 0 : -1;
}

class Lexer {
 public:
  Lexer(std::string_view source, std::vector<Token>& tokens)
      : s_(source.data()),
        n_(static_cast<std::uint32_t>(source.size())),
        source_(source),
        tokens_(tokens) {}

  LexStats run();

 private:
  struct Cond {
    bool parent_dead;
    enum State : std::uint8_t { unknown, pending, taken } state;
    bool dead;
  };

  bool dead() const { return dead_; }
  void update_dead() { dead_ = !conds_.empty() && conds_.back().dead; }

  void emit(TokenKind kind, std::uint32_t begin, std::uint32_t line, std::uint32_t line_start) {
    if (!in_directive_ && dead()) {
      line_has_token_ = true;
      return;
    }
    std::uint8_t flags = in_directive_ ? k_in_directive : 0;
    if (!line_has_token_) flags |= k_line_start;
    line_has_token_ = true;
    tokens_.push_back(Token{begin, pos_ - begin, line, line_start, kind, flags});
  }

  void newline() {
    ++line_;
    line_start_ = pos_ + 1;
  }

  // At '\\': a line splice ("\\\n" or "\\\r\n") is consumed and returns true.
  bool splice() {
    std::uint32_t p = pos_ + 1;
    if (p < n_ && s_[p] == '\r') ++p;
    if (p < n_ && s_[p] == '\n') {
      pos_ = p;
      newline();
      ++pos_;
      return true;
    }
    return false;
  }

  // Jumps from newline to newline (memchr); a backslash before the newline continues the
  // comment on the next line.
  void skip_line_comment() {
    while (pos_ < n_) {
      const void* nl = std::memchr(s_ + pos_, '\n', n_ - pos_);
      std::uint32_t end = nl ? static_cast<std::uint32_t>(static_cast<const char*>(nl) - s_) : n_;
      std::uint32_t before = end;
      if (before > pos_ && s_[before - 1] == '\r') --before;
      if (end == n_ || before == pos_ || s_[before - 1] != '\\') {
        pos_ = end;
        return;
      }
      // A splice: the comment goes on after this newline.
      pos_ = end;
      newline();
      ++pos_;
    }
  }

  void skip_block_comment() {
    pos_ += 2;
    while (pos_ < n_) {
      char c = s_[pos_];
      if (c == '\n') {
        newline();
      } else if (c == '*' && pos_ + 1 < n_ && s_[pos_ + 1] == '/') {
        pos_ += 2;
        return;
      }
      ++pos_;
    }
  }

  // A quoted literal from the opening quote at pos_; ends at the closing quote or before an
  // unescaped newline.
  void quoted(char quote) {
    ++pos_;
    while (pos_ < n_) {
      char c = s_[pos_];
      if (c == quote) {
        ++pos_;
        return;
      }
      if (c == '\n') return;
      if (c == '\\') {
        if (splice()) continue;
        ++pos_;
        if (pos_ < n_ && s_[pos_] == '\n') newline();
        if (pos_ < n_) ++pos_;
        continue;
      }
      ++pos_;
    }
  }

  // R"delim( ... )delim" from the opening quote at pos_. Returns false (consuming nothing) when
  // the delimiter is malformed, so the caller lexes an ordinary string instead.
  bool raw_string() {
    std::uint32_t p = pos_ + 1;
    std::uint32_t delim_begin = p;
    while (p < n_ && p - delim_begin <= 16 && s_[p] != '(') {
      char c = s_[p];
      if (c == ' ' || c == ')' || c == '\\' || c == '\t' || c == '\n' || c == '"') return false;
      ++p;
    }
    if (p >= n_ || s_[p] != '(') return false;
    std::string_view delim(s_ + delim_begin, p - delim_begin);
    ++p;
    while (p < n_) {
      if (s_[p] == '\n') {
        ++line_;
        line_start_ = p + 1;
      } else if (s_[p] == ')' && p + 1 + delim.size() < n_ &&
                 std::string_view(s_ + p + 1, delim.size()) == delim &&
                 s_[p + 1 + delim.size()] == '"') {
        pos_ = p + 2 + static_cast<std::uint32_t>(delim.size());
        return true;
      }
      ++p;
    }
    pos_ = n_;
    return true;
  }

  void number() {
    while (pos_ < n_) {
      char c = s_[pos_];
      if ((c == '+' || c == '-') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E' ||
                                     s_[pos_ - 1] == 'p' || s_[pos_ - 1] == 'P')) {
        ++pos_;
      } else if (is_ident(c) || c == '.') {
        ++pos_;
      } else if (c == '\'' && pos_ + 1 < n_ && is_ident(s_[pos_ + 1])) {
        pos_ += 2;
      } else {
        return;
      }
    }
  }

  // Longest match among the operators the rules care about (and the common multi-character
  // ones, so that `a->b` or `x >>= 1` are not split oddly); anything else is one character.
  void punct() {
    char c = s_[pos_];
    char d = pos_ + 1 < n_ ? s_[pos_ + 1] : '\0';
    char e = pos_ + 2 < n_ ? s_[pos_ + 2] : '\0';
    std::uint32_t len = 1;
    switch (c) {
      case '<':
        if (d == '<')
          len = (e == '<' || e == '=') ? 3 : 2;
        else if (d == '=')
          len = e == '>' ? 3 : 2;
        break;
      case '>':
        if (d == '>')
          len = (e == '>' || e == '=') ? 3 : 2;
        else if (d == '=')
          len = 2;
        break;
      case ':':
        if (d == ':') len = 2;
        break;
      case '-':
        if (d == '>')
          len = e == '*' ? 3 : 2;
        else if (d == '-' || d == '=')
          len = 2;
        break;
      case '+':
      case '&':
      case '|':
        if (d == c || d == '=') len = 2;
        break;
      case '#':
        if (d == '#') len = 2;
        break;
      case '.':
        if (d == '.' && e == '.')
          len = 3;
        else if (d == '*')
          len = 2;
        break;
      case '*':
      case '/':
      case '%':
      case '^':
      case '=':
      case '!':
        if (d == '=') len = 2;
        break;
      default:
        break;
    }
    pos_ += len;
  }

  void end_directive();

  const char* s_;
  std::uint32_t n_;
  std::string_view source_;
  std::vector<Token>& tokens_;
  std::uint32_t pos_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t line_start_ = 0;
  bool line_has_token_ = false;  // on the current physical line
  bool logical_line_empty_ = true;
  bool in_directive_ = false;
  bool want_header_name_ = false;
  std::size_t directive_begin_ = 0;
  std::vector<Cond> conds_;
  bool dead_ = false;  // the current line is in a dead #if block (cached from conds_)
};

void Lexer::end_directive() {
  in_directive_ = false;
  want_header_name_ = false;
  const Token* begin = tokens_.data() + directive_begin_;
  const Token* end = tokens_.data() + tokens_.size();
  std::string_view name;
  if (end - begin >= 2 && begin[1].kind == TokenKind::identifier) name = begin[1].text(source_);
  bool visible = !dead();
  if (name == "if" || name == "ifdef" || name == "ifndef") {
    bool parent_dead = dead();
    if (parent_dead) {
      conds_.push_back({true, Cond::taken, true});
    } else {
      int value = name == "if" ? constant_condition(source_, begin + 2, end) : -1;
      if (value == 0)
        conds_.push_back({false, Cond::pending, true});
      else if (value == 1)
        conds_.push_back({false, Cond::taken, false});
      else
        conds_.push_back({false, Cond::unknown, false});
    }
  } else if ((name == "elif" || name == "else") && !conds_.empty()) {
    Cond& c = conds_.back();
    visible = !c.parent_dead;
    if (!c.parent_dead) {
      if (c.state == Cond::taken) {
        c.dead = true;
      } else if (c.state == Cond::unknown) {
        c.dead = false;
      } else {
        int value = name == "else" ? 1 : constant_condition(source_, begin + 2, end);
        if (value == 0) {
          c.dead = true;
        } else {
          c.dead = false;
          c.state = value == 1 ? Cond::taken : Cond::unknown;
        }
      }
    }
  } else if (name == "endif" && !conds_.empty()) {
    visible = !conds_.back().parent_dead;
    conds_.pop_back();
  }
  update_dead();
  if (!visible) tokens_.resize(directive_begin_);
}

LexStats Lexer::run() {
  tokens_.clear();
  tokens_.reserve(n_ / 5 + 16);
  while (pos_ < n_) {
    char c = s_[pos_];
    std::uint32_t begin = pos_;
    std::uint32_t tok_line = line_;
    std::uint32_t tok_line_start = line_start_;
    switch (c) {
      case '\n':
        if (in_directive_) end_directive();
        newline();
        ++pos_;
        line_has_token_ = false;
        logical_line_empty_ = true;
        continue;
      case ' ':
      case '\t':
      case '\r':
      case '\v':
      case '\f':
        // Indentation comes in runs.
        do ++pos_;
        while (pos_ < n_ && (s_[pos_] == ' ' || s_[pos_] == '\t'));
        continue;
      case '\\':
        if (splice()) continue;
        ++pos_;
        emit(TokenKind::punct, begin, tok_line, tok_line_start);
        logical_line_empty_ = false;
        continue;
      case '/':
        if (pos_ + 1 < n_ && s_[pos_ + 1] == '/') {
          skip_line_comment();
          continue;
        }
        if (pos_ + 1 < n_ && s_[pos_ + 1] == '*') {
          skip_block_comment();
          continue;
        }
        punct();
        emit(TokenKind::punct, begin, tok_line, tok_line_start);
        logical_line_empty_ = false;
        continue;
      case '"':
        quoted('"');
        emit(want_header_name_ ? TokenKind::header_name : TokenKind::string, begin, tok_line,
             tok_line_start);
        want_header_name_ = false;
        logical_line_empty_ = false;
        continue;
      case '\'':
        quoted('\'');
        emit(TokenKind::character, begin, tok_line, tok_line_start);
        logical_line_empty_ = false;
        continue;
      case '#':
        if (logical_line_empty_ && !in_directive_) {
          in_directive_ = true;
          directive_begin_ = tokens_.size();
          ++pos_;
          emit(TokenKind::punct, begin, tok_line, tok_line_start);
          tokens_.back().flags |= k_directive_hash;
          logical_line_empty_ = false;
          continue;
        }
        punct();
        emit(TokenKind::punct, begin, tok_line, tok_line_start);
        logical_line_empty_ = false;
        continue;
      case '<':
        if (want_header_name_) {
          while (pos_ < n_ && s_[pos_] != '>' && s_[pos_] != '\n') ++pos_;
          if (pos_ < n_ && s_[pos_] == '>') ++pos_;
          emit(TokenKind::header_name, begin, tok_line, tok_line_start);
          want_header_name_ = false;
          logical_line_empty_ = false;
          continue;
        }
        break;
      default:
        break;
    }
    logical_line_empty_ = false;
    if (is_digit(c) || (c == '.' && pos_ + 1 < n_ && is_digit(s_[pos_ + 1]))) {
      ++pos_;
      number();
      emit(TokenKind::number, begin, tok_line, tok_line_start);
      want_header_name_ = false;
    } else if (is_ident(c)) {
      while (pos_ < n_ && is_ident(s_[pos_])) ++pos_;
      std::string_view word(s_ + begin, pos_ - begin);
      if (pos_ < n_ && (s_[pos_] == '"' || s_[pos_] == '\'') && word.size() <= 3 &&
          (word == "u8" || word == "u" || word == "U" || word == "L" || word == "R" ||
           word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        char quote = s_[pos_];
        bool raw = word.back() == 'R' && quote == '"';
        if (!raw || !raw_string()) quoted(quote);
        emit(quote == '"' ? TokenKind::string : TokenKind::character, begin, tok_line,
             tok_line_start);
        continue;
      }
      emit(TokenKind::identifier, begin, tok_line, tok_line_start);
      // `#include` / `#include_next` / `#import`: the operand is a header name.
      if (in_directive_ && tokens_.size() == directive_begin_ + 2 &&
          (word == "include" || word == "include_next" || word == "import"))
        want_header_name_ = true;
      else
        want_header_name_ = false;
    } else {
      punct();
      emit(TokenKind::punct, begin, tok_line, tok_line_start);
      want_header_name_ = false;
    }
  }
  if (in_directive_) end_directive();

  LexStats stats;
  stats.lines = line_ - (n_ > 0 && s_[n_ - 1] == '\n' ? 1 : 0);
  if (n_ == 0) stats.lines = 0;
  std::uint32_t last = 0;
  for (const Token& t : tokens_) {
    if (t.line != last) {
      ++stats.code_lines;
      last = t.line;
    }
  }
  return stats;
}

}  // namespace

LexStats lex(std::string_view source, std::vector<Token>& tokens) {
  return Lexer(source, tokens).run();
}

}  // namespace kiln::hipcheck
