#pragma once
// File search with the path patterns of @actions/glob, which upload-artifact and cache use.
// These differ from the workflow's branch/path filters (workflow/glob.h): here `?` is any one
// character, there is no `+`, a pattern that names a directory takes everything below it, and
// the search only walks below each pattern's literal prefix.
//
// Patterns: one per entry; `#` starts a comment line; a leading `!` excludes; `*` matches
// within one path segment (dot files included), `**` as a whole segment any number of
// segments, `?` one character, `[abc]`/`[a-z]`/`[!a]` a character class, `\` escapes. A
// trailing `/` matches directories only. Relative patterns are rooted at the search base; the
// last pattern that matches a path decides whether it is included.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::exec {

struct PathSearchOptions {
  // false: skip every file or directory whose name starts with '.', below the search paths
  // (upload-artifact's default since v4.4, `include-hidden-files: false`).
  bool include_hidden = true;
};

struct PathSearchResult {
  std::vector<std::filesystem::path> files;  // absolute, sorted, each once; regular files only
  // Where the search walked: each included pattern's literal prefix, absolute; a path below
  // another one is left out. upload-artifact lays out an artifact relative to these.
  std::vector<std::filesystem::path> search_paths;
};

// Finds the files the patterns select. Patterns that are already absolute keep their root;
// relative ones are taken from `base`. `~` is not expanded here (callers do it).
Result<PathSearchResult> search_files(const std::vector<std::string>& patterns,
                                      const std::filesystem::path& base,
                                      const PathSearchOptions& options = {});

// Matches one '/'-separated subject against one pattern with the rules above (no `!`, no
// implicit descendants). Used for artifact names too (download-artifact's `pattern`).
bool match_path_pattern(std::string_view pattern, std::string_view subject);

// The deepest directory that contains every path (all absolute). Empty input: empty path.
std::filesystem::path least_common_ancestor(const std::vector<std::filesystem::path>& paths);

}  // namespace kiln::exec
