#pragma once
// File commands (GitHub's "Environment files"): before each step the runner creates five empty
// files and puts their paths in the step's environment; the step appends to them; after the step
// the runner reads them:
//   GITHUB_ENV           NAME=value / NAME<<DELIMITER lines: environment of the later steps
//   GITHUB_OUTPUT        same syntax: the step's outputs
//   GITHUB_STATE         same syntax: state for the step's post action
//   GITHUB_PATH          one directory a line, prepended to PATH for the later steps
//   GITHUB_STEP_SUMMARY  Markdown for the job summary
// The files are fresh for every step (unique names), so a step never sees another's commands.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/core/subprocess.h"

namespace kiln::exec {

struct FileCommandPaths {
  std::filesystem::path env, output, path, summary, state;
};

// Creates the five files under `dir`/_runner_file_commands/ with `unique_id` in their names, or
// truncates them when they exist (the step runner reuses one set per job).
Result<FileCommandPaths> create_file_command_files(const std::filesystem::path& dir,
                                                   std::string_view unique_id);

// Sets GITHUB_ENV, GITHUB_OUTPUT, GITHUB_PATH, GITHUB_STEP_SUMMARY and GITHUB_STATE.
void export_file_command_paths(const FileCommandPaths& paths, core::Environment& env);

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// Parses GITHUB_ENV / GITHUB_OUTPUT / GITHUB_STATE text: empty lines are skipped; `NAME=value`
// (value up to the end of the line; the first '=' splits) or `NAME<<DELIMITER` followed by the
// value's lines and a line that is exactly DELIMITER (the value keeps its inner line breaks,
// not the last one). Whichever of '=' and '<<' comes first decides the form. Errors (empty
// name, empty delimiter, missing delimiter, a line of neither form) are invalid_input at
// `label`:LINE. Pairs are in file order; a later one for the same name wins when applied.
Result<KeyValues> parse_key_value_file(std::string_view text, std::string_view label);

// Parses GITHUB_PATH text: one entry a line ("\r\n" accepted), empty lines skipped.
std::vector<std::string> parse_path_file(std::string_view text);

// The job's PATH additions across steps, as GitHub keeps them: each new entry is moved to the
// end of `prepended` (an entry added again moves), and PATH is the list reversed (the most
// recent addition first) followed by the base PATH.
void add_path_entries(std::vector<std::string>& prepended,
                      const std::vector<std::string>& additions);
std::string compose_path(const std::vector<std::string>& prepended, std::string_view base_path);

// Reads a whole file; a missing file reads as "".
Result<std::string> read_file_command(const std::filesystem::path& file);

}  // namespace kiln::exec
