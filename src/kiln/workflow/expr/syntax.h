#pragma once
// Internals of the expression language: tokens, the syntax tree and the limits that keep a
// hostile expression from exhausting the stack. Not part of the module's interface.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/workflow/expr/expr.h"

namespace kiln::expr {

// Limits: GitHub caps expressions too; these keep recursion (parser and evaluator) bounded.
inline constexpr std::size_t k_max_expression_length = 64 * 1024;
inline constexpr int k_max_depth = 50;          // nesting of groups, calls, indexes, `!`
inline constexpr std::size_t k_max_args = 256;  // arguments of one function call
inline constexpr int k_max_json_depth = 128;    // nesting that fromJSON accepts

enum class TokenKind {
  end,
  number,      // value: the literal's number
  string,      // text: the unescaped contents
  identifier,  // text: the name as written (names may contain '-' and '_')
  keyword,     // true, false, null, NaN, Infinity: value holds the literal
  lparen,
  rparen,
  lbracket,
  rbracket,
  dot,
  comma,
  star,
  bang,
  less,
  less_equal,
  greater,
  greater_equal,
  equal,
  not_equal,
  and_and,
  or_or,
};

struct Token {
  TokenKind kind = TokenKind::end;
  std::size_t offset = 0;  // where the token starts in the source
  std::size_t length = 0;
  std::string text;
  Value value;
};

// Splits `source` into tokens; the last one is `end`. On a bad character, fills `error` and
// returns false.
struct LexError {
  std::size_t offset = 0;
  std::string message;
};
bool lex(std::string_view source, std::vector<Token>& tokens, LexError& error);

// Parses a number the way GitHub coerces strings: JSON-like decimals with optional sign,
// fraction and exponent, hex (0x..), octal (0o..), "Infinity", "-Infinity", "NaN"; surrounding
// ASCII whitespace is ignored. Returns false when `text` is not a number.
bool parse_number(std::string_view text, double& out);

enum class NodeKind {
  literal,  // value
  context,  // name: a top-level named value (github, env, ...), lower-cased
  access,   // children[0]: the base; steps: property, index or wildcard, applied in order
  not_op,   // children[0]
  compare,  // op; children[0], children[1]
  and_op,   // children: two or more operands
  or_op,    // children: two or more operands
  call,     // function; children: the arguments
};

enum class CompareOp { equal, not_equal, less, less_equal, greater, greater_equal };

enum class Function {
  contains,
  starts_with,
  ends_with,
  format,
  join,
  to_json,
  from_json,
  hash_files,
  success,
  always,
  cancelled,
  failure,
};

struct Node;

struct AccessStep {
  enum class Kind { property, index, wildcard } kind = Kind::property;
  std::string name;             // property: the name, lower-cased for case-insensitive lookup
  std::unique_ptr<Node> index;  // index: the expression between [ ]
  std::size_t offset = 0;
};

struct Node {
  NodeKind kind = NodeKind::literal;
  std::size_t offset = 0;  // where the node starts in the source, for error columns
  Value value;
  std::string name;
  CompareOp op = CompareOp::equal;
  Function function = Function::success;
  std::vector<std::unique_ptr<Node>> children;
  std::vector<AccessStep> steps;
};

// Where `offset` within `source` lies, given that the source starts at `where`.
SourceLocation advance(const SourceLocation& where, std::string_view source, std::size_t offset);

// The six kinds of value GitHub distinguishes (JSON's, with all numbers as one).
enum class ValueKind { null, boolean, number, string, array, object };
ValueKind kind_of(const Value& value);
// `left OP right` with GitHub's coercions (loose_equals for == and !=).
bool loose_compare(const Value& left, const Value& right, CompareOp op);
// How a number is interpolated: integers without ".0", NaN, Infinity, else 15 digits.
std::string number_text(double number);
// ASCII case-insensitive three-way comparison.
int compare_ignore_case(std::string_view a, std::string_view b);

// "MESSAGE in expression 'SOURCE'" at the column of `offset` (SOURCE shown trimmed).
std::unexpected<Error> expression_error(const SourceLocation& where, std::string_view source,
                                        std::size_t offset, std::string_view message);

// ASCII case folding: GitHub compares strings and names case-insensitively.
std::string to_lower(std::string_view text);
bool equals_ignore_case(std::string_view a, std::string_view b);

}  // namespace kiln::expr
