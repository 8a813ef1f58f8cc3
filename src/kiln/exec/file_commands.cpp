#include "kiln/exec/file_commands.h"

#include <algorithm>
#include <optional>

#include "kiln/core/safe_file.h"

namespace kiln::exec {
namespace {

// One line of `text` starting at `pos`: the line without its ending, and whether it had one.
struct LineRead {
  std::string_view line;
  std::size_t next = 0;         // where the following line starts
  std::size_t ending_size = 0;  // 0 (last line without ending), 1 ("\n") or 2 ("\r\n")
};

std::optional<LineRead> read_line(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return std::nullopt;
  auto nl = text.find('\n', pos);
  if (nl == std::string_view::npos) return LineRead{text.substr(pos), text.size(), 0};
  std::size_t end = nl;
  std::size_t ending = 1;
  if (end > pos && text[end - 1] == '\r') {
    --end;
    ending = 2;
  }
  return LineRead{text.substr(pos, end - pos), nl + 1, ending};
}

}  // namespace

Result<FileCommandPaths> create_file_command_files(const std::filesystem::path& dir,
                                                   std::string_view unique_id) {
  auto base = dir / "_runner_file_commands";
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot create '{}': {}", base.string(), ec.message());
  std::string id(unique_id);
  FileCommandPaths paths{
      .env = base / ("set_env_" + id),
      .output = base / ("set_output_" + id),
      .path = base / ("add_path_" + id),
      .summary = base / ("step_summary_" + id),
      .state = base / ("save_state_" + id),
  };
  // The files belong to the job's user when the job's directory does (jobs.user,
  // containers.user); the directory holding them stays kiln's, so a job cannot swap them.
  const auto owner = core::owner_for_files_in(dir);
  for (const auto* file : {&paths.env, &paths.output, &paths.path, &paths.summary, &paths.state})
    KILN_TRY_VOID(core::ensure_empty_file(*file, owner));
  return paths;
}

void export_file_command_paths(const FileCommandPaths& paths, core::Environment& env) {
  env["GITHUB_ENV"] = paths.env.string();
  env["GITHUB_OUTPUT"] = paths.output.string();
  env["GITHUB_PATH"] = paths.path.string();
  env["GITHUB_STEP_SUMMARY"] = paths.summary.string();
  env["GITHUB_STATE"] = paths.state.string();
}

Result<KeyValues> parse_key_value_file(std::string_view text, std::string_view label) {
  KeyValues result;
  std::size_t pos = 0;
  int line_number = 0;
  auto where = [&](int line) { return SourceLocation{std::string(label), line, 0}; };
  while (auto read = read_line(text, pos)) {
    ++line_number;
    pos = read->next;
    auto line = read->line;
    if (line.empty()) continue;
    auto equals = line.find('=');
    auto heredoc = line.find("<<");
    if (equals != std::string_view::npos &&
        (heredoc == std::string_view::npos || equals < heredoc)) {
      auto name = line.substr(0, equals);
      if (name.empty()) {
        return fail_at(where(line_number), "invalid format '{}': the name must not be empty", line);
      }
      result.emplace_back(std::string(name), std::string(line.substr(equals + 1)));
      continue;
    }
    if (heredoc == std::string_view::npos) {
      return fail_at(where(line_number), "invalid format '{}': expected NAME=value or NAME<<EOF",
                     line);
    }
    auto name = line.substr(0, heredoc);
    auto delimiter = line.substr(heredoc + 2);
    if (name.empty() || delimiter.empty()) {
      return fail_at(where(line_number),
                     "invalid format '{}': the name and the delimiter must not be empty", line);
    }
    int start_line = line_number;
    std::size_t value_start = pos;
    std::size_t value_end = pos;
    bool found = false;
    while (auto value_line = read_line(text, pos)) {
      ++line_number;
      pos = value_line->next;
      if (value_line->line == delimiter) {
        found = true;
        break;
      }
      // The value ends before this line's own line break (taken off if the delimiter follows).
      value_end = value_line->next - value_line->ending_size;
    }
    if (!found) {
      return fail_at(where(start_line), "matching delimiter '{}' not found for '{}'", delimiter,
                     name);
    }
    std::string value = value_end > value_start
                            ? std::string(text.substr(value_start, value_end - value_start))
                            : std::string();
    result.emplace_back(std::string(name), std::move(value));
  }
  return result;
}

std::vector<std::string> parse_path_file(std::string_view text) {
  std::vector<std::string> entries;
  std::size_t pos = 0;
  while (auto read = read_line(text, pos)) {
    pos = read->next;
    if (!read->line.empty()) entries.emplace_back(read->line);
  }
  return entries;
}

void add_path_entries(std::vector<std::string>& prepended,
                      const std::vector<std::string>& additions) {
  for (const auto& entry : additions) {
    std::erase(prepended, entry);
    prepended.push_back(entry);
  }
}

std::string compose_path(const std::vector<std::string>& prepended, std::string_view base_path) {
  std::string path;
  for (auto it = prepended.rbegin(); it != prepended.rend(); ++it) {
    if (!path.empty()) path.push_back(':');
    path.append(*it);
  }
  if (!base_path.empty()) {
    if (!path.empty()) path.push_back(':');
    path.append(base_path);
  }
  return path;
}

Result<std::string> read_file_command(const std::filesystem::path& file) {
  return core::read_plain_file(file);
}

}  // namespace kiln::exec
