// Fuzz target for the expression language: any input, as a template, a condition and a bare
// expression, is parsed and evaluated against a small fixed context. Must never crash, hang
// or throw; errors are fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kiln/workflow/expr/expr.h"

namespace {

const kiln::expr::Context& fixed_context() {
  static const kiln::expr::Context context = [] {
    kiln::expr::Context c;
    c.contexts = kiln::expr::Value::parse(R"({
      "github": {"event_name": "push", "ref": "refs/heads/main", "run_number": 7,
                 "event": {"commits": [{"id": "a", "n": 1}, {"id": "b", "n": 2}],
                           "labels": [{"name": "gpu"}], "nested": {"x": {"y": [1, [2, [3]]]}}}},
      "env": {"A": "1", "EMPTY": "", "HEX": "0x10"},
      "matrix": {"os": "linux", "gpus": 2, "list": ["a", "b", null, true, 1.5]},
      "steps": {"s-1": {"outputs": {"json": "{\"k\": [1, 2]}"}, "outcome": "success"}},
      "needs": {"build": {"result": "success"}},
      "inputs": {"flag": true, "none": null}
    })");
    c.failed = false;
    c.hash_files = [](const std::vector<std::string>& patterns) -> kiln::Result<std::string> {
      if (patterns.size() > 3) return kiln::fail(kiln::ErrorCode::io_error, "too many");
      return std::string("0123abcd");
    };
    return c;
  }();
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto& context = fixed_context();
  kiln::SourceLocation where{"fuzz.yml", 1, 1};

  if (auto value = kiln::expr::evaluate_template(text, context, where)) {
    (void)kiln::expr::to_text(*value);
    (void)kiln::expr::truthy(*value);
  }
  (void)kiln::expr::check_template(text, where);
  (void)kiln::expr::evaluate_condition(text, context, where);
  if (auto parsed = kiln::expr::Expression::parse(text, where)) {
    (void)parsed->uses_status_function();
    if (auto value = parsed->evaluate(context)) {
      (void)kiln::expr::to_text(*value);
      (void)kiln::expr::to_number(*value);
      (void)kiln::expr::loose_equals(*value, *value);
      (void)value->dump(-1, ' ', false, kiln::expr::Value::error_handler_t::replace);
    }
  } else {
    (void)parsed.error().to_string();
  }
  return 0;
}
