#include "kiln/workflow/loader.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <optional>
#include <system_error>

#include <yaml-cpp/yaml.h>

#include "kiln/workflow/sections.h"

namespace kiln::workflow {

namespace {

using detail::Entry;
using detail::Reader;

constexpr std::string_view k_workflow_keys[] = {"name",     "run-name",    "on",          "env",
                                                "defaults", "concurrency", "permissions", "jobs"};
constexpr std::string_view k_defaults_keys[] = {"run"};
constexpr std::string_view k_run_defaults_keys[] = {"shell", "working-directory"};
constexpr std::string_view k_concurrency_keys[] = {"group", "cancel-in-progress"};
constexpr std::string_view k_permission_levels[] = {"read", "write", "none"};

// The top-level mapping → Workflow; problems go to the reader.
Workflow read_workflow(Reader& reader, const YAML::Node& root, const std::filesystem::path& path) {
  Workflow workflow;
  workflow.path = path;
  SourceLocation start = reader.at(root);
  if (!root.IsMap()) {
    reader.error(start, root.IsNull() ? "workflow file is empty"
                                      : fmt::format("a workflow must be a mapping, not {}",
                                                    Reader::shape_name(Reader::shape(root))));
    return workflow;
  }
  auto entries = reader.mapping(root, start, "workflow", k_workflow_keys, "workflow");
  bool has_on = false, has_jobs = false;
  for (const Entry& entry : *entries) {
    if (entry.key == "name") {
      workflow.name = reader.text(entry);
    } else if (entry.key == "run-name") {
      workflow.run_name = reader.text(entry);
    } else if (entry.key == "on") {
      has_on = true;
      workflow.on = detail::read_triggers(reader, entry);
    } else if (entry.key == "env") {
      workflow.env = reader.text_map(entry, true);
    } else if (entry.key == "defaults") {
      workflow.defaults = detail::read_defaults(reader, entry);
    } else if (entry.key == "concurrency") {
      workflow.concurrency = detail::read_concurrency(reader, entry);
    } else if (entry.key == "permissions") {
      detail::read_permissions(reader, entry);
    } else if (entry.key == "jobs") {
      has_jobs = true;
      workflow.jobs = detail::read_jobs(reader, entry);
      for (size_t i = 0; i < workflow.jobs.size(); ++i)
        workflow.job_index.emplace(workflow.jobs[i].id, i);
    }
  }
  if (!has_on) reader.error(start, "workflow has no 'on' (the events that trigger it)");
  if (!has_jobs) reader.error(start, "workflow has no 'jobs'");
  return workflow;
}

}  // namespace

namespace detail {

RunDefaults read_defaults(Reader& reader, const Entry& entry) {
  RunDefaults defaults;
  auto entries = reader.mapping(entry, k_defaults_keys, "'defaults'");
  if (!entries) return defaults;
  for (const Entry& run : *entries) {
    auto run_entries = reader.mapping(run, k_run_defaults_keys, "'defaults.run'");
    if (!run_entries) continue;
    for (const Entry& e : *run_entries) {
      if (e.key == "shell")
        defaults.shell = reader.text(e);
      else
        defaults.working_directory = reader.text(e);
    }
  }
  return defaults;
}

std::optional<Concurrency> read_concurrency(Reader& reader, const Entry& entry) {
  Concurrency concurrency;
  concurrency.where = entry.value_where;
  if (entry.value.IsScalar()) {
    auto group = reader.text(entry);
    if (!group) return std::nullopt;
    concurrency.group = std::move(*group);
    return concurrency;
  }
  if (!entry.value.IsMap()) {
    reader.error(entry.value_where,
                 fmt::format("'concurrency' must be a string or a mapping, not {}",
                             Reader::shape_name(Reader::shape(entry.value))));
    return std::nullopt;
  }
  auto entries = reader.mapping(entry, k_concurrency_keys, "'concurrency'");
  bool has_group = false;
  for (const Entry& e : *entries) {
    if (e.key == "group") {
      if (auto group = reader.text(e)) {
        concurrency.group = std::move(*group);
        has_group = true;
      }
    } else {
      concurrency.cancel_in_progress = reader.boolean_or_expression(e);
    }
  }
  if (!has_group) {
    if (std::ranges::none_of(*entries, [](const Entry& e) { return e.key == "group"; }))
      reader.error(entry.value_where, "'concurrency' needs a 'group'");
    return std::nullopt;
  }
  return concurrency;
}

void read_permissions(Reader& reader, const Entry& entry) {
  if (entry.value.IsScalar()) {
    const std::string& value = entry.value.Scalar();
    if (value != "read-all" && value != "write-all")
      reader.error(
          entry.value_where,
          fmt::format("'permissions' must be read-all, write-all or a mapping, not '{}'", value));
    return;
  }
  auto entries = reader.mapping(entry);
  if (!entries) return;
  for (const Entry& e : *entries) {
    auto level = reader.text(e);
    if (level &&
        std::ranges::find(k_permission_levels, level->value) == std::end(k_permission_levels))
      reader.error(level->where,
                   fmt::format("permission '{}' must be read, write or none, not '{}'", e.key,
                               level->value));
  }
}

}  // namespace detail

namespace {

// `key: value` where value is a plain (unquoted) scalar holding ": ", e.g.
//   run: echo "attach with: kiln exec"
// is not valid YAML, yet workflows like that exist (one of the reference pipelines has one).
// The meaning is clear, so the value is quoted and read as the string it was meant to be, with
// a warning. Returns the column (0-based) of the value when the line was repaired.
std::optional<int> quote_plain_value(std::string& text, int line) {
  size_t begin = 0;
  for (int i = 0; i < line; ++i) {
    begin = text.find('\n', begin);
    if (begin == std::string::npos) return std::nullopt;
    ++begin;
  }
  size_t end = text.find('\n', begin);
  if (end == std::string::npos) end = text.size();
  std::string_view content(text.data() + begin, end - begin);
  size_t key = content.find_first_not_of(' ');
  if (key == std::string_view::npos) return std::nullopt;
  if (content.substr(key).starts_with("- ")) key = content.find_first_not_of(' ', key + 2);
  size_t colon = content.find(": ", key);
  if (key == std::string_view::npos || colon == std::string_view::npos) return std::nullopt;
  std::string_view name = content.substr(key, colon - key);
  if (name.empty() || name.find_first_of("'\"{}[]#&*!|>") != std::string_view::npos)
    return std::nullopt;
  size_t value = content.find_first_not_of(' ', colon + 1);
  if (value == std::string_view::npos) return std::nullopt;
  std::string_view raw = content.substr(value);
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\r')) raw.remove_suffix(1);
  if (raw.empty() ||
      std::string_view("'\"|>{[&*!%@`").find(raw.front()) != std::string_view::npos ||
      raw.find(" #") != std::string_view::npos || raw.find(": ") == std::string_view::npos)
    return std::nullopt;
  std::string quoted = "'";
  for (char c : raw) quoted += c == '\'' ? std::string("''") : std::string(1, c);
  quoted += "'";
  text.replace(begin + value, raw.size(), quoted);
  return static_cast<int>(value);
}

}  // namespace

LoadResult load_workflow_text(std::string_view yaml, const std::filesystem::path& display_path) {
  // Repair unquoted values holding ": " (see quote_plain_value) before reading.
  std::string text(yaml);
  std::vector<Diagnostic> repairs;
  // The tree of the attempt that succeeds is the one read below: a file of 100,000 jobs is
  // parsed once, not twice.
  std::optional<YAML::Node> parsed;
  for (int attempt = 0; attempt < 64; ++attempt) {
    try {
      parsed = YAML::Load(text);
      break;
    } catch (const YAML::Exception& e) {
      if (e.msg != YAML::ErrorMsg::MAP_VALUE || e.mark.is_null()) break;
      auto column = quote_plain_value(text, e.mark.line);
      if (!column) break;
      repairs.push_back(Diagnostic{
          Severity::warning, SourceLocation{display_path.string(), e.mark.line + 1, *column + 1},
          "an unquoted value cannot contain ': ' in YAML; kiln reads the rest of the line as "
          "one string (quote it to make the file valid YAML)"});
    }
  }
  yaml = text;
  Reader reader(yaml, display_path.string());
  for (auto& repair : repairs) reader.warning(std::move(repair.where), std::move(repair.message));
  LoadResult result;
  Workflow workflow;
  try {
    // No tree: the file is not YAML even after the repairs; loading it again throws the
    // exception that locates why.
    YAML::Node root = parsed ? std::move(*parsed) : YAML::Load(text);
    parsed.reset();
    workflow = read_workflow(reader, root, display_path);
  } catch (const YAML::Exception& e) {
    // ParserException and its kin carry the place where the YAML stopped making sense.
    SourceLocation where = e.mark.is_null() ? SourceLocation{reader.file(), 0, 0}
                                            : reader.at(e.mark.line, e.mark.column);
    std::string hint;
    if (e.msg == YAML::ErrorMsg::MAP_VALUE)
      hint = " (an unquoted value cannot hold ': '; put the value in quotes)";
    reader.error(std::move(where), fmt::format("invalid YAML: {}{}", e.msg, hint));
  } catch (const std::exception& e) {
    reader.error(SourceLocation{reader.file(), 0, 0}, fmt::format("cannot load: {}", e.what()));
  }
  result.diagnostics = reader.take();
  if (!has_errors(result.diagnostics)) result.workflow = std::move(workflow);
  return result;
}

LoadResult load_workflow_file(const std::filesystem::path& path,
                              const std::filesystem::path& display_path) {
  std::error_code ec;
  std::ifstream in;
  if (!std::filesystem::is_directory(path, ec)) in.open(path, std::ios::binary);
  if (!in.is_open()) {
    LoadResult result;
    result.diagnostics.push_back(
        Diagnostic{Severity::error, SourceLocation{display_path.string(), 0, 0},
                   fmt::format("cannot read workflow file '{}'", path.string())});
    return result;
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return load_workflow_text(text, display_path);
}

Result<std::vector<std::filesystem::path>> discover_workflows(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (!fs::exists(status))
    return fail(ErrorCode::not_found, "no such file or directory: {}", path.string());
  if (!fs::is_directory(status)) return std::vector<fs::path>{path};
  // A repository (it has .github/ or .git) keeps its workflows in .github/workflows; any other
  // directory is searched itself.
  fs::path directory = path;
  if (fs::exists(path / ".github", ec) || fs::exists(path / ".git", ec)) {
    directory = path / ".github" / "workflows";
    if (!fs::is_directory(directory, ec)) return std::vector<fs::path>{};
  }
  std::vector<fs::path> files;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& file = it->path();
    std::string extension = file.extension().string();
    if ((extension == ".yml" || extension == ".yaml") && it->is_regular_file(ec))
      files.push_back(file);
  }
  if (ec) return fail(ErrorCode::io_error, "cannot list {}: {}", directory.string(), ec.message());
  std::ranges::sort(files, [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  return files;
}

}  // namespace kiln::workflow
