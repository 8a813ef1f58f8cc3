#include "kiln/exec/workflow_commands.h"

#include <array>
#include <utility>

#include "kiln/core/text.h"

namespace kiln::exec {
namespace {

constexpr std::array<std::string_view, 15> k_known = {
    "set-output", "save-state", "add-mask",      "add-matcher", "remove-matcher",
    "warning",    "error",      "notice",        "debug",       "group",
    "endgroup",   "echo",       "stop-commands", "set-env",     "add-path",
};

using core::trim;

using Mapping = std::pair<std::string_view, char>;
constexpr std::array<Mapping, 3> k_data_escapes = {{{"%25", '%'}, {"%0D", '\r'}, {"%0A", '\n'}}};
constexpr std::array<Mapping, 5> k_property_escapes = {
    {{"%25", '%'}, {"%0D", '\r'}, {"%0A", '\n'}, {"%3A", ':'}, {"%2C", ','}}};

template <std::size_t N>
std::string escape(std::string_view text, const std::array<Mapping, N>& table) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    bool done = false;
    for (const auto& [code, ch] : table) {
      if (c == ch) {
        out.append(code);
        done = true;
        break;
      }
    }
    if (!done) out.push_back(c);
  }
  return out;
}

// One left-to-right pass: "%250A" is "%0A", not a newline.
template <std::size_t N>
std::string unescape(std::string_view text, const std::array<Mapping, N>& table) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 3 <= text.size()) {
      auto code = text.substr(i, 3);
      bool done = false;
      for (const auto& [escaped, ch] : table) {
        if (code == escaped) {
          out.push_back(ch);
          i += 2;
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace

bool is_known_workflow_command(std::string_view name) {
  for (auto known : k_known)
    if (known == name) return true;
  return false;
}

std::optional<WorkflowCommand> parse_workflow_command(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("::")) return std::nullopt;
  auto end = line.find("::", 2);
  if (end == std::string_view::npos) return std::nullopt;
  auto info = line.substr(2, end - 2);
  auto space = info.find(' ');
  auto name = info.substr(0, space);
  if (!is_known_workflow_command(name)) return std::nullopt;

  WorkflowCommand command;
  command.name = std::string(name);
  if (space != std::string_view::npos) {
    auto props = info.substr(space + 1);
    std::size_t start = 0;
    while (start <= props.size()) {
      auto comma = props.find(',', start);
      if (comma == std::string_view::npos) comma = props.size();
      auto pair = props.substr(start, comma - start);
      auto eq = pair.find('=');
      // Entries without '=' or without a key are ignored, as the runner does.
      if (eq != std::string_view::npos && eq > 0) {
        command.properties[std::string(trim(pair.substr(0, eq)))] =
            unescape_command_property(pair.substr(eq + 1));
      }
      start = comma + 1;
    }
  }
  command.data = unescape_command_data(line.substr(end + 2));
  return command;
}

std::optional<std::string_view> bare_command_name(std::string_view line) {
  line = trim(line);
  if (line.size() < 5 || !line.starts_with("::") || !line.ends_with("::")) return std::nullopt;
  auto name = line.substr(2, line.size() - 4);
  if (name.find("::") != std::string_view::npos) return std::nullopt;
  return name;
}

std::string escape_command_data(std::string_view text) { return escape(text, k_data_escapes); }
std::string escape_command_property(std::string_view text) {
  return escape(text, k_property_escapes);
}
std::string unescape_command_data(std::string_view text) { return unescape(text, k_data_escapes); }
std::string unescape_command_property(std::string_view text) {
  return unescape(text, k_property_escapes);
}

}  // namespace kiln::exec
