// strategy.matrix → JSON. Plain scalars that look like numbers or booleans become numbers and
// booleans, as GitHub's do (so `python: [3.10]` is the number 3.1 there, and here too); quoted
// scalars stay strings.
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "kiln/workflow/expr/expr.h"
#include "kiln/workflow/sections.h"

namespace kiln::workflow::detail {

namespace {

// yaml-cpp shares aliased nodes, so `&a [*b, *b]` chains describe huge trees in a few bytes;
// converting stops after this many nodes.
constexpr size_t k_max_matrix_nodes = 100'000;

bool all_of_digits(std::string_view text, int base) {
  if (text.empty()) return false;
  for (char c : text) {
    bool ok = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                         : (c >= '0' && c < static_cast<char>('0' + base));
    if (!ok) return false;
  }
  return true;
}

nlohmann::ordered_json scalar_value(const YAML::Node& node) {
  if (node.IsNull()) return nullptr;
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") return text;  // quoted, a block scalar or explicitly tagged
  if (is_boolean(text)) return text[0] == 't' || text[0] == 'T';
  std::string_view digits = text;
  int base = 10;
  if (digits.starts_with("0x")) {
    base = 16;
    digits.remove_prefix(2);
  } else if (digits.starts_with("0o")) {
    base = 8;
    digits.remove_prefix(2);
  }
  std::string_view unsigned_digits = digits;
  if (base == 10 && !digits.empty() && (digits[0] == '-' || digits[0] == '+'))
    unsigned_digits.remove_prefix(1);
  if (all_of_digits(unsigned_digits, base)) {
    std::int64_t value = 0;
    if (digits[0] == '+') digits.remove_prefix(1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (ec == std::errc{} && end == digits.data() + digits.size()) return value;
  }
  if (is_number(text)) return std::strtod(text.c_str(), nullptr);
  return text;
}

class MatrixConverter {
 public:
  // Errors about the whole matrix point at `where` (aliased nodes carry their anchor's place).
  MatrixConverter(Reader& reader, SourceLocation where)
      : reader_(reader), where_(std::move(where)) {}

  std::optional<nlohmann::ordered_json> convert(const YAML::Node& node, const SourceLocation& where,
                                                std::string_view name) {
    if (++nodes_ > k_max_matrix_nodes) {
      if (!too_large_reported_)
        reader_.error(where_, fmt::format("'matrix' has more than {} values", k_max_matrix_nodes));
      too_large_reported_ = true;
      return std::nullopt;
    }
    if (node.IsSequence()) {
      auto array = nlohmann::ordered_json::array();
      for (const YAML::Node& item : node) {
        auto value = convert(item, item.IsNull() ? where : reader_.at(item), name);
        if (!value) return std::nullopt;
        array.push_back(std::move(*value));
      }
      return array;
    }
    if (node.IsMap()) {
      auto entries = reader_.mapping(node, where, name);
      auto object = nlohmann::ordered_json::object();
      for (const Entry& entry : *entries) {
        auto value = convert(entry.value, entry.value_where, entry.key);
        if (!value) return std::nullopt;
        object[entry.key] = std::move(*value);
      }
      return object;
    }
    return scalar_value(node);
  }

 private:
  Reader& reader_;
  SourceLocation where_;
  size_t nodes_ = 0;
  bool too_large_reported_ = false;
};

}  // namespace

std::optional<nlohmann::ordered_json> read_matrix(Reader& reader, const Entry& entry) {
  if (entry.value.IsScalar() && expr::has_template(entry.value.Scalar())) {
    auto text = reader.text(entry);  // checks the expression
    return nlohmann::ordered_json(text ? text->value : std::string{});
  }
  if (!entry.value.IsMap()) {
    reader.error(entry.value_where,
                 fmt::format("'matrix' must be a mapping or an expression, not {}",
                             Reader::shape_name(Reader::shape(entry.value))));
    return std::nullopt;
  }
  auto entries = reader.mapping(entry);
  if (entries->empty()) {
    reader.error(entry.value_where, "'matrix' must define at least one vector or 'include'");
    return std::nullopt;
  }
  MatrixConverter converter(reader, entry.value_where);
  auto matrix = nlohmann::ordered_json::object();
  bool ok = true;
  for (const Entry& e : *entries) {
    if (e.value.IsScalar() && expr::has_template(e.value.Scalar())) {
      if (auto text = reader.text(e)) matrix[e.key] = text->value;
      continue;
    }
    bool include_or_exclude = e.key == "include" || e.key == "exclude";
    if (!e.value.IsSequence()) {
      reader.error(e.value_where, fmt::format("{} '{}' must be a list or an expression, not {}",
                                              include_or_exclude ? "matrix" : "matrix vector",
                                              e.key, Reader::shape_name(Reader::shape(e.value))));
      ok = false;
      continue;
    }
    if (include_or_exclude) {
      for (const YAML::Node& item : e.value) {
        if (!item.IsMap()) {
          reader.error(item.IsNull() ? e.value_where : reader.at(item),
                       fmt::format("each item of '{}' must be a mapping, not {}", e.key,
                                   Reader::shape_name(Reader::shape(item))));
          ok = false;
        }
      }
    } else if (e.value.size() == 0) {
      reader.error(e.value_where, fmt::format("matrix vector '{}' must not be empty", e.key));
      ok = false;
      continue;
    }
    auto value = converter.convert(e.value, e.value_where, e.key);
    if (!value) return std::nullopt;
    matrix[e.key] = std::move(*value);
  }
  if (!ok) return std::nullopt;
  return matrix;
}

}  // namespace kiln::workflow::detail
