// `${{ }}` interpolation and `if:` conditions.
#include "kiln/workflow/expr/syntax.h"

namespace kiln::expr {
namespace {

constexpr std::string_view k_open = "${{";
constexpr std::string_view k_close = "}}";

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// Offset of the `}}` that closes an expression starting at `from`, skipping `}}` inside
// single-quoted strings (a doubled quote inside a string just closes and reopens it, which
// this scan treats the same). npos when there is none.
std::size_t find_close(std::string_view text, std::size_t from) {
  bool in_string = false;
  for (std::size_t i = from; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\'') {
      in_string = !in_string;
    } else if (!in_string && c == '}' && i + 1 < text.size() && text[i + 1] == '}') {
      return i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

Result<Template> Template::parse(std::string_view text, SourceLocation where) {
  Template result;
  std::size_t position = 0;
  while (true) {
    std::size_t open = text.find(k_open, position);
    if (open == std::string_view::npos) break;
    std::size_t inner = open + k_open.size();
    std::size_t close = find_close(text, inner);
    if (close == std::string_view::npos)
      return fail_at(advance(where, text, open), "'${{{{' is not closed by '}}}}' in '{}'", text);
    result.literals_.emplace_back(text.substr(position, open - position));
    KILN_TRY(auto expression,
             Expression::parse(text.substr(inner, close - inner), advance(where, text, inner)));
    result.expressions_.push_back(std::move(expression));
    position = close + k_close.size();
  }
  result.literals_.emplace_back(text.substr(position));
  result.single_ = result.expressions_.size() == 1 && is_blank(result.literals_[0]) &&
                   is_blank(result.literals_[1]);
  return result;
}

bool Template::uses_status_function() const {
  for (const auto& expression : expressions_)
    if (expression.uses_status_function()) return true;
  return false;
}

Result<std::string> Template::evaluate_text(const Context& context) const {
  std::string out = literals_[0];
  for (std::size_t i = 0; i < expressions_.size(); ++i) {
    KILN_TRY(auto text, expressions_[i].evaluate_text(context));
    out += text;
    out += literals_[i + 1];
  }
  return out;
}

Result<Value> Template::evaluate(const Context& context) const {
  if (single_) return expressions_[0].evaluate(context);
  KILN_TRY(auto text, evaluate_text(context));
  return Value(std::move(text));
}

Result<Value> evaluate_template(std::string_view text, const Context& context,
                                SourceLocation where) {
  if (!has_template(text)) return Value(std::string(text));
  KILN_TRY(auto parsed, Template::parse(text, std::move(where)));
  return parsed.evaluate(context);
}

Result<std::string> interpolate(std::string_view text, const Context& context,
                                SourceLocation where) {
  if (!has_template(text)) return std::string(text);
  KILN_TRY(auto parsed, Template::parse(text, std::move(where)));
  return parsed.evaluate_text(context);
}

Result<bool> evaluate_condition(std::string_view condition, const Context& context,
                                SourceLocation where) {
  bool implicit_success = !context.failed && !context.cancelled;
  if (is_blank(condition)) return implicit_success;  // an empty `if:` is `success()`
  if (has_template(condition)) {
    KILN_TRY(auto parsed, Template::parse(condition, std::move(where)));
    bool guarded = parsed.uses_status_function();
    if (parsed.is_single_expression()) {
      if (!guarded && !implicit_success) return false;
      return parsed.expressions()[0].evaluate_truthy(context);
    }
    // Text around `${{ }}`: GitHub evaluates it to a string, which is true unless empty.
    if (!guarded && !implicit_success) return false;
    KILN_TRY(auto text, parsed.evaluate_text(context));
    return !text.empty();
  }
  KILN_TRY(auto expression, Expression::parse(condition, std::move(where)));
  if (!expression.uses_status_function() && !implicit_success) return false;
  return expression.evaluate_truthy(context);
}

Status check_template(std::string_view text, SourceLocation where) {
  if (!has_template(text)) return {};
  KILN_TRY_VOID(Template::parse(text, std::move(where)));
  return {};
}

bool has_template(std::string_view text) { return text.find(k_open) != std::string_view::npos; }

}  // namespace kiln::expr
