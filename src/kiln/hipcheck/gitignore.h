#pragma once
// .gitignore patterns, so that a directory scan skips what git ignores (build trees, vendored
// copies). Implements gitignore(5): `#` comments, `!` negation, trailing `/` for directories,
// patterns with a `/` anchored to their .gitignore's directory, `*`, `?`, `[...]` and `**`.
// The last matching pattern wins; deeper .gitignore files come later and so win.

#include <string>
#include <string_view>
#include <vector>

namespace kiln::hipcheck {

class IgnoreRules {
 public:
  // Adds the lines of a .gitignore that lives in `base` ("" for the root; "a/b" otherwise,
  // relative to the root, '/'-separated).
  void add(std::string_view base, std::string_view text);
  // Whether `path` (relative to the root, '/'-separated) is ignored.
  bool ignored(std::string_view path, bool is_dir) const;
  bool empty() const { return patterns_.empty(); }

 private:
  struct Pattern {
    std::string base;  // directory of the .gitignore, "" or "a/b"
    std::string glob;
    bool negated = false;
    bool dir_only = false;
    bool anchored = false;  // contains a '/': matched against the path below `base`
  };
  std::vector<Pattern> patterns_;
};

// gitignore-style glob: `*` and `?` stop at '/', `**` spans directories.
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace kiln::hipcheck
