// `${{ }}` templates, `if:` conditions and where their errors point.
#include "kiln/workflow/expr/expr.h"

#include <gtest/gtest.h>

namespace kiln::expr {
namespace {

Context sample_context() {
  Context context;
  context.contexts = Value::parse(R"({
    "github": {"event_name": "push", "ref": "refs/heads/main", "event": {"a": 1}},
    "inputs": {"debug": true, "nothing": null},
    "matrix": {"flags": ["a", "b"], "cuda": "12.4"}
  })");
  return context;
}

// A template's value, or the error text.
std::string eval_text(std::string_view text, const Context& context = sample_context()) {
  auto value = evaluate_template(text, context);
  if (!value) return "error: " + value.error().message;
  return value->dump();
}

TEST(Template, TextWithoutExpressionsIsReturnedAsIs) {
  EXPECT_EQ(eval_text("plain text"), R"("plain text")");
  EXPECT_EQ(eval_text(""), R"("")");
  EXPECT_EQ(eval_text("costs $5 {{ not }} an expression"), R"("costs $5 {{ not }} an expression")");
}

TEST(Template, SingleExpressionKeepsItsType) {
  EXPECT_EQ(eval_text("${{ 1 }}"), "1");
  EXPECT_EQ(eval_text("${{ inputs.debug }}"), "true");
  EXPECT_EQ(eval_text("  ${{ fromJSON('[1,2]') }}\n"), "[1,2]");
  EXPECT_EQ(eval_text("${{ inputs.nothing }}"), "null");
  EXPECT_EQ(eval_text("${{ matrix.flags }}"), R"(["a","b"])");
}

TEST(Template, TextAroundExpressionsMakesAString) {
  EXPECT_EQ(eval_text("v${{ 1 }}"), R"("v1")");
  EXPECT_EQ(eval_text("${{ 'a' }}-${{ 'b' }}"), R"("a-b")");
  EXPECT_EQ(eval_text("${{ 1 }}${{ 2 }}"), R"("12")");
  EXPECT_EQ(eval_text("${{ null }}x"), R"("x")");
  EXPECT_EQ(eval_text("on ${{ github.event_name }} to ${{ github.ref }}"),
            R"("on push to refs/heads/main")");
  EXPECT_EQ(eval_text("${{ matrix.flags }} and ${{ github.event }}"), R"("Array and Object")");
  EXPECT_EQ(eval_text("${{ 1.5 }}/${{ 1e21 }}/${{ 0.1 }}/${{ 3.0 }}"), R"("1.5/1e+21/0.1/3")");
  EXPECT_EQ(eval_text("${{ true }} ${{ false }}"), R"("true false")");
}

TEST(Template, ClosingBracesInsideStringsDoNotEndTheExpression) {
  EXPECT_EQ(eval_text("${{ '}}' }}"), R"("}}")");
  EXPECT_EQ(eval_text("x ${{ 'a}}b' }} y"), R"("x a}}b y")");
  EXPECT_EQ(eval_text("${{ 'it''s }}' }}!"), R"("it's }}!")");
  EXPECT_EQ(eval_text("${{ format('{{0}}') }}"), R"("{0}")");
}

TEST(Template, UnclosedExpressionIsAnErrorAtItsColumn) {
  auto result =
      evaluate_template("hello ${{ github.event_name", sample_context(), {"w.yml", 3, 10});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().where.line, 3);
  EXPECT_EQ(result.error().where.column, 16);
  EXPECT_NE(result.error().message.find("not closed"), std::string::npos);
  // An unterminated string swallows the `}}`.
  EXPECT_NE(eval_text("${{ 'abc }}").find("not closed"), std::string::npos);
}

TEST(Template, ErrorsInsideExpressionsPointIntoTheText) {
  auto result = evaluate_template("run: ${{ true && ) }}", sample_context(), {"w.yml", 4, 9});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().to_string(),
            "w.yml:4:26: error: unexpected token ')' in expression 'true && )'");
  EXPECT_EQ(eval_text("${{ }}"), "error: expected an expression");
}

TEST(Template, ColumnsFollowNewlines) {
  auto status = check_template("line1\n  ${{ foo }}", {"w.yml", 5, 3});
  ASSERT_FALSE(status);
  EXPECT_EQ(status.error().where.line, 6);
  EXPECT_EQ(status.error().where.column, 7);
}

TEST(Template, InterpolateAlwaysGivesText) {
  auto context = sample_context();
  EXPECT_EQ(*interpolate("${{ fromJSON('[1]') }}", context), "Array");
  EXPECT_EQ(*interpolate("${{ 42 }}", context), "42");
  EXPECT_EQ(*interpolate("${{ inputs.nothing }}", context), "");
  EXPECT_EQ(*interpolate("no expression", context), "no expression");
  EXPECT_FALSE(interpolate("${{ nope }}", context));
}

TEST(Template, ParsedOnceEvaluatedManyTimes) {
  auto parsed = Template::parse("ref=${{ github.ref }}");
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->is_single_expression());
  Context first = sample_context();
  Context second = sample_context();
  second.contexts["github"]["ref"] = "refs/tags/v1";
  EXPECT_EQ(*parsed->evaluate_text(first), "ref=refs/heads/main");
  EXPECT_EQ(*parsed->evaluate_text(second), "ref=refs/tags/v1");
  EXPECT_EQ(parsed->expressions().size(), 1u);
}

TEST(Template, CheckTemplateValidatesEveryExpression) {
  EXPECT_TRUE(check_template("no expressions"));
  EXPECT_TRUE(check_template("${{ github.ref }} and ${{ contains(matrix.flags, 'a') }}"));
  EXPECT_FALSE(check_template("${{ github.ref }} and ${{ contains(matrix.flags) }}"));
  EXPECT_FALSE(check_template("${{ github.ref"));
  EXPECT_FALSE(check_template("${{ \"double\" }}"));
  // Checking does not evaluate: a missing hashFiles provider is not a parse error.
  EXPECT_TRUE(check_template("${{ hashFiles('**/lock') }}"));
}

TEST(Template, HasTemplate) {
  EXPECT_TRUE(has_template("a ${{ b }}"));
  EXPECT_TRUE(has_template("${{"));
  EXPECT_FALSE(has_template("a $ {{ b }}"));
  EXPECT_FALSE(has_template("{{ b }}"));
}

bool condition(std::string_view text, bool failed = false, bool cancelled = false) {
  Context context = sample_context();
  context.failed = failed;
  context.cancelled = cancelled;
  auto result = evaluate_condition(text, context);
  EXPECT_TRUE(result) << text << ": " << result.error().to_string();
  return result && *result;
}

TEST(Condition, WithAndWithoutBraces) {
  EXPECT_TRUE(condition("github.event_name == 'push'"));
  EXPECT_FALSE(condition("github.event_name == 'pull_request'"));
  EXPECT_TRUE(condition("${{ github.event_name == 'push' }}"));
  EXPECT_FALSE(condition("  ${{ github.event_name != 'push' }}  "));
  EXPECT_FALSE(condition("0"));
  EXPECT_FALSE(condition("inputs.nothing"));
  EXPECT_TRUE(condition("'false'"));  // a non-empty string is truthy
  EXPECT_TRUE(condition("matrix.flags"));
}

TEST(Condition, EmptyMeansSuccess) {
  EXPECT_TRUE(condition(""));
  EXPECT_TRUE(condition("  "));
  EXPECT_FALSE(condition("", true));
  EXPECT_FALSE(condition("", false, true));
}

TEST(Condition, WithoutStatusFunctionImpliesSuccess) {
  EXPECT_FALSE(condition("true", true));
  EXPECT_FALSE(condition("${{ true }}", true));
  EXPECT_FALSE(condition("true", false, true));
  // The implied success() short-circuits: the rest is not evaluated.
  EXPECT_FALSE(condition("fromJSON('bad')", true));
}

TEST(Condition, StatusFunctions) {
  EXPECT_TRUE(condition("success()"));
  EXPECT_FALSE(condition("failure()"));
  EXPECT_TRUE(condition("failure()", true));
  EXPECT_FALSE(condition("success()", true));
  EXPECT_TRUE(condition("always()", true));
  EXPECT_TRUE(condition("${{ failure() }}", true));
  EXPECT_TRUE(condition("failure() && github.event_name == 'push'", true));
  EXPECT_FALSE(condition("failure() && github.event_name == 'tag'", true));
  EXPECT_TRUE(condition("always()", false, true));
  EXPECT_TRUE(condition("cancelled()", false, true));
  EXPECT_FALSE(condition("success()", false, true));
  EXPECT_FALSE(condition("failure()", false, true));
  EXPECT_TRUE(condition("!cancelled()"));
  EXPECT_TRUE(condition("Always()", true));  // function names are case-insensitive
}

TEST(Condition, TextAroundBracesIsAStringAsOnGitHub) {
  // GitHub evaluates `${{ false }} && true` to the string "false && true", which is truthy.
  EXPECT_TRUE(condition("${{ false }} && true"));
  EXPECT_FALSE(condition("${{ 'x' }} y", true));
}

TEST(Condition, ErrorsCarryTheColumn) {
  auto result = evaluate_condition("github.event_name ==", sample_context(), {"w.yml", 7, 11});
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().where.column, 31);
  EXPECT_EQ(result.error().code, ErrorCode::invalid_input);
  auto braced = evaluate_condition("${{ nope }}", sample_context(), {"w.yml", 7, 11});
  ASSERT_FALSE(braced);
  EXPECT_EQ(braced.error().where.column, 15);
  EXPECT_NE(braced.error().message.find("unrecognized named value 'nope'"), std::string::npos);
}

}  // namespace
}  // namespace kiln::expr
