// Parser with GitHub's precedence, from loosest to tightest:
//   ||   &&   == !=   < <= > >=   !   . [] (property, index, filter)   ( ) and literals.
// Binary operators by precedence climbing, the rest by recursive descent; nesting and tree
// height are bounded (syntax.h) so neither parsing nor evaluation can exhaust the stack.
#include <algorithm>
#include <array>
#include <limits>

#include "kiln/workflow/expr/syntax.h"

namespace kiln::expr {
namespace {

// The named values an expression may start with (GitHub's contexts).
constexpr std::array<std::string_view, 12> k_contexts = {
    "github", "env",     "vars",     "job",    "jobs",  "steps",
    "runner", "secrets", "strategy", "matrix", "needs", "inputs",
};

struct FunctionInfo {
  std::string_view name;
  Function function;
  std::size_t min_args;
  std::size_t max_args;
};

constexpr std::size_t k_many = std::numeric_limits<std::size_t>::max();
constexpr std::array<FunctionInfo, 12> k_functions = {{
    {"contains", Function::contains, 2, 2},
    {"startsWith", Function::starts_with, 2, 2},
    {"endsWith", Function::ends_with, 2, 2},
    {"format", Function::format, 1, k_many},
    {"join", Function::join, 1, 2},
    {"toJSON", Function::to_json, 1, 1},
    {"fromJSON", Function::from_json, 1, 1},
    {"hashFiles", Function::hash_files, 1, k_many},
    {"success", Function::success, 0, 0},
    {"always", Function::always, 0, 0},
    {"cancelled", Function::cancelled, 0, 0},
    {"failure", Function::failure, 0, 0},
}};

// Longest chain of nodes below (and including) `node`; bounded so evaluation cannot recurse
// without limit (a long `a == b == c == ...` chain nests to the left).
constexpr int k_max_height = 128;

bool is_status(Function function) {
  return function == Function::success || function == Function::always ||
         function == Function::cancelled || function == Function::failure;
}

std::string describe(const Token& token, std::string_view source) {
  if (token.kind == TokenKind::end) return "end of expression";
  return fmt::format("token '{}'", source.substr(token.offset, token.length));
}

class Parser {
 public:
  Parser(std::string_view source, const SourceLocation& where, std::vector<Token> tokens)
      : source_(source), where_(where), tokens_(std::move(tokens)) {}

  Result<std::unique_ptr<Node>> parse() {
    if (tokens_.front().kind == TokenKind::end) return error(0, "expected an expression");
    KILN_TRY(auto root, parse_or());
    if (peek().kind != TokenKind::end) return unexpected();
    return root;
  }

  bool uses_status() const { return uses_status_; }

 private:
  const Token& peek() const { return tokens_[position_]; }
  const Token& take() { return tokens_[position_++]; }
  bool accept(TokenKind kind) {
    if (peek().kind != kind) return false;
    ++position_;
    return true;
  }

  std::unexpected<Error> error(std::size_t offset, std::string_view message) const {
    return expression_error(where_, source_, offset, message);
  }
  std::unexpected<Error> unexpected() const {
    return error(peek().offset, fmt::format("unexpected {}", describe(peek(), source_)));
  }

  // Checks the height bound for a node just built from its children.
  Result<std::unique_ptr<Node>> finish(std::unique_ptr<Node> node, int height) {
    if (height > k_max_height) return error(node->offset, "expression is nested too deeply");
    node_height_ = height;
    return node;
  }

  // Each parse_* returns the node; node_height_ holds the height of the node just returned.
  Result<std::unique_ptr<Node>> parse_or() { return parse_expression(k_or); }

  // Binding strength of a binary operator; 0 for anything else.
  static constexpr int k_or = 1, k_and = 2, k_equality = 3, k_comparison = 4;
  static int precedence(TokenKind kind) {
    switch (kind) {
      case TokenKind::or_or:
        return k_or;
      case TokenKind::and_and:
        return k_and;
      case TokenKind::equal:
      case TokenKind::not_equal:
        return k_equality;
      case TokenKind::less:
      case TokenKind::less_equal:
      case TokenKind::greater:
      case TokenKind::greater_equal:
        return k_comparison;
      default:
        return 0;
    }
  }
  static CompareOp compare_op(TokenKind kind) {
    switch (kind) {
      case TokenKind::equal:
        return CompareOp::equal;
      case TokenKind::not_equal:
        return CompareOp::not_equal;
      case TokenKind::less:
        return CompareOp::less;
      case TokenKind::less_equal:
        return CompareOp::less_equal;
      case TokenKind::greater:
        return CompareOp::greater;
      default:
        return CompareOp::greater_equal;
    }
  }

  // Precedence climbing over the binary operators that bind at least `min_precedence`: one
  // function for every level keeps the stack shallow per nesting level. Comparisons nest to
  // the left; a run of && (or ||) becomes one node with every operand.
  Result<std::unique_ptr<Node>> parse_expression(int min_precedence) {
    KILN_TRY(auto left, parse_unary());
    while (true) {
      TokenKind kind = peek().kind;
      int strength = precedence(kind);
      if (strength == 0 || strength < min_precedence) break;
      int height = node_height_;
      auto node = std::make_unique<Node>();
      node->offset = left->offset;
      node->children.push_back(std::move(left));
      if (kind == TokenKind::and_and || kind == TokenKind::or_or) {
        node->kind = kind == TokenKind::or_or ? NodeKind::or_op : NodeKind::and_op;
        while (accept(kind)) {
          KILN_TRY(auto next, parse_expression(strength + 1));
          height = std::max(height, node_height_);
          node->children.push_back(std::move(next));
        }
      } else {
        take();
        node->kind = NodeKind::compare;
        node->op = compare_op(kind);
        KILN_TRY(auto right, parse_expression(strength + 1));
        height = std::max(height, node_height_);
        node->children.push_back(std::move(right));
      }
      KILN_TRY(left, finish(std::move(node), height + 1));
    }
    return left;
  }

  // `!` binds tighter than every binary operator; a run of them is read without recursion.
  Result<std::unique_ptr<Node>> parse_unary() {
    std::vector<std::size_t> bangs;
    while (peek().kind == TokenKind::bang) {
      if (depth_ + static_cast<int>(bangs.size()) >= k_max_depth)
        return error(peek().offset, "expression is nested too deeply");
      bangs.push_back(take().offset);
    }
    KILN_TRY(auto operand, parse_postfix());
    for (auto offset = bangs.rbegin(); offset != bangs.rend(); ++offset) {
      auto node = std::make_unique<Node>();
      node->kind = NodeKind::not_op;
      node->offset = *offset;
      node->children.push_back(std::move(operand));
      KILN_TRY(operand, finish(std::move(node), node_height_ + 1));
    }
    return operand;
  }

  Status enter(std::size_t offset) {
    if (++depth_ > k_max_depth) return error(offset, "expression is nested too deeply");
    return {};
  }

  Result<std::unique_ptr<Node>> parse_postfix() {
    KILN_TRY(auto base, parse_primary());
    if (peek().kind != TokenKind::dot && peek().kind != TokenKind::lbracket) return base;
    int height = node_height_;
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::access;
    node->offset = base->offset;
    node->children.push_back(std::move(base));
    while (true) {
      if (accept(TokenKind::dot)) {
        const Token& token = peek();
        AccessStep step;
        step.offset = token.offset;
        if (token.kind == TokenKind::star) {
          step.kind = AccessStep::Kind::wildcard;
        } else if (token.kind == TokenKind::identifier || token.kind == TokenKind::keyword) {
          step.kind = AccessStep::Kind::property;
          step.name = token.text;
        } else {
          return error(token.offset, fmt::format("expected a property name after '.', found {}",
                                                 describe(token, source_)));
        }
        take();
        node->steps.push_back(std::move(step));
      } else if (peek().kind == TokenKind::lbracket) {
        std::size_t offset = take().offset;
        AccessStep step;
        step.offset = offset;
        if (accept(TokenKind::star)) {
          step.kind = AccessStep::Kind::wildcard;
        } else {
          KILN_TRY_VOID(enter(offset));
          KILN_TRY(auto index, parse_or());
          --depth_;
          height = std::max(height, node_height_);
          step.kind = AccessStep::Kind::index;
          step.index = std::move(index);
        }
        if (!accept(TokenKind::rbracket)) return unexpected();
        node->steps.push_back(std::move(step));
      } else {
        break;
      }
    }
    return finish(std::move(node), height + 1);
  }

  Result<std::unique_ptr<Node>> parse_primary() {
    const Token& token = peek();
    auto node = std::make_unique<Node>();
    node->offset = token.offset;
    switch (token.kind) {
      case TokenKind::number:
      case TokenKind::string:
      case TokenKind::keyword:
        node->kind = NodeKind::literal;
        node->value = token.kind == TokenKind::string ? Value(token.text) : token.value;
        take();
        return finish(std::move(node), 1);
      case TokenKind::lparen: {
        take();
        KILN_TRY_VOID(enter(token.offset));
        KILN_TRY(auto inner, parse_or());
        --depth_;
        if (!accept(TokenKind::rparen)) return unexpected();
        return inner;
      }
      case TokenKind::identifier:
        break;
      default:
        return unexpected();
    }
    take();
    if (peek().kind == TokenKind::lparen) return parse_call(token);
    std::string name = to_lower(token.text);
    if (std::find(k_contexts.begin(), k_contexts.end(), name) == k_contexts.end())
      return error(token.offset, fmt::format("unrecognized named value '{}'", token.text));
    node->kind = NodeKind::context;
    node->name = std::move(name);
    return finish(std::move(node), 1);
  }

  Result<std::unique_ptr<Node>> parse_call(const Token& name) {
    auto info = std::find_if(k_functions.begin(), k_functions.end(), [&](const FunctionInfo& f) {
      return equals_ignore_case(f.name, name.text);
    });
    if (info == k_functions.end())
      return error(name.offset, fmt::format("unrecognized function '{}'", name.text));
    std::size_t open = take().offset;
    KILN_TRY_VOID(enter(open));
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::call;
    node->offset = name.offset;
    node->function = info->function;
    node->name = std::string(info->name);
    int height = 0;
    if (!accept(TokenKind::rparen)) {
      while (true) {
        if (node->children.size() >= k_max_args)
          return error(peek().offset, "too many function arguments");
        KILN_TRY(auto argument, parse_or());
        height = std::max(height, node_height_);
        node->children.push_back(std::move(argument));
        if (accept(TokenKind::rparen)) break;
        if (!accept(TokenKind::comma)) return unexpected();
      }
    }
    --depth_;
    std::size_t count = node->children.size();
    if (count < info->min_args || count > info->max_args) {
      std::string expected = info->min_args == info->max_args ? fmt::format("{}", info->min_args)
                             : info->max_args == k_many
                                 ? fmt::format("at least {}", info->min_args)
                                 : fmt::format("{} to {}", info->min_args, info->max_args);
      return error(name.offset,
                   fmt::format("function '{}' takes {} argument{}, got {}", info->name, expected,
                               info->max_args == 1 && info->min_args == 1 ? "" : "s", count));
    }
    if (is_status(info->function)) uses_status_ = true;
    return finish(std::move(node), height + 1);
  }

  std::string_view source_;
  const SourceLocation& where_;
  std::vector<Token> tokens_;
  std::size_t position_ = 0;
  int depth_ = 0;
  int node_height_ = 0;
  bool uses_status_ = false;
};

}  // namespace

Result<Expression> Expression::parse(std::string_view source, SourceLocation where) {
  if (source.size() > k_max_expression_length)
    return fail_at(where, "expression is longer than {} bytes", k_max_expression_length);
  std::vector<Token> tokens;
  LexError lex_error;
  if (!lex(source, tokens, lex_error))
    return expression_error(where, source, lex_error.offset, lex_error.message);
  Parser parser(source, where, std::move(tokens));
  KILN_TRY(auto root, parser.parse());
  Expression expression;
  expression.source_ = std::string(source);
  expression.where_ = std::move(where);
  expression.root_ = std::shared_ptr<const Node>(std::move(root));
  expression.uses_status_ = parser.uses_status();
  return expression;
}

bool Expression::uses_status_function() const { return uses_status_; }

}  // namespace kiln::expr
