#include "kiln/workflow/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "kiln/workflow/expr/expr.h"

namespace kiln::workflow::detail {

Reader::Reader(std::string_view source, std::string file)
    : source_(source), file_(std::move(file)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source_.size(); ++i)
    if (source_[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLocation Reader::at(int line0, int column0) const {
  if (line0 < 0 || column0 < 0) return SourceLocation{file_, 1, 1};
  return SourceLocation{file_, line0 + 1, column0 + 1};
}

SourceLocation Reader::at(const YAML::Node& node) const {
  YAML::Mark mark = node.Mark();
  return at(mark.line, mark.column);
}

void Reader::error(SourceLocation where, std::string message) {
  diagnostics_.push_back(Diagnostic{Severity::error, std::move(where), std::move(message)});
}

void Reader::warning(SourceLocation where, std::string message) {
  diagnostics_.push_back(Diagnostic{Severity::warning, std::move(where), std::move(message)});
}

Diagnostics Reader::take() {
  std::ranges::stable_sort(diagnostics_, [](const Diagnostic& a, const Diagnostic& b) {
    return std::pair(a.where.line, a.where.column) < std::pair(b.where.line, b.where.column);
  });
  return std::move(diagnostics_);
}

Shape Reader::shape(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return Shape::scalar;
    case YAML::NodeType::Sequence:
      return Shape::list;
    case YAML::NodeType::Map:
      return Shape::mapping;
    default:
      return Shape::null;
  }
}

const char* Reader::shape_name(Shape shape) {
  switch (shape) {
    case Shape::scalar:
      return "a string";
    case Shape::list:
      return "a list";
    case Shape::mapping:
      return "a mapping";
    case Shape::null:
      break;
  }
  return "empty";
}

std::optional<std::vector<Entry>> Reader::mapping(const YAML::Node& node,
                                                  const SourceLocation& where,
                                                  std::string_view name,
                                                  std::span<const std::string_view> known,
                                                  std::string_view what) {
  if (!node.IsMap()) {
    error(where, fmt::format("'{}' must be a mapping, not {}", name, shape_name(shape(node))));
    return std::nullopt;
  }
  std::vector<Entry> entries;
  std::map<std::string, SourceLocation, std::less<>> seen;
  for (const auto& pair : node) {
    // Copies: yaml-cpp iterators hand out proxies, so a reference to `it->first` would dangle.
    const YAML::Node key = pair.first;
    SourceLocation key_where = at(key);
    if (!key.IsScalar()) {
      error(key_where,
            fmt::format("a key in '{}' must be a string, not {}", name, shape_name(shape(key))));
      continue;
    }
    const std::string& key_text = key.Scalar();
    if (auto [first, inserted] = seen.emplace(key_text, key_where); !inserted) {
      error(key_where, fmt::format("duplicate key '{}' (first defined at line {})", key_text,
                                   first->second.line));
      continue;
    }
    if (!known.empty() && std::ranges::find(known, key_text) == known.end()) {
      std::string message =
          fmt::format("unknown key '{}' in {}{}", key_text,
                      what.empty() ? fmt::format("'{}'", name) : std::string(what),
                      suggestion(key_text, known));
      if (lenient_)
        warning(key_where, message + " (ignored, as GitHub's runner ignores it)");
      else
        error(key_where, std::move(message));
      continue;
    }
    const YAML::Node value = pair.second;
    SourceLocation value_where = key_where;
    YAML::Mark mark = value.Mark();
    if (!value.IsNull() || (mark.line >= 0 && mark.line == key.Mark().line))
      value_where = at(value);
    entries.push_back(Entry{key_text, std::move(key_where), value, std::move(value_where)});
  }
  return entries;
}

std::optional<std::vector<Item>> Reader::list(const Entry& entry) {
  if (!entry.value.IsSequence()) {
    error(entry.value_where,
          fmt::format("'{}' must be a list, not {}", entry.key, shape_name(shape(entry.value))));
    return std::nullopt;
  }
  std::vector<Item> items;
  for (const YAML::Node& item : entry.value) {
    // An empty item (`- `) is marked at the next token; the list's own place is closer.
    items.push_back(Item{item, item.IsNull() ? entry.value_where : at(item)});
  }
  return items;
}

std::optional<Text> Reader::text(const YAML::Node& node, const SourceLocation& where,
                                 std::string_view name) {
  if (node.IsNull()) return Text{"", where};
  if (!node.IsScalar()) {
    error(where, fmt::format("'{}' must be a string, not {}", name, shape_name(shape(node))));
    return std::nullopt;
  }
  Text result{node.Scalar(), where};
  check_expressions(result);
  return result;
}

std::optional<std::vector<Text>> Reader::text_list(const Entry& entry, bool allow_single) {
  if (allow_single && entry.value.IsScalar()) {
    auto one = text(entry);
    if (!one) return std::nullopt;
    return std::vector<Text>{std::move(*one)};
  }
  auto items = list(entry);
  if (!items) return std::nullopt;
  std::vector<Text> texts;
  for (const Item& item : *items) {
    if (!item.value.IsScalar()) {
      error(item.where, fmt::format("each item of '{}' must be a string, not {}", entry.key,
                                    shape_name(shape(item.value))));
      continue;
    }
    Text value{item.value.Scalar(), item.where};
    check_expressions(value);
    texts.push_back(std::move(value));
  }
  return texts;
}

std::optional<Text> Reader::expression_value(const Entry& entry) {
  if (!entry.value.IsScalar() || !expr::has_template(entry.value.Scalar())) return std::nullopt;
  return text(entry);
}

TextMap Reader::text_map(const Entry& entry, bool allow_expression) {
  TextMap result;
  if (allow_expression && entry.value.IsScalar() && expr::has_template(entry.value.Scalar())) {
    result.expression = text(entry);
    return result;
  }
  auto entries = mapping(entry);
  if (!entries) return result;
  for (const Entry& e : *entries)
    if (auto value = text(e)) result.emplace_back(e.key, std::move(*value));
  return result;
}

std::optional<Text> Reader::boolean_or_expression(const Entry& entry) {
  auto value = text(entry);
  if (!value) return std::nullopt;
  if (is_boolean(value->value) || expr::has_template(value->value)) return value;
  error(value->where, fmt::format("'{}' must be true, false or an expression, not '{}'", entry.key,
                                  value->value));
  return std::nullopt;
}

std::optional<Text> Reader::number_or_expression(const Entry& entry) {
  auto value = text(entry);
  if (!value) return std::nullopt;
  if ((is_number(value->value) && value->value.front() != '-') || expr::has_template(value->value))
    return value;
  error(value->where,
        fmt::format("'{}' must be a number or an expression, not '{}'", entry.key, value->value));
  return std::nullopt;
}

std::optional<Text> Reader::condition(const Entry& entry) {
  if (!entry.value.IsNull() && !entry.value.IsScalar()) {
    error(entry.value_where,
          fmt::format("'{}' must be a string, not {}", entry.key, shape_name(shape(entry.value))));
    return std::nullopt;
  }
  Text value{entry.value.IsScalar() ? entry.value.Scalar() : std::string{}, entry.value_where};
  if (auto number = yaml_number(entry.value)) {
    // GitHub reads the number and coerces it: 0, -0 and NaN are false, the rest true.
    value.value = *number != 0 && *number == *number ? "true" : "false";
    return value;
  }
  if (expr::has_template(value.value)) {
    check_expressions(value);
  } else if (!value.value.empty()) {
    bool literal = false;
    auto parsed = expr::Expression::parse(value.value, content_start(value.where, literal));
    if (!parsed) report_expression_error(value, parsed.error());
  }
  return value;
}

void Reader::check_expressions(const Text& text) {
  if (!expr::has_template(text.value)) return;
  bool literal = false;
  SourceLocation start = content_start(text.where, literal);
  auto status = expr::check_template(text.value, start);
  if (!status) report_expression_error(text, status.error());
}

SourceLocation Reader::content_start(const SourceLocation& where, bool& literal) const {
  literal = false;
  if (where.line <= 0 || static_cast<size_t>(where.line) > line_starts_.size()) return where;
  size_t offset = line_starts_[where.line - 1] + static_cast<size_t>(where.column - 1);
  if (offset >= source_.size()) return where;
  char first = source_[offset];
  if (first == '"' || first == '\'')
    return SourceLocation{where.file, where.line, where.column + 1};
  if (first != '|' && first != '>') return where;
  // A block scalar: its content starts on a later line, at that line's indentation.
  for (size_t line = static_cast<size_t>(where.line); line < line_starts_.size(); ++line) {
    size_t begin = line_starts_[line];
    size_t end = source_.find('\n', begin);
    std::string_view text =
        source_.substr(begin, end == std::string_view::npos ? end : end - begin);
    size_t indent = text.find_first_not_of(' ');
    if (indent == std::string_view::npos || text[indent] == '\r') continue;  // blank line
    literal = first == '|';
    // Leading blank lines belong to the content, so it starts on the header's next line.
    return SourceLocation{where.file, where.line + 1, static_cast<int>(indent) + 1};
  }
  return where;
}

void Reader::report_expression_error(const Text& text, const Error& err) {
  bool literal = false;
  SourceLocation start = content_start(text.where, literal);
  SourceLocation where = err.where.empty() ? start : err.where;
  where.file = file_;
  // expr counts lines within the text and columns from each text line's start; in a literal
  // block the text's lines are the file's lines, shifted right by the block's indentation.
  if (literal && where.line > start.line) where.column += start.column - 1;
  error(std::move(where), err.message);
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
// neighbours (nmae → name) each cost one.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

// Case and '-'/'_' differences are the most common slips (runs_on, Runs-On).
std::string normalized(std::string_view word) {
  std::string result;
  for (char c : word)
    result.push_back(c == '_' ? '-'
                              : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return result;
}

}  // namespace

std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  std::string norm = normalized(word);
  size_t limit = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (std::string_view candidate : candidates) {
    size_t distance = edit_distance(norm, normalized(candidate));
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string suggestion(std::string_view word, std::span<const std::string_view> candidates) {
  auto best = did_you_mean(word, candidates);
  return best ? fmt::format(" (did you mean '{}'?)", *best) : std::string{};
}

bool is_identifier(std::string_view id) {
  if (id.empty()) return false;
  auto alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  if (!alpha(id[0]) && id[0] != '_') return false;
  return std::ranges::all_of(id,
                             [&](char c) { return alpha(c) || digit(c) || c == '-' || c == '_'; });
}

bool is_boolean(std::string_view text) {
  return text == "true" || text == "false" || text == "True" || text == "False" || text == "TRUE" ||
         text == "FALSE";
}

bool is_number(std::string_view text) {
  if (text.empty()) return false;
  size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  bool digits = false, dot = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else if ((c == 'e' || c == 'E') && digits) {
      size_t j = i + 1;
      if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
      if (j == text.size()) return false;
      return std::all_of(text.begin() + static_cast<long>(j), text.end(),
                         [](char d) { return std::isdigit(static_cast<unsigned char>(d)) != 0; });
    } else {
      return false;
    }
  }
  return digits;
}

std::optional<double> yaml_number(const YAML::Node& node) {
  if (!node.IsScalar() || node.Tag() != "?") return std::nullopt;  // quoted or tagged
  std::string_view text = node.Scalar();
  if (text.empty()) return std::nullopt;
  for (std::string_view nan : {".nan", ".NaN", ".NAN"})
    if (text == nan) return std::numeric_limits<double>::quiet_NaN();
  std::string_view unsigned_text = text;
  bool negative = false;
  if (text[0] == '-' || text[0] == '+') {
    negative = text[0] == '-';
    unsigned_text.remove_prefix(1);
  }
  for (std::string_view inf : {".inf", ".Inf", ".INF"})
    if (unsigned_text == inf) return negative ? -HUGE_VAL : HUGE_VAL;
  for (auto [prefix, base] : {std::pair{std::string_view("0x"), 16}, {"0o", 8}}) {
    if (!text.starts_with(prefix) || text.size() == 2) continue;
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), value, base);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return static_cast<double>(value);
  }
  if (!is_number(text)) return std::nullopt;
  return std::strtod(std::string(text).c_str(), nullptr);
}

}  // namespace kiln::workflow::detail
