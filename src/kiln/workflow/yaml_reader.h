#pragma once
// Internal to the workflow loader: reads yaml-cpp nodes into model values while collecting
// diagnostics, so that one pass reports every problem of a file instead of stopping at the first.
// yaml-cpp keeps both pairs of a duplicated key and forgets nothing about positions, so all
// structural checks (shapes, unknown and duplicate keys) live here.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "kiln/workflow/diagnostic.h"
#include "kiln/workflow/model.h"

namespace kiln::workflow::detail {

// One key/value pair of a mapping, with both places.
struct Entry {
  std::string key;
  SourceLocation key_where;
  YAML::Node value;
  // Where the value is written; the key's place when the value is left empty (`push:`), since
  // yaml-cpp marks an empty value at the next token.
  SourceLocation value_where;
};

// One item of a sequence.
struct Item {
  YAML::Node value;
  SourceLocation where;
};

enum class Shape { null, scalar, list, mapping };

class Reader {
 public:
  Reader(std::string_view source, std::string file);

  const std::string& file() const { return file_; }
  // The 1-based place of a node (yaml-cpp marks are 0-based); the file's start when unknown.
  SourceLocation at(const YAML::Node& node) const;
  SourceLocation at(int line0, int column0) const;

  // Unknown keys are warnings (and skipped) instead of errors: action.yml is read as leniently
  // as GitHub's runner reads it.
  void set_unknown_keys_are_warnings(bool lenient) { lenient_ = lenient; }

  void error(SourceLocation where, std::string message);
  void warning(SourceLocation where, std::string message);
  // The diagnostics so far, in file order.
  Diagnostics take();

  static Shape shape(const YAML::Node& node);
  static const char* shape_name(Shape shape);  // "a mapping", "a list", "a string", "empty"

  // The entries of a mapping, after reporting a value of another shape (nullopt), duplicate keys
  // (the later one is dropped), non-scalar keys and, when `known` is not empty, unknown keys
  // (with a "did you mean" when one is close). `name` is the key holding the mapping and `what`
  // names the mapping in unknown-key messages ("job 'build'").
  std::optional<std::vector<Entry>> mapping(const YAML::Node& node, const SourceLocation& where,
                                            std::string_view name,
                                            std::span<const std::string_view> known = {},
                                            std::string_view what = {});
  std::optional<std::vector<Entry>> mapping(const Entry& entry,
                                            std::span<const std::string_view> known = {},
                                            std::string_view what = {}) {
    return mapping(entry.value, entry.value_where, entry.key, known, what);
  }
  // The items of a sequence (nullopt after reporting another shape).
  std::optional<std::vector<Item>> list(const Entry& entry);

  // A scalar exactly as written ("" when empty), with its `${{ }}` checked; other shapes are
  // reported.
  std::optional<Text> text(const YAML::Node& node, const SourceLocation& where,
                           std::string_view name);
  std::optional<Text> text(const Entry& entry) {
    return text(entry.value, entry.value_where, entry.key);
  }
  // A list of scalars; with `allow_single`, one scalar stands for a list of one.
  std::optional<std::vector<Text>> text_list(const Entry& entry, bool allow_single);
  // A mapping of names to scalars (env, with, outputs); with `allow_expression`, or one
  // `${{ }}` that is to yield the mapping when evaluated (TextMap::expression).
  TextMap text_map(const Entry& entry, bool allow_expression = false);
  // A scalar that holds `${{ }}`, standing for a whole mapping or list (checked); nullopt
  // (nothing reported) for anything else.
  std::optional<Text> expression_value(const Entry& entry);
  // `true`, `false` or an expression.
  std::optional<Text> boolean_or_expression(const Entry& entry);
  // A non-negative number or an expression.
  std::optional<Text> number_or_expression(const Entry& entry);
  // An `if:` condition: an expression with or without `${{ }}`. A plain YAML number (`0`,
  // `0xf`, `1.5`, `.inf`, `.nan`) is coerced with GitHub's truthiness to `true` or `false`.
  std::optional<Text> condition(const Entry& entry);

  // Reports every malformed `${{ }}` in a scalar's value.
  void check_expressions(const Text& text);

 private:
  // Where the characters of a scalar begin: after an opening quote, or on the first content
  // line of a block scalar. `literal` is set for `|` blocks, whose lines map one to one.
  SourceLocation content_start(const SourceLocation& where, bool& literal) const;
  void report_expression_error(const Text& text, const Error& error);

  std::string_view source_;
  std::string file_;
  std::vector<size_t> line_starts_;
  Diagnostics diagnostics_;
  bool lenient_ = false;
};

// The closest candidate to a mistyped word, when one is close enough to suggest.
std::optional<std::string> did_you_mean(std::string_view word,
                                        std::span<const std::string_view> candidates);
// " (did you mean 'x'?)" or "".
std::string suggestion(std::string_view word, std::span<const std::string_view> candidates);

// GitHub's rule for job, step and input ids: a letter or '_', then letters, digits, '-', '_'.
bool is_identifier(std::string_view id);
bool is_boolean(std::string_view text);
bool is_number(std::string_view text);
// A plain scalar's value when YAML 1.2's core schema reads it as a number: integers (with
// 0x/0o), decimals, exponents, .inf, -.inf and .nan in any of their spellings.
std::optional<double> yaml_number(const YAML::Node& node);

}  // namespace kiln::workflow::detail
