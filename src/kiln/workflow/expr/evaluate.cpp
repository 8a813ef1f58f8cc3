// Evaluation of a parsed expression against the contexts, and the built-in functions.
#include <cmath>

#include "kiln/workflow/expr/syntax.h"

namespace kiln::expr {
namespace {

const Value k_null;
const Value k_true(true);
const Value k_false(false);

// A value during evaluation: a reference into the contexts or into the syntax tree where
// possible (no copy, and the identity that GitHub's object equality needs), or a value this
// evaluation made, kept alive by `holder`. The result of a `*` filter is a list of references
// (`items`), on which a further `.name` or `[i]` applies to every element; it is copied into a
// real array only when something needs the whole value.
struct Ref {
  mutable std::shared_ptr<const void> holder;
  mutable const Value* value = &k_null;
  mutable std::shared_ptr<const std::vector<const Value*>> items;

  bool filtered() const { return items != nullptr; }
  const Value& operator*() const {
    if (items) materialize();
    return *value;
  }
  const Value* operator->() const { return &**this; }

 private:
  void materialize() const {
    auto array = std::make_shared<Value>(Value::array());
    array->get_ref<Value::array_t&>().reserve(items->size());
    for (const Value* item : *items) array->push_back(*item);
    value = array.get();
    holder = std::move(array);  // the items are copies now
    items.reset();
  }
};

Ref borrow(const Value& value) { return Ref{nullptr, &value, nullptr}; }
Ref boolean(bool value) { return borrow(value ? k_true : k_false); }
Ref own(Value value) {
  auto holder = std::make_shared<const Value>(std::move(value));
  const Value* pointer = holder.get();
  return Ref{std::move(holder), pointer, nullptr};
}
// A filter result whose items point into whatever `from` keeps alive.
Ref filter_result(const Ref& from, std::vector<const Value*> items) {
  return Ref{from.holder, &k_null,
             std::make_shared<const std::vector<const Value*>>(std::move(items))};
}

bool ref_truthy(const Ref& ref) { return ref.filtered() || truthy(*ref); }

// Case-insensitive property lookup (exact spelling first: the common case is cheap).
const Value* find_property(const Value& object, std::string_view name) {
  if (!object.is_object()) return nullptr;
  if (auto it = object.find(name); it != object.end()) return &*it;
  for (auto it = object.begin(); it != object.end(); ++it)
    if (equals_ignore_case(it.key(), name)) return &it.value();
  return nullptr;
}

// `base[index]` on a value that is not a filter result; nullptr when there is nothing there.
const Value* find_index(const Value& base, const Value& index) {
  if (base.is_array()) {
    double number = to_number(index);
    if (std::isnan(number) || number < 0 || std::trunc(number) != number ||
        number >= static_cast<double>(base.size()))
      return nullptr;
    return &base[static_cast<std::size_t>(number)];
  }
  if (base.is_object()) {
    if (index.is_string()) return find_property(base, index.get_ref<const std::string&>());
    if (index.is_array() || index.is_object()) return nullptr;
    return find_property(base, to_text(index));
  }
  return nullptr;
}

bool contains_ignore_case(std::string_view haystack, std::string_view needle) {
  return to_lower(haystack).find(to_lower(needle)) != std::string::npos;
}

bool starts_with_ignore_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && equals_ignore_case(text.substr(0, prefix.size()), prefix);
}

bool ends_with_ignore_case(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         equals_ignore_case(text.substr(text.size() - suffix.size()), suffix);
}

// toJSON prints integral floats as integers, as GitHub does (3, not 3.0).
Value normalize_numbers(const Value& value) {
  if (value.is_number_float()) {
    double number = value.get<double>();
    if (std::isfinite(number) && std::trunc(number) == number && std::fabs(number) < 9.0e15)
      return Value(static_cast<std::int64_t>(number));
    return value;
  }
  if (value.is_array()) {
    Value out = Value::array();
    for (const auto& element : value) out.push_back(normalize_numbers(element));
    return out;
  }
  if (value.is_object()) {
    Value out = Value::object();
    for (auto it = value.begin(); it != value.end(); ++it)
      out[it.key()] = normalize_numbers(it.value());
    return out;
  }
  return value;
}

// Deepest nesting of [ and { in a JSON text (strings skipped), to refuse hostile input before
// the parser and the recursive printer see it.
int json_depth(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

std::string shorten(std::string_view text) {
  constexpr std::size_t k_shown = 60;
  if (text.size() <= k_shown) return std::string(text);
  return fmt::format("{}...", text.substr(0, k_shown));
}

class Evaluator {
 public:
  Evaluator(std::string_view source, const SourceLocation& where, const Context& context)
      : source_(source), where_(where), context_(context) {}

  Result<Ref> eval(const Node& node) {
    switch (node.kind) {
      case NodeKind::literal:
        return borrow(node.value);
      case NodeKind::context: {
        const Value* found = find_property(context_.contexts, node.name);
        return found ? borrow(*found) : borrow(k_null);
      }
      case NodeKind::access:
        return eval_access(node);
      case NodeKind::not_op: {
        KILN_TRY(auto operand, eval(*node.children[0]));
        return boolean(!ref_truthy(operand));
      }
      case NodeKind::compare: {
        KILN_TRY(auto left, eval(*node.children[0]));
        KILN_TRY(auto right, eval(*node.children[1]));
        return boolean(loose_compare(*left, *right, node.op));
      }
      case NodeKind::and_op:
      case NodeKind::or_op: {
        // Returns the deciding operand itself, not a boolean, and stops there.
        bool stop_when = node.kind == NodeKind::or_op;
        Ref last;
        for (const auto& child : node.children) {
          KILN_TRY(last, eval(*child));
          if (ref_truthy(last) == stop_when) break;
        }
        return last;
      }
      case NodeKind::call:
        return eval_call(node);
    }
    return error(node.offset, "unknown syntax node");
  }

 private:
  std::unexpected<Error> error(std::size_t offset, std::string_view message) const {
    return expression_error(where_, source_, offset, message);
  }

  Result<Ref> eval_access(const Node& node) {
    KILN_TRY(auto current, eval(*node.children[0]));
    for (const auto& step : node.steps) {
      if (step.kind == AccessStep::Kind::wildcard) {
        current = wildcard(current);
        continue;
      }
      Ref index;
      if (step.kind == AccessStep::Kind::index) {
        KILN_TRY(index, eval(*step.index));
      }
      auto lookup = [&](const Value& base) -> const Value* {
        return step.kind == AccessStep::Kind::property ? find_property(base, step.name)
                                                       : find_index(base, *index);
      };
      if (!current.filtered()) {
        const Value* found = lookup(*current);
        if (!found) {
          current = borrow(k_null);
        } else {
          current.value = found;  // same holder: `found` lies inside it
        }
        continue;
      }
      std::vector<const Value*> out;
      for (const Value* element : *current.items)
        if (const Value* found = lookup(*element)) out.push_back(found);
      current = filter_result(current, std::move(out));
    }
    return current;
  }

  // `.*` / `[*]`: the elements of an array or the values of an object; on a filter result,
  // the same one level down (flattening).
  static Ref wildcard(const Ref& current) {
    std::vector<const Value*> out;
    auto add_members = [&](const Value& value) {
      if (value.is_array() || value.is_object())
        for (const auto& member : value) out.push_back(&member);
    };
    if (current.filtered()) {
      for (const Value* element : *current.items) add_members(*element);
    } else {
      add_members(*current);
    }
    return filter_result(current, std::move(out));
  }

  Result<Ref> eval_call(const Node& node) {
    switch (node.function) {
      case Function::success:
        return boolean(!context_.failed && !context_.cancelled);
      case Function::always:
        return boolean(true);
      case Function::cancelled:
        return boolean(context_.cancelled);
      case Function::failure:
        return boolean(context_.failed);
      default:
        break;
    }
    std::vector<Ref> args;
    args.reserve(node.children.size());
    for (const auto& child : node.children) {
      KILN_TRY(auto arg, eval(*child));
      args.push_back(std::move(arg));
    }
    switch (node.function) {
      case Function::contains:
        if (args[0].filtered()) {
          for (const Value* element : *args[0].items)
            if (loose_equals(*element, *args[1])) return boolean(true);
          return boolean(false);
        }
        if (args[0]->is_array()) {
          for (const auto& element : *args[0])
            if (loose_equals(element, *args[1])) return boolean(true);
          return boolean(false);
        }
        return boolean(contains_ignore_case(to_text(*args[0]), to_text(*args[1])));
      case Function::starts_with:
        return boolean(starts_with_ignore_case(to_text(*args[0]), to_text(*args[1])));
      case Function::ends_with:
        return boolean(ends_with_ignore_case(to_text(*args[0]), to_text(*args[1])));
      case Function::format:
        return format(node, args);
      case Function::join: {
        std::string separator = args.size() > 1 ? to_text(*args[1]) : ",";
        std::string out;
        bool first = true;
        auto add = [&](const Value& element) {
          if (!first) out += separator;
          first = false;
          out += to_text(element);
        };
        if (args[0].filtered()) {
          for (const Value* element : *args[0].items) add(*element);
        } else if (args[0]->is_array()) {
          for (const auto& element : *args[0]) add(element);
        } else {
          return own(Value(to_text(*args[0])));
        }
        return own(Value(std::move(out)));
      }
      case Function::to_json:
        return own(Value(
            normalize_numbers(*args[0]).dump(2, ' ', false, Value::error_handler_t::replace)));
      case Function::from_json:
        return from_json(node, *args[0]);
      case Function::hash_files: {
        if (!context_.hash_files) return error(node.offset, "hashFiles() is not available here");
        std::vector<std::string> patterns;
        for (const auto& arg : args) patterns.push_back(to_text(*arg));
        auto hash = context_.hash_files(patterns);
        if (!hash) {
          Error failure = std::move(hash.error());
          if (failure.where.empty()) failure.where = advance(where_, source_, node.offset);
          return std::unexpected(std::move(failure));
        }
        return own(Value(std::move(*hash)));
      }
      default:
        return error(node.offset, "unknown function");
    }
  }

  // format('{0} and {1}', a, b): `{{` and `}}` are literal braces; any other brace, or an
  // index past the arguments, is an error.
  Result<Ref> format(const Node& node, const std::vector<Ref>& args) {
    std::string pattern = to_text(*args[0]);
    std::string out;
    out.reserve(pattern.size());
    auto invalid = [&](std::string_view why) {
      return error(node.offset,
                   fmt::format("format: invalid format string '{}': {}", shorten(pattern), why));
    };
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      char c = pattern[i];
      if (c == '{') {
        if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
          out += '{';
          ++i;
          continue;
        }
        std::size_t close = pattern.find('}', i + 1);
        std::string_view digits = close == std::string::npos
                                      ? std::string_view{}
                                      : std::string_view(pattern).substr(i + 1, close - i - 1);
        if (digits.empty() || digits.size() > 9 ||
            digits.find_first_not_of("0123456789") != std::string_view::npos)
          return invalid(fmt::format("bad placeholder at offset {}", i));
        std::size_t index = std::stoul(std::string(digits));
        if (index + 1 >= args.size())
          return invalid(fmt::format("index {} but only {} argument{} follow", index,
                                     args.size() - 1, args.size() == 2 ? "" : "s"));
        out += to_text(*args[index + 1]);
        i = close;
      } else if (c == '}') {
        if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
          out += '}';
          ++i;
          continue;
        }
        return invalid(fmt::format("unmatched '}}' at offset {}", i));
      } else {
        out += c;
      }
    }
    return own(Value(std::move(out)));
  }

  Result<Ref> from_json(const Node& node, const Value& arg) {
    std::string text = to_text(arg);
    if (json_depth(text) > k_max_json_depth)
      return error(node.offset, fmt::format("fromJSON: the JSON is nested deeper than {} levels",
                                            k_max_json_depth));
    Value parsed;
    try {
      parsed = Value::parse(text, nullptr, false);
    } catch (const std::exception&) {
      parsed = Value(Value::value_t::discarded);
    }
    if (parsed.is_discarded())
      return error(node.offset, fmt::format("fromJSON: '{}' is not valid JSON", shorten(text)));
    return own(std::move(parsed));
  }

  std::string_view source_;
  const SourceLocation& where_;
  const Context& context_;
};

}  // namespace

Result<Value> Expression::evaluate(const Context& context) const {
  if (!root_) return fail(ErrorCode::internal, "evaluating an expression that was never parsed");
  Evaluator evaluator(source_, where_, context);
  KILN_TRY(auto result, evaluator.eval(*root_));
  return *result;
}

Result<bool> Expression::evaluate_truthy(const Context& context) const {
  if (!root_) return fail(ErrorCode::internal, "evaluating an expression that was never parsed");
  Evaluator evaluator(source_, where_, context);
  KILN_TRY(auto result, evaluator.eval(*root_));
  return truthy(*result);
}

Result<std::string> Expression::evaluate_text(const Context& context) const {
  if (!root_) return fail(ErrorCode::internal, "evaluating an expression that was never parsed");
  Evaluator evaluator(source_, where_, context);
  KILN_TRY(auto result, evaluator.eval(*root_));
  return to_text(*result);
}

}  // namespace kiln::expr
