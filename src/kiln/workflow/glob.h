#pragma once
// GitHub's filter patterns for branches, tags and paths (on.push.paths and friends):
// `*` matches any characters but `/`, `**` any characters, `?` zero or one of the preceding
// character, `+` one or more of the preceding character, `[]` a character class, `\` escapes;
// in a filter list a leading `!` negates, and the last pattern that matches decides.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::workflow {

class Glob {
 public:
  static Result<Glob> compile(std::string_view pattern);
  bool matches(std::string_view subject) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  // compiled representation: owned by the implementation
  struct Program;
  std::shared_ptr<const Program> program_;
};

// An ordered list of patterns, each optionally negated with a leading '!'.
class FilterList {
 public:
  static Result<FilterList> compile(const std::vector<std::string>& patterns);
  // True when the last pattern matching `subject` is a positive one.
  bool matches(std::string_view subject) const;

 private:
  std::vector<std::pair<bool, Glob>> patterns_;  // (negated, glob)
};

}  // namespace kiln::workflow
