#pragma once
// GitHub Actions expressions: `${{ <expression> }}`.
// Values are JSON (null, boolean, number, string, array, object), as GitHub's are.
//
// The language as GitHub documents it ("Evaluate expressions in workflows and actions"):
// literals (null, true, false, numbers incl. hex/octal/exponent, NaN, Infinity, 'strings' with
// '' for a quote), context access (`a.b`, `a['b']`, `a[0]`, filters `a.*.b`), the operators
// `! < <= > >= == != && ||` with GitHub's precedence, and the functions contains, startsWith,
// endsWith, format, join, toJSON, fromJSON, hashFiles, success, always, cancelled, failure.
// Choices where GitHub's documentation is silent:
// - Names (contexts, properties, functions) and string comparisons fold ASCII case only.
// - An expression may only start with a known context name (github, env, vars, job, jobs,
//   steps, runner, secrets, strategy, matrix, needs, inputs); any other name is a parse error,
//   as on GitHub. A missing property is null.
// - Arrays and objects are equal only when they are the same instance: two references to the
//   same context node are equal, two separately built values (fromJSON, filters) never are.
// - Arrays and objects interpolate as "Array" and "Object"; numbers as integers when whole
//   (3, not 3.0), else with 15 significant digits (1e+21, 0.333333333333333), NaN, Infinity.
// - Limits: 64 KiB of expression text, nesting 50 deep, 256 arguments, fromJSON 128 levels.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/core/result.h"

namespace kiln::expr {

using Value = nlohmann::json;

// What an evaluation can see: the contexts (github, env, vars, job, jobs, steps, runner,
// secrets, strategy, matrix, needs, inputs) and the state the status functions read.
struct Context {
  Value contexts = Value::object();  // {"github": {...}, "env": {...}, ...}
  // success(): nothing before has failed and the run is not cancelled; failure(): something
  // before has failed; cancelled(): the run was cancelled. always() is true.
  bool failed = false;
  bool cancelled = false;
  // hashFiles(patterns...): supplied by whoever knows the workspace. Unset → an error.
  std::function<Result<std::string>(const std::vector<std::string>& patterns)> hash_files;
};

struct Node;  // the syntax tree, private to the implementation

class Expression {
 public:
  // Parses the text between `${{` and `}}` (or a bare `if:` condition). Errors carry `where`
  // advanced to the offending column.
  static Result<Expression> parse(std::string_view source, SourceLocation where = {});
  Result<Value> evaluate(const Context& context) const;
  // evaluate, then truthy / to_text, without copying the value out of the contexts.
  Result<bool> evaluate_truthy(const Context& context) const;
  Result<std::string> evaluate_text(const Context& context) const;
  // True when the expression calls success(), failure(), cancelled() or always().
  bool uses_status_function() const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  SourceLocation where_;
  std::shared_ptr<const Node> root_;
  bool uses_status_ = false;
};

// A text with any number of `${{ }}`, parsed once and evaluated many times (evaluate_template
// below parses on every call).
class Template {
 public:
  static Result<Template> parse(std::string_view text, SourceLocation where = {});
  // As evaluate_template: exactly one `${{ }}` (with only whitespace around it) keeps the
  // value's type; anything else becomes a string.
  Result<Value> evaluate(const Context& context) const;
  Result<std::string> evaluate_text(const Context& context) const;
  // The text is exactly one `${{ }}`, give or take surrounding whitespace.
  bool is_single_expression() const { return single_; }
  bool uses_status_function() const;
  const std::vector<Expression>& expressions() const { return expressions_; }

 private:
  std::vector<std::string> literals_;  // literals_[i] precedes expressions_[i]; one more at the end
  std::vector<Expression> expressions_;
  bool single_ = false;
};

// GitHub's coercions.
bool truthy(const Value& value);          // false, 0, -0, "", null, NaN are falsy
std::string to_text(const Value& value);  // how a value is interpolated into a string
// null→0, true→1, false→0, numbers as they are, strings parsed as numbers ('' → 0, not a
// number → NaN), arrays and objects → NaN.
double to_number(const Value& value);
// GitHub's `==`: different types compare as numbers, strings case-insensitively, NaN equals
// nothing. Arrays and objects are equal only when they are the same instance (the same
// address), never by content: `github.event == github.event` is true, `fromJSON('[]') ==
// fromJSON('[]')` is false.
bool loose_equals(const Value& left, const Value& right);

// Interpolates every `${{ }}` in `text`. A string that is exactly one `${{ }}` keeps the
// value's type (so `${{ fromJSON('[1,2]') }}` is an array); otherwise the result is a string.
Result<Value> evaluate_template(std::string_view text, const Context& context,
                                SourceLocation where = {});
// evaluate_template, then to_text.
Result<std::string> interpolate(std::string_view text, const Context& context,
                                SourceLocation where = {});
// An `if:` condition: with or without `${{ }}`; without a status function it means
// `success() && (condition)`. Returns whether the step/job runs. An empty condition is
// `success()`; text around `${{ }}` makes the whole a string (truthy unless empty), as GitHub
// does.
Result<bool> evaluate_condition(std::string_view condition, const Context& context,
                                SourceLocation where = {});
// For validation: every `${{ }}` in `text` parses (and is closed).
Status check_template(std::string_view text, SourceLocation where = {});
// True when `text` contains `${{`.
bool has_template(std::string_view text);

}  // namespace kiln::expr
