// Coercions, error locations, limits, status and hashFiles plumbing.
#include "kiln/workflow/expr/expr.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace kiln::expr {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();

TEST(Value, ToText) {
  EXPECT_EQ(to_text(Value()), "");
  EXPECT_EQ(to_text(Value(true)), "true");
  EXPECT_EQ(to_text(Value(false)), "false");
  EXPECT_EQ(to_text(Value(3)), "3");
  EXPECT_EQ(to_text(Value(-3)), "-3");
  EXPECT_EQ(to_text(Value(3.0)), "3");
  EXPECT_EQ(to_text(Value(1.5)), "1.5");
  EXPECT_EQ(to_text(Value(0.1)), "0.1");
  EXPECT_EQ(to_text(Value(-9.2)), "-9.2");
  EXPECT_EQ(to_text(Value(1.0 / 3)), "0.333333333333333");
  EXPECT_EQ(to_text(Value(123456789012.0)), "123456789012");
  EXPECT_EQ(to_text(Value(1e21)), "1e+21");
  EXPECT_EQ(to_text(Value(-0.0)), "0");
  EXPECT_EQ(to_text(Value(k_nan)), "NaN");
  EXPECT_EQ(to_text(Value(k_inf)), "Infinity");
  EXPECT_EQ(to_text(Value(-k_inf)), "-Infinity");
  EXPECT_EQ(to_text(Value(std::numeric_limits<std::uint64_t>::max())), "18446744073709551615");
  EXPECT_EQ(to_text(Value("text")), "text");
  EXPECT_EQ(to_text(Value::array({1, 2})), "Array");
  EXPECT_EQ(to_text(Value::object()), "Object");
}

TEST(Value, Truthy) {
  EXPECT_FALSE(truthy(Value()));
  EXPECT_FALSE(truthy(Value(false)));
  EXPECT_FALSE(truthy(Value(0)));
  EXPECT_FALSE(truthy(Value(0.0)));
  EXPECT_FALSE(truthy(Value(-0.0)));
  EXPECT_FALSE(truthy(Value(k_nan)));
  EXPECT_FALSE(truthy(Value("")));
  EXPECT_TRUE(truthy(Value(true)));
  EXPECT_TRUE(truthy(Value(-1)));
  EXPECT_TRUE(truthy(Value(0.5)));
  EXPECT_TRUE(truthy(Value(k_inf)));
  EXPECT_TRUE(truthy(Value("0")));
  EXPECT_TRUE(truthy(Value("false")));
  EXPECT_TRUE(truthy(Value::array()));
  EXPECT_TRUE(truthy(Value::object()));
}

TEST(Value, ToNumber) {
  EXPECT_EQ(to_number(Value()), 0);
  EXPECT_EQ(to_number(Value(true)), 1);
  EXPECT_EQ(to_number(Value(false)), 0);
  EXPECT_EQ(to_number(Value("")), 0);
  EXPECT_EQ(to_number(Value("  ")), 0);
  EXPECT_EQ(to_number(Value(" 42 ")), 42);
  EXPECT_EQ(to_number(Value("-2.99e-2")), -2.99e-2);
  EXPECT_EQ(to_number(Value("0xff")), 255);
  EXPECT_EQ(to_number(Value("1e400")), k_inf);
  EXPECT_EQ(to_number(Value("1e-400")), 0);
  EXPECT_TRUE(std::isnan(to_number(Value("abc"))));
  EXPECT_TRUE(std::isnan(to_number(Value("1 2"))));
  EXPECT_TRUE(std::isnan(to_number(Value("0x"))));
  EXPECT_TRUE(std::isnan(to_number(Value("inf"))));
  EXPECT_TRUE(std::isnan(to_number(Value::array())));
  EXPECT_TRUE(std::isnan(to_number(Value::object())));
}

TEST(Value, LooseEqualsOnSeparateValues) {
  EXPECT_TRUE(loose_equals(Value("ABC"), Value("abc")));
  EXPECT_TRUE(loose_equals(Value("1"), Value(1)));
  EXPECT_FALSE(loose_equals(Value(k_nan), Value(k_nan)));
  Value array = Value::array({1});
  EXPECT_TRUE(loose_equals(array, array));  // the same instance
  EXPECT_FALSE(loose_equals(array, Value::array({1})));
}

TEST(Errors, MessageNamesTheTokenAndTheColumn) {
  auto parsed = Expression::parse("true && )", {"w.yml", 4, 9});
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().to_string(),
            "w.yml:4:17: error: unexpected token ')' in expression 'true && )'");
  auto lexed = Expression::parse("1 == \"x\"", {"w.yml", 2, 1});
  ASSERT_FALSE(lexed);
  EXPECT_EQ(lexed.error().where.column, 6);
  // Without a location the column still counts from 1.
  auto bare = Expression::parse("contains('a')");
  ASSERT_FALSE(bare);
  EXPECT_EQ(bare.error().where.column, 1);
}

TEST(Errors, LongExpressionsAreCutInTheMessage) {
  std::string text = "'" + std::string(1000, 'x') + "' ==";
  auto parsed = Expression::parse(text);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().where.column, 1006);  // the end, after "=="
  EXPECT_LT(parsed.error().message.size(), 300u);
  EXPECT_NE(parsed.error().message.find("xxx...'"), std::string::npos);
}

TEST(Errors, EvaluationErrorsPointAtTheCall) {
  auto parsed = Expression::parse("false || format('{1}')", {"w.yml", 1, 5});
  ASSERT_TRUE(parsed);
  auto value = parsed->evaluate(Context{});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().where.column, 14);
  EXPECT_NE(value.error().message.find("index 1 but only 0 arguments follow"), std::string::npos);
}

TEST(Limits, DeepNestingIsAnErrorNotACrash) {
  std::string groups = std::string(10000, '(') + "1" + std::string(10000, ')');
  auto nested = Expression::parse(groups);
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("nested too deeply"), std::string::npos);

  EXPECT_FALSE(Expression::parse(std::string(1000, '!') + "true"));
  std::string indexes;
  for (int i = 0; i < 1000; ++i) indexes += "github[";
  indexes += "1" + std::string(1000, ']');
  auto deep_index = Expression::parse(indexes);
  ASSERT_FALSE(deep_index);
  EXPECT_NE(deep_index.error().message.find("nested too deeply"), std::string::npos);

  std::string chain = "1";
  for (int i = 0; i < 1000; ++i) chain += " == 1";
  EXPECT_FALSE(Expression::parse(chain));

  std::string calls;
  for (int i = 0; i < 500; ++i) calls += "toJSON(";
  calls += "1" + std::string(500, ')');
  EXPECT_FALSE(Expression::parse(calls));

  // Up to the limit of 50, nesting parses and evaluates; one more is refused.
  auto nested_calls = [](int levels) {
    std::string text;
    for (int i = 0; i < levels; ++i) text += "contains(";
    text += "'e'";  // contains(contains('e', 'e'), 'e'): 'true' contains 'e'
    for (int i = 0; i < levels; ++i) text += ", 'e')";
    return text;
  };
  auto deepest = Expression::parse(nested_calls(50));
  ASSERT_TRUE(deepest) << deepest.error().to_string();
  EXPECT_EQ(*deepest->evaluate(Context{}), Value(true));
  EXPECT_FALSE(Expression::parse(nested_calls(51)));

  // Moderate nesting is fine.
  EXPECT_TRUE(Expression::parse(std::string(20, '(') + "1" + std::string(20, ')')));
  EXPECT_TRUE(Expression::parse(std::string(20, '!') + "true"));
}

TEST(Limits, LongFlatExpressionsAreFine) {
  std::string conjunction = "true";
  for (int i = 0; i < 5000; ++i) conjunction += " && true";
  auto parsed = Expression::parse(conjunction);
  ASSERT_TRUE(parsed) << parsed.error().to_string();
  EXPECT_EQ(*parsed->evaluate(Context{}), Value(true));

  std::string path = "github";
  for (int i = 0; i < 5000; ++i) path += ".a";
  auto access = Expression::parse(path);
  ASSERT_TRUE(access);
  EXPECT_TRUE(access->evaluate(Context{})->is_null());
}

TEST(Limits, SizeAndArgumentsAndJsonDepth) {
  EXPECT_FALSE(Expression::parse("'" + std::string(70000, 'x') + "'"));
  std::string many = "format('{0}'";
  for (int i = 0; i < 300; ++i) many += ", 1";
  many += ")";
  auto too_many = Expression::parse(many);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("too many function arguments"), std::string::npos);

  auto deep_json =
      Expression::parse("fromJSON('" + std::string(1000, '[') + std::string(1000, ']') + "')");
  ASSERT_TRUE(deep_json);
  auto value = deep_json->evaluate(Context{});
  ASSERT_FALSE(value);
  EXPECT_NE(value.error().message.find("nested deeper than"), std::string::npos);
}

TEST(Status, UsesStatusFunction) {
  EXPECT_TRUE(Expression::parse("success()")->uses_status_function());
  EXPECT_TRUE(Expression::parse("github.ref == 'x' || ALWAYS()")->uses_status_function());
  EXPECT_TRUE(Expression::parse("!cancelled()")->uses_status_function());
  EXPECT_TRUE(Expression::parse("format('{0}', failure())")->uses_status_function());
  EXPECT_FALSE(Expression::parse("github.ref == 'success()'")->uses_status_function());
  EXPECT_FALSE(Expression::parse("contains(github.ref, 'x')")->uses_status_function());
}

TEST(HashFiles, CallsTheProviderWithEveryPattern) {
  Context context;
  std::vector<std::string> seen;
  context.hash_files = [&](const std::vector<std::string>& patterns) -> Result<std::string> {
    seen = patterns;
    return std::string("d41d8cd9");
  };
  auto parsed = Expression::parse("format('deps-{0}', hashFiles('**/go.sum', 42))");
  ASSERT_TRUE(parsed);
  auto value = parsed->evaluate(context);
  ASSERT_TRUE(value) << value.error().to_string();
  EXPECT_EQ(*value, Value("deps-d41d8cd9"));
  EXPECT_EQ(seen, (std::vector<std::string>{"**/go.sum", "42"}));
}

TEST(HashFiles, ProviderErrorsGetTheExpressionsLocation) {
  Context context;
  context.hash_files = [](const std::vector<std::string>&) -> Result<std::string> {
    return fail(ErrorCode::io_error, "cannot read workspace");
  };
  auto parsed = Expression::parse("hashFiles('x')", {"w.yml", 3, 4});
  auto value = parsed->evaluate(context);
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().code, ErrorCode::io_error);
  EXPECT_EQ(value.error().where.line, 3);
  EXPECT_EQ(value.error().where.column, 4);
}

TEST(Expression, EvaluateTruthyAndTextAvoidCopies) {
  Context context;
  context.contexts = Value::parse(R"({"github": {"event": {"big": [1, 2, 3]}, "n": 0}})");
  auto event = Expression::parse("github.event");
  EXPECT_TRUE(*event->evaluate_truthy(context));
  EXPECT_EQ(*event->evaluate_text(context), "Object");
  EXPECT_FALSE(*Expression::parse("github.n")->evaluate_truthy(context));
  EXPECT_EQ(Expression::parse(" github.n ")->source(), " github.n ");
}

TEST(Expression, ValuesAreCopiedOutOfTheContexts) {
  Context context;
  context.contexts = Value::parse(R"({"env": {"A": "x"}})");
  auto parsed = Expression::parse("env.A");
  auto value = parsed->evaluate(context);
  context.contexts["env"]["A"] = "changed";
  EXPECT_EQ(*value, Value("x"));
  EXPECT_EQ(*parsed->evaluate(context), Value("changed"));
}

TEST(Expression, DefaultConstructedIsAnErrorNotACrash) {
  Expression empty;
  EXPECT_FALSE(empty.evaluate(Context{}));
}

}  // namespace
}  // namespace kiln::expr
