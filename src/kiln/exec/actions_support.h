#pragma once
// Helpers shared by the built-in actions (checkout, artifacts, cache): reading `with:` inputs
// the way @actions/core does, keeping paths inside their root, running git, copying trees.
// Internal to exec: the public surface is actions.h.

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/git.h"
#include "kiln/core/result.h"
#include "kiln/core/run_as.h"
#include "kiln/exec/actions.h"

namespace kiln::exec {

// A step's `with:` map, read with GitHub's rules: values are trimmed, an empty value means
// "not given" (the default applies), booleans accept only the YAML 1.2 core spellings.
class ActionInputs {
 public:
  ActionInputs(const std::map<std::string, std::string>& with,
               std::initializer_list<std::string_view> known);

  // Inputs the action does not declare, sorted; the caller warns about them.
  const std::vector<std::string>& unexpected() const { return unexpected_; }

  std::string get(std::string_view name, std::string_view fallback = "") const;
  bool has(std::string_view name) const { return !get(name).empty(); }
  // true|True|TRUE|false|False|FALSE; anything else is an invalid_input error naming the input.
  Result<bool> get_bool(std::string_view name, bool fallback) const;
  Result<std::int64_t> get_int(std::string_view name, std::int64_t fallback) const;
  // A multi-line input: one item a line, trimmed, empty lines dropped.
  std::vector<std::string> get_lines(std::string_view name) const;

 private:
  const std::map<std::string, std::string>& with_;
  std::vector<std::string> unexpected_;
};

// Logs the "Unexpected input(s)" warning when there are any.
void warn_unexpected_inputs(const ActionInputs& inputs, std::string_view action,
                            const ActionContext& context);

// Logs one line through context.log, if set.
void log_line(const ActionContext& context, std::string_view line);
void log_warning(const ActionContext& context, std::string_view message);

// `~` and `~/x` become the step's HOME (from context.env, else this process's HOME).
std::string expand_home(std::string_view path, const ActionContext& context);

// `path` (relative to `base`, or absolute) made absolute and lexically normal.
std::filesystem::path absolute_under(const std::filesystem::path& base, std::string_view path);

// True when `path` is `root` or below it, compared lexically after normalising both.
bool is_within(const std::filesystem::path& path, const std::filesystem::path& root);

// Deletes everything inside `dir` but not `dir` itself.
Status remove_directory_contents(const std::filesystem::path& dir);

// Copies the tree under `from` into `to` (created as needed), replacing files that exist.
// Symbolic links are copied as links. Returns the number of files and their bytes.
struct CopyStats {
  std::size_t files = 0;
  std::uint64_t bytes = 0;
};
Result<CopyStats> copy_tree(const std::filesystem::path& from, const std::filesystem::path& to);

// Copies one file (or link) to `to`, creating its parent directories, replacing what is there.
Result<std::uint64_t> copy_one_file(const std::filesystem::path& from,
                                    const std::filesystem::path& to);

// A stable 64-bit hash (FNV-1a): names of stored things derived from user text, ids.
std::uint64_t stable_hash(std::string_view text);
std::string stable_hash_hex(std::string_view text);

// git for the actions (checkout, the actions mirror): core/git.h.
using core::GitOutput;
using core::run_git;

// While one lives, run_git on this thread runs git as `user` (jobs.user) with HOME `home`,
// through kiln-subreaper --as (core::GitWrapper says why). Null `user`: nothing changes.
class GitAsUser {
 public:
  GitAsUser(const core::RunAs* user, std::string home);

 private:
  std::optional<core::GitWrapper> wrapper_;
};

}  // namespace kiln::exec
