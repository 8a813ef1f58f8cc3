#include "kiln/core/dotenv.h"

namespace kiln::core {
namespace {

bool is_name(std::string_view key) {
  if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
  for (char c : key)
    if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

}  // namespace

Result<std::map<std::string, std::string>> parse_dotenv(std::string_view text,
                                                        const std::string& file) {
  std::map<std::string, std::string> values;
  int number = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    auto at = [&](std::string_view::size_type column) {
      return SourceLocation{file, number, static_cast<int>(column) + 1};
    };
    std::size_t key_start = first;
    if (line.substr(key_start).starts_with("export ")) key_start += 7;
    auto eq = line.find('=', key_start);
    if (eq == std::string_view::npos) return fail_at(at(key_start), "expected KEY=VALUE");
    std::string_view key = line.substr(key_start, eq - key_start);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.remove_suffix(1);
    if (!is_name(key))
      return fail_at(at(key_start), "'{}' is not a name (letters, digits and _, not first a digit)",
                     key);
    std::string_view raw = line.substr(eq + 1);
    std::string value;
    if (!raw.empty() && (raw.front() == '"' || raw.front() == '\'')) {
      const char quote = raw.front();
      if (raw.size() < 2 || raw.back() != quote)
        return fail_at(at(eq + 1), "the value's {} is not closed at the end of the line",
                       quote == '"' ? "\"" : "'");
      raw = raw.substr(1, raw.size() - 2);
      if (quote == '\'') {
        value = raw;
      } else {
        for (std::size_t i = 0; i < raw.size(); ++i) {
          if (raw[i] == '\\' && i + 1 < raw.size()) {
            char next = raw[++i];
            value += next == 'n' ? '\n' : next == 't' ? '\t' : next;
          } else {
            value += raw[i];
          }
        }
      }
    } else {
      value = raw;
    }
    values[std::string(key)] = std::move(value);
  }
  return values;
}

}  // namespace kiln::core
