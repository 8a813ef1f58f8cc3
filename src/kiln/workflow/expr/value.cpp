// GitHub's coercions: truthiness, text, numbers and loose comparison.
#include <cmath>
#include <limits>

#include "kiln/workflow/expr/syntax.h"

namespace kiln::expr {

bool truthy(const Value& value) {
  switch (value.type()) {
    case Value::value_t::null:
    case Value::value_t::discarded:
      return false;
    case Value::value_t::boolean:
      return value.get<bool>();
    case Value::value_t::number_integer:
      return value.get<std::int64_t>() != 0;
    case Value::value_t::number_unsigned:
      return value.get<std::uint64_t>() != 0;
    case Value::value_t::number_float: {
      double number = value.get<double>();
      return number != 0 && !std::isnan(number);
    }
    case Value::value_t::string:
      return !value.get_ref<const std::string&>().empty();
    default:  // arrays, objects, binary: truthy even when empty
      return true;
  }
}

std::string number_text(double number) {
  if (std::isnan(number)) return "NaN";
  if (std::isinf(number)) return number > 0 ? "Infinity" : "-Infinity";
  if (number == 0) return "0";  // also -0
  if (std::trunc(number) == number && std::fabs(number) < 1e15)
    return fmt::format("{}", static_cast<std::int64_t>(number));
  // 15 significant digits, as GitHub's runner prints numbers; exponents past that.
  return fmt::format("{:.15g}", number);
}

std::string to_text(const Value& value) {
  switch (value.type()) {
    case Value::value_t::null:
    case Value::value_t::discarded:
      return {};
    case Value::value_t::boolean:
      return value.get<bool>() ? "true" : "false";
    case Value::value_t::number_integer:
      return fmt::format("{}", value.get<std::int64_t>());
    case Value::value_t::number_unsigned:
      return fmt::format("{}", value.get<std::uint64_t>());
    case Value::value_t::number_float:
      return number_text(value.get<double>());
    case Value::value_t::string:
      return value.get<std::string>();
    case Value::value_t::array:
      return "Array";
    default:
      return "Object";
  }
}

double to_number(const Value& value) {
  switch (value.type()) {
    case Value::value_t::null:
      return 0;
    case Value::value_t::boolean:
      return value.get<bool>() ? 1 : 0;
    case Value::value_t::number_integer:
      return static_cast<double>(value.get<std::int64_t>());
    case Value::value_t::number_unsigned:
      return static_cast<double>(value.get<std::uint64_t>());
    case Value::value_t::number_float:
      return value.get<double>();
    case Value::value_t::string: {
      const auto& text = value.get_ref<const std::string&>();
      if (text.find_first_not_of(" \t\r\n\f\v") == std::string::npos) return 0;
      double number = 0;
      if (parse_number(text, number)) return number;
      return std::numeric_limits<double>::quiet_NaN();
    }
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

ValueKind kind_of(const Value& value) {
  switch (value.type()) {
    case Value::value_t::boolean:
      return ValueKind::boolean;
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
    case Value::value_t::number_float:
      return ValueKind::number;
    case Value::value_t::string:
      return ValueKind::string;
    case Value::value_t::array:
      return ValueKind::array;
    case Value::value_t::object:
    case Value::value_t::binary:
      return ValueKind::object;
    default:
      return ValueKind::null;
  }
}

int compare_ignore_case(std::string_view a, std::string_view b) {
  std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    auto x = static_cast<unsigned char>(a[i]);
    auto y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x = static_cast<unsigned char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<unsigned char>(y - 'A' + 'a');
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

bool loose_equals(const Value& left, const Value& right) {
  ValueKind kind = kind_of(left);
  if (kind != kind_of(right)) return to_number(left) == to_number(right);  // NaN: false
  switch (kind) {
    case ValueKind::null:
      return true;
    case ValueKind::boolean:
      return left.get<bool>() == right.get<bool>();
    case ValueKind::number:
      return to_number(left) == to_number(right);
    case ValueKind::string:
      return equals_ignore_case(left.get_ref<const std::string&>(),
                                right.get_ref<const std::string&>());
    default:
      return &left == &right;  // the same instance
  }
}

bool loose_compare(const Value& left, const Value& right, CompareOp op) {
  switch (op) {
    case CompareOp::equal:
      return loose_equals(left, right);
    case CompareOp::not_equal:
      return !loose_equals(left, right);
    default:
      break;
  }
  ValueKind kind = kind_of(left);
  int order = 0;
  if (kind == ValueKind::string && kind_of(right) == ValueKind::string) {
    order = compare_ignore_case(left.get_ref<const std::string&>(),
                                right.get_ref<const std::string&>());
  } else {
    double a = to_number(left);
    double b = to_number(right);
    if (std::isnan(a) || std::isnan(b)) return false;
    order = a < b ? -1 : (a > b ? 1 : 0);
  }
  switch (op) {
    case CompareOp::less:
      return order < 0;
    case CompareOp::less_equal:
      return order <= 0;
    case CompareOp::greater:
      return order > 0;
    default:
      return order >= 0;
  }
}

}  // namespace kiln::expr
