#pragma once
// GitHub Actions expressions: `${{ <expression> }}`.
// Values are JSON (null, boolean, number, string, array, object), as GitHub's are.

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
  // True when the expression calls success(), failure(), cancelled() or always().
  bool uses_status_function() const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  SourceLocation where_;
  std::shared_ptr<const Node> root_;
};

// GitHub's coercions.
bool truthy(const Value& value);            // false, 0, -0, "", null, NaN are falsy
std::string to_text(const Value& value);    // how a value is interpolated into a string

// Interpolates every `${{ }}` in `text`. A string that is exactly one `${{ }}` keeps the
// value's type (so `${{ fromJSON('[1,2]') }}` is an array); otherwise the result is a string.
Result<Value> evaluate_template(std::string_view text, const Context& context,
                                SourceLocation where = {});
// evaluate_template, then to_text.
Result<std::string> interpolate(std::string_view text, const Context& context,
                                SourceLocation where = {});
// An `if:` condition: with or without `${{ }}`; without a status function it means
// `success() && (condition)`. Returns whether the step/job runs.
Result<bool> evaluate_condition(std::string_view condition, const Context& context,
                                SourceLocation where = {});
// For validation: every `${{ }}` in `text` parses (and is closed).
Status check_template(std::string_view text, SourceLocation where = {});
// True when `text` contains `${{`.
bool has_template(std::string_view text);

}  // namespace kiln::expr
