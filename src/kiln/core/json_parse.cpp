#include "kiln/core/json_parse.h"

#include <string>
#include <vector>

namespace kiln::core {
namespace {

using nlohmann::json;

// 1-based line and column of byte `offset` in `text`.
SourceLocation location_of(std::string_view text, std::size_t offset, const std::string& file) {
  SourceLocation where{file, 1, 1};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++where.line;
      where.column = 1;
    } else {
      ++where.column;
    }
  }
  return where;
}

// A second pass over text the parser refused: follows the path of keys and indices down to the
// value where it failed, and keeps the parser's position and message.
class ErrorLocator : public nlohmann::json_sax<json> {
 public:
  std::size_t position = 0;
  std::string message;

  // "benchmarks[2].real_time"; empty at the top level.
  std::string path() const {
    std::string text;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const auto& frame = frames_[i];
      if (frame.array) {
        // The innermost array has not started its failing element yet; outer ones have.
        std::size_t index = i + 1 == frames_.size() ? frame.started : frame.started - 1;
        text += fmt::format("[{}]", index);
      } else if (frame.has_key) {
        text += (text.empty() ? "" : ".") + frame.key;
      }
    }
    return text;
  }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    value();
    frames_.push_back({});
    return true;
  }
  bool key(string_t& key) override {
    frames_.back().key = key;
    frames_.back().has_key = true;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    value();
    frames_.push_back({.array = true});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const json::exception& error) override {
    position = at;
    message = error.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 66: syntax error ...":
    // the location goes into the error's place, the rest stays.
    if (auto close = message.find("] ");
        message.starts_with("[json.exception") && close != std::string::npos)
      message.erase(0, close + 2);
    if (message.starts_with("parse error")) {
      if (auto colon = message.find(": "); colon != std::string::npos) message.erase(0, colon + 2);
    }
    // The token is quoted in the message and may be as long as the file.
    constexpr std::size_t k_longest = 200;
    if (message.size() > k_longest) message = message.substr(0, k_longest) + "...";
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::size_t started = 0;  // array: elements begun
    std::string key{};        // object: the current key
    bool has_key = false;
  };
  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().started;
    return true;
  }
  std::vector<Frame> frames_;
};

}  // namespace

Result<json> parse_json_text(std::string_view text, const std::filesystem::path& origin) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_discarded()) return root;
  ErrorLocator locator;
  json::sax_parse(text, &locator);
  auto where = location_of(text, locator.position > 0 ? locator.position - 1 : 0, origin.string());
  std::string field = locator.path();
  if (locator.message.empty()) locator.message = "unreadable";
  if (field.empty()) return fail_at(where, "not valid JSON: {}", locator.message);
  return fail_at(where, "{}: not valid JSON: {}", field, locator.message);
}

}  // namespace kiln::core
