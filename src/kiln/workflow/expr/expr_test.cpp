// The expression language as a table: expression, expected value (JSON) or expected error.
// Expected values follow GitHub's documented semantics ("Evaluate expressions in workflows and
// actions"); the shared contexts are below.
#include "kiln/workflow/expr/expr.h"

#include <cmath>

#include <gtest/gtest.h>

namespace kiln::expr {
namespace {

constexpr std::string_view k_contexts = R"({
  "github": {
    "event_name": "push", "ref": "refs/heads/main", "sha": "abc123", "run_number": 42,
    "repository": "octo/Kiln",
    "event": {
      "commits": [
        {"id": "c1", "message": "fix", "author": {"name": "Ann"}},
        {"id": "c2", "message": "feat", "author": {"name": "Bob"}}
      ],
      "pull_request": null,
      "labels": [{"name": "bug"}, {"name": "GPU"}],
      "head_commit": {"message": "Fix [skip ci]"}
    }
  },
  "env": {"MY_VAR": "hello", "EMPTY": "", "NUM": "42", "HEX": "0x1F"},
  "steps": {
    "my-step": {"outputs": {"x": "1", "json": "{\"a\": [1, 2]}"}, "outcome": "success"},
    "other_step": {"outputs": {}, "outcome": "failure"}
  },
  "matrix": {"os": "ubuntu-latest", "cuda": "12.4", "gpus": 2, "flags": ["a", "b"]},
  "needs": {
    "build": {"result": "success", "outputs": {"version": "1.2.3"}},
    "test": {"result": "failure", "outputs": {"version": "1.2.4"}}
  },
  "inputs": {"debug": true, "count": 3, "name": "World", "ratio": 0.5, "nothing": null},
  "vars": {"Mixed_Case": "yes"},
  "secrets": {"TOKEN": "s3cret"},
  "runner": {"os": "Linux", "arch": "X64"},
  "job": {"status": "success"},
  "strategy": {"fail-fast": true, "job-index": 0}
})";

// expected: JSON text; "#NaN", "#Inf", "#-Inf" for the numbers JSON cannot write;
// "error: TEXT" for an error whose message contains TEXT.
struct Case {
  std::string_view expression;
  std::string_view expected;
};

const Case k_cases[] = {
    // Literals.
    {"null", "null"},
    {"true", "true"},
    {"false", "false"},
    {"42", "42"},
    {"-7", "-7"},
    {"3.25", "3.25"},
    {"-0.5", "-0.5"},
    {".5", "0.5"},
    {"0x1F", "31"},
    {"0XfF", "255"},
    {"0o17", "15"},
    {"1e3", "1000"},
    {"2.5E-1", "0.25"},
    {"-1e2", "-100"},
    {"NaN", "#NaN"},
    {"Infinity", "#Inf"},
    {"-Infinity", "#-Inf"},
    {"'hello'", R"("hello")"},
    {"'it''s'", R"("it's")"},
    {"''", R"("")"},
    {"''''", R"("'")"},
    {"'a}}b'", R"("a}}b")"},
    {"  true  ", "true"},
    {R"("x")", "error: single quotes"},
    {"'abc", "error: unterminated string"},
    {"1.2.3", "error: invalid number '1.2.3'"},
    {"12abc", "error: invalid number '12abc'"},
    {"True", "error: unrecognized named value 'True'"},
    // Contexts: property access, index, case-insensitive names, missing → null.
    {"github.event_name", R"("push")"},
    {"github.EVENT_NAME", R"("push")"},
    {"GITHUB.event_name", R"("push")"},
    {"github['event_name']", R"("push")"},
    {"github['EVENT_NAME']", R"("push")"},
    {"github.run_number", "42"},
    {"github.event.commits[0].id", R"("c1")"},
    {"github.event.commits[1].author.name", R"("Bob")"},
    {"github.event.commits['1'].id", R"("c2")"},
    {"github.event.commits[2]", "null"},
    {"github.event.commits[-1]", "null"},
    {"github.event.commits[1.5]", "null"},
    {"matrix.flags[null]", R"("a")"},
    {"matrix.flags[true]", R"("b")"},
    {"matrix.flags[' 0x01 ']", R"("b")"},
    {"matrix.flags['x']", "null"},
    {"matrix.flags[matrix.flags]", "null"},
    {"github.missing", "null"},
    {"github.missing.deeper.still", "null"},
    {"github.event.pull_request.number", "null"},
    {"inputs.count[0]", "null"},
    {"runner.os[0]", "null"},
    {"runner", R"({"os": "Linux", "arch": "X64"})"},
    {"steps.my-step.outputs.x", R"("1")"},
    {"steps['my-step'].outcome", R"("success")"},
    {"steps.other_step.outcome", R"("failure")"},
    {"steps.other_step.outputs.x", "null"},
    {"env.MY_VAR", R"("hello")"},
    {"env.my_var", R"("hello")"},
    {"vars.mixed_case", R"("yes")"},
    {"secrets.TOKEN", R"("s3cret")"},
    {"job.status", R"("success")"},
    {"strategy.fail-fast", "true"},
    {"strategy.job-index", "0"},
    {"matrix.gpus", "2"},
    {"matrix.flags[1]", R"("b")"},
    {"needs.build.outputs.version", R"("1.2.3")"},
    {"inputs.debug", "true"},
    {"inputs.nothing", "null"},
    {"fromJSON('{\"1\": \"one\"}')[1]", R"("one")"},
    {"(github).ref", R"("refs/heads/main")"},
    // Object filters.
    {"github.event.commits.*.id", R"(["c1", "c2"])"},
    {"github.event.commits[*].id", R"(["c1", "c2"])"},
    {"github.event.commits.*.author.name", R"(["Ann", "Bob"])"},
    {"github.event.labels.*.name", R"(["bug", "GPU"])"},
    {"needs.*.result", R"(["success", "failure"])"},
    {"github.event.commits.*.missing", "[]"},
    {"github.event_name.*", "[]"},
    {"matrix.flags.*", R"(["a", "b"])"},
    {"fromJSON('[[1,2],[3]]').*.*", "[1, 2, 3]"},
    {"fromJSON('[[1,2],[3]]').*[0]", "[1, 3]"},
    {R"(fromJSON('{"a": {"x": 1}, "b": {"x": 2}}').*.x)", "[1, 2]"},
    {"!github.event.commits.*.missing", "false"},
    {"github.event.commits.*.id == github.event.commits.*.id", "false"},
    {"github.event.commits.*.id[0]", "[]"},
    {"github.event.commits.*.author", R"([{"name": "Ann"}, {"name": "Bob"}])"},
    {"format('{0}', matrix.flags.*)", R"("Array")"},
    {"github.event.commits.*.id || 'none'", R"(["c1", "c2"])"},
    {"join(needs.*.outputs.version, ' ')", R"("1.2.3 1.2.4")"},
    {"contains(needs.*.result, 'FAILURE')", "true"},
    {"contains(needs.*.result, 'cancelled')", "false"},
    // Unknown names and broken accesses.
    {"foo.bar", "error: unrecognized named value 'foo'"},
    {"github.", "error: expected a property name after '.'"},
    {"github..ref", "error: expected a property name after '.'"},
    {"github.event.commits[0", "error: unexpected end of expression"},
    {"github['event_name'", "error: unexpected end of expression"},
    // Not.
    {"!true", "false"},
    {"!false", "true"},
    {"!!'x'", "true"},
    {"!0", "true"},
    {"!-0", "true"},
    {"!''", "true"},
    {"!null", "true"},
    {"!'0'", "false"},
    {"!'false'", "false"},
    {"!NaN", "true"},
    {"!fromJSON('[]')", "false"},
    {"!fromJSON('{}')", "false"},
    // && and || return an operand and short-circuit.
    {"true && 'yes'", R"("yes")"},
    {"'' && 'yes'", R"("")"},
    {"0 || 'default'", R"("default")"},
    {"'set' || 'default'", R"("set")"},
    {"null || null", "null"},
    {"false || 0", "0"},
    {"inputs.name || 'x'", R"("World")"},
    {"env.EMPTY || 'fallback'", R"("fallback")"},
    {"1 && 2 && 3", "3"},
    {"1 && 0 && 3", "0"},
    {"0 || '' || null || 'last'", R"("last")"},
    {"matrix.flags && 1", "1"},
    {"false && fromJSON('bad')", "false"},
    {"true || fromJSON('bad')", "true"},
    {"false || fromJSON('bad')", "error: fromJSON: 'bad' is not valid JSON"},
    // Precedence.
    {"true || false && false", "true"},
    {"(true || false) && false", "false"},
    {"!true || true", "true"},
    {"!(true || true)", "false"},
    {"1 < 2 == true", "true"},
    {"2 == 2 && 3 > 1", "true"},
    {"1 == 1 == 1", "true"},
    {"1 < 2 < 3", "true"},
    {"3 > 2 > 1", "false"},
    {"github.event_name == 'push' && contains(github.ref, 'main')", "true"},
    // Equality with coercion.
    {"1 == 1", "true"},
    {"1 == 1.0", "true"},
    {"1 == '1'", "true"},
    {"'1.0' == 1", "true"},
    {"'abc' == 'ABC'", "true"},
    {"'abc' != 'abd'", "true"},
    {"'abc' != 'ABC'", "false"},
    {"null == 0", "true"},
    {"null == false", "true"},
    {"null == ''", "true"},
    {"null == null", "true"},
    {"true == 1", "true"},
    {"true == '1'", "true"},
    {"false == '0'", "true"},
    {"true == 2", "false"},
    {"'' == 0", "true"},
    {"'abc' == 0", "false"},
    {"'0x10' == 16", "true"},
    {"' 0xFF ' == 255", "true"},
    {"' 0o10 ' == 8", "true"},
    {"' +12.5 ' == 12.5", "true"},
    {"' -Infinity ' == -Infinity", "true"},
    {"'1,5' == 1.5", "false"},
    {"'1e2' == 100", "true"},
    {"-0 == 0", "true"},
    {"NaN == NaN", "false"},
    {"NaN != NaN", "true"},
    {"'abc' != 0", "true"},
    {"fromJSON('[]') == fromJSON('[]')", "false"},
    {"fromJSON('{}') == fromJSON('{}')", "false"},
    {"fromJSON('[]') == 0", "false"},
    {"fromJSON('[]') != 0", "true"},
    {"github.event == github.event", "true"},
    {"github.event.commits[0] == github.event.commits[0]", "true"},
    {"github.event.commits[0] == github.event.commits[1]", "false"},
    {"inputs.count == '3'", "true"},
    {"inputs.debug == true", "true"},
    {"inputs.debug == 'true'", "false"},
    {"env.NUM == 42", "true"},
    {"env.HEX == 31", "true"},
    {"matrix.cuda == '12.4'", "true"},
    {"matrix.cuda == 12.4", "true"},
    {"github.missing == null", "true"},
    // Ordering.
    {"1 < 2", "true"},
    {"2 <= 2", "true"},
    {"3 > 4", "false"},
    {"3 >= 3", "true"},
    {"'a' < 'b'", "true"},
    {"'B' > 'a'", "true"},
    {"'abc' < 'ABD'", "true"},
    {"'abc' <= 'ABC'", "true"},
    {"'abc' < 'abcd'", "true"},
    {"'10' < '9'", "true"},
    {"'10' < 9", "false"},
    {"null < 1", "true"},
    {"true > false", "true"},
    {"'abc' < 1", "false"},
    {"'abc' >= 1", "false"},
    {"NaN < 1", "false"},
    {"NaN >= NaN", "false"},
    {"Infinity > 1e308", "true"},
    {"-Infinity < -1e308", "true"},
    {"fromJSON('[]') < 1", "false"},
    {"inputs.ratio < 1", "true"},
    // contains.
    {"contains('Hello World', 'WORLD')", "true"},
    {"contains('abc', 'd')", "false"},
    {"contains('abc', '')", "true"},
    {"contains(github.event.labels.*.name, 'gpu')", "true"},
    {"contains(github.event.labels.*.name, 'feature')", "false"},
    {"contains(matrix.flags, 'A')", "true"},
    {"contains(fromJSON('[1, 2, 3]'), '2')", "true"},
    {"contains(fromJSON('[1, 2, 3]'), 4)", "false"},
    {"contains(fromJSON('[null]'), null)", "true"},
    {"contains(123, 2)", "true"},
    {"contains(true, 'ru')", "true"},
    {"contains(null, '')", "true"},
    {"contains(github.event.head_commit.message, '[SKIP CI]')", "true"},
    {"CONTAINS('abc', 'B')", "true"},
    {"contains('a')", "error: function 'contains' takes 2 arguments, got 1"},
    {"contains('a', 'b', 'c')", "error: function 'contains' takes 2 arguments, got 3"},
    // startsWith, endsWith.
    {"startsWith('Hello', 'he')", "true"},
    {"startsWith('Hello', 'lo')", "false"},
    {"startsWith(github.ref, 'refs/heads/')", "true"},
    {"startsWith(12345, 12)", "true"},
    {"startsWith('', 'x')", "false"},
    {"endsWith('Hello', 'LO')", "true"},
    {"endsWith('Hello', 'He')", "false"},
    {"endsWith('', '')", "true"},
    {"startswith('abc', 'A')", "true"},
    {"startsWith('a')", "error: function 'startsWith' takes 2 arguments, got 1"},
    // format.
    {"format('{0} {1}', 'Hello', 'World')", R"("Hello World")"},
    {"format('{1}{0}{1}', 'a', 'b')", R"("bab")"},
    {"format('{{0}} is {0}', 'x')", R"("{0} is x")"},
    {"format('}}{{')", R"("}{")"},
    {"format('{0}', null)", R"("")"},
    {"format('{0}-{1}-{2}', true, 1.5, fromJSON('[1]'))", R"("true-1.5-Array")"},
    {"format('{0}', github.run_number)", R"("42")"},
    {"format('plain')", R"("plain")"},
    {"format('{0} {1}', 'a')", "error: index 1 but only 1 argument follow"},
    {"format('{0')", "error: bad placeholder"},
    {"format('{a}', 1)", "error: bad placeholder"},
    {"format('}', 1)", "error: unmatched '}'"},
    {"format()", "error: function 'format' takes at least 1 arguments, got 0"},
    // join.
    {"join(matrix.flags)", R"("a,b")"},
    {"join(matrix.flags, ' + ')", R"("a + b")"},
    {"join(github.event.labels.*.name, ', ')", R"("bug, GPU")"},
    {"join('single', ',')", R"("single")"},
    {R"(join(fromJSON('[1, true, null, "x"]'), '|'))", R"("1|true||x")"},
    {"join(fromJSON('[]'))", R"("")"},
    {"join()", "error: function 'join' takes 1 to 2 arguments, got 0"},
    {"join(1, 2, 3)", "error: function 'join' takes 1 to 2 arguments, got 3"},
    // toJSON, fromJSON.
    {"toJSON('a')", R"("\"a\"")"},
    {"toJSON(1)", R"("1")"},
    {"toJSON(null)", R"("null")"},
    {"toJSON(3.0)", R"("3")"},
    {"toJSON(fromJSON('2.0'))", R"("2")"},
    {"toJSON(runner)", R"("{\n  \"arch\": \"X64\",\n  \"os\": \"Linux\"\n}")"},
    {"toJSON(fromJSON('[]'))", R"("[]")"},
    {"toJSON(matrix.flags)", R"("[\n  \"a\",\n  \"b\"\n]")"},
    {"toJSON(github.event.commits.*.id)", R"("[\n  \"c1\",\n  \"c2\"\n]")"},
    {"toJson(1)", R"("1")"},
    {R"(fromJSON('{"a": [1, 2]}').a[1])", "2"},
    {"fromJSON('true')", "true"},
    {R"(fromJSON('"str"'))", R"("str")"},
    {"fromJSON('null')", "null"},
    {"fromJSON(steps.my-step.outputs.json).a[0]", "1"},
    {"fromJSON(env.NUM)", "42"},
    {"fromJSON(toJSON(matrix.flags))", R"(["a", "b"])"},
    {"FROMJSON('1')", "1"},
    {"fromJSON('')", "error: is not valid JSON"},
    {"fromJSON('{bad')", "error: fromJSON: '{bad' is not valid JSON"},
    {"steps.my-step.outputs.1st", "null"},
    {"fromJSON('{\"1st\": 1}').1st", "1"},
    {"fromJSON(1, 2)", "error: function 'fromJSON' takes 1 argument, got 2"},
    // Status functions (nothing failed, not cancelled) and hashFiles without a workspace.
    {"success()", "true"},
    {"always()", "true"},
    {"cancelled()", "false"},
    {"failure()", "false"},
    {"success(1)", "error: function 'success' takes 0 arguments, got 1"},
    {"hashFiles('**/x')", "error: hashFiles() is not available here"},
    {"hashFiles()", "error: function 'hashFiles' takes at least 1 arguments, got 0"},
    {"unknownFn(1)", "error: unrecognized function 'unknownFn'"},
    // Syntax errors.
    {"true && )", "error: unexpected token ')' in expression 'true && )'"},
    {"", "error: expected an expression"},
    {"(true", "error: unexpected end of expression"},
    {"true)", "error: unexpected token ')'"},
    {"1 = 1", "error: did you mean '=='"},
    {"true & false", "error: did you mean '&&'"},
    {"true | false", "error: did you mean '||'"},
    {"1 2", "error: unexpected token '2'"},
    {"contains('a', 'b',)", "error: unexpected token ')'"},
    {"[1]", "error: unexpected token '['"},
    {"!", "error: unexpected end of expression"},
    {"1 + 1", "error: unexpected character '+'"},
    {"github.event_name ==", "error: unexpected end of expression"},
    {"github.event_name == 'push' 'x'", "error: unexpected token ''x''"},
};

void PrintTo(const Case& c, std::ostream* out) { *out << c.expression; }

Value contexts() {
  static const Value parsed = Value::parse(k_contexts);
  return parsed;
}

// Structural equality where every number compares as a double (3 == 3.0).
bool same(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same(a[i], b[i])) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it)
      if (!b.contains(it.key()) || !same(it.value(), b[it.key()])) return false;
    return true;
  }
  return a == b;
}

class ExprTable : public testing::TestWithParam<Case> {};

TEST_P(ExprTable, Evaluates) {
  const Case& c = GetParam();
  Context context;
  context.contexts = contexts();
  auto parsed = Expression::parse(c.expression);
  Result<Value> result = parsed ? parsed->evaluate(context) : std::unexpected(parsed.error());
  std::string_view expected = c.expected;
  if (expected.starts_with("error: ")) {
    ASSERT_FALSE(result) << c.expression << " gave " << result->dump();
    EXPECT_NE(result.error().message.find(expected.substr(7)), std::string::npos)
        << c.expression << ": " << result.error().message;
    return;
  }
  ASSERT_TRUE(result) << c.expression << ": " << result.error().to_string();
  if (expected == "#NaN") {
    ASSERT_TRUE(result->is_number()) << result->dump();
    EXPECT_TRUE(std::isnan(result->get<double>()));
  } else if (expected == "#Inf" || expected == "#-Inf") {
    ASSERT_TRUE(result->is_number()) << result->dump();
    EXPECT_TRUE(std::isinf(result->get<double>()));
    EXPECT_EQ(result->get<double>() < 0, expected == "#-Inf");
  } else {
    Value want = Value::parse(expected);
    EXPECT_TRUE(same(*result, want))
        << c.expression << " gave " << result->dump() << ", expected " << want.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ExprTable, testing::ValuesIn(k_cases));

TEST(ExprTable, HasAtLeast150Cases) { EXPECT_GE(std::size(k_cases), 150u); }

}  // namespace
}  // namespace kiln::expr
