#include "kiln/exec/artifact_glob.h"

#include <algorithm>
#include <set>
#include <system_error>

namespace kiln::exec {
namespace fs = std::filesystem;

namespace {

bool is_glob_char(char c) { return c == '*' || c == '?' || c == '['; }

// True when the segment has an unescaped wildcard or class.
bool has_magic(std::string_view segment) {
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '\\') {
      ++i;
    } else if (is_glob_char(segment[i])) {
      return true;
    }
  }
  return false;
}

std::string unescape(std::string_view segment) {
  std::string out;
  for (std::size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] == '\\' && i + 1 < segment.size()) ++i;
    out.push_back(segment[i]);
  }
  return out;
}

// Matches a character class starting at pattern[i] == '['. Sets `next` past the class; returns
// false with next == npos when the class is not closed (then '[' is a literal).
bool match_class(std::string_view pattern, std::size_t i, char c, std::size_t& next) {
  std::size_t j = i + 1;
  bool negated = false;
  if (j < pattern.size() && (pattern[j] == '!' || pattern[j] == '^')) {
    negated = true;
    ++j;
  }
  bool matched = false;
  bool first = true;
  while (j < pattern.size() && (pattern[j] != ']' || first)) {
    first = false;
    char low = pattern[j];
    if (low == '\\' && j + 1 < pattern.size()) low = pattern[++j];
    char high = low;
    if (j + 2 < pattern.size() && pattern[j + 1] == '-' && pattern[j + 2] != ']') {
      high = pattern[j + 2];
      if (high == '\\' && j + 3 < pattern.size()) {
        high = pattern[j + 3];
        ++j;
      }
      j += 2;
    }
    if (c >= low && c <= high) matched = true;
    ++j;
  }
  if (j >= pattern.size()) {
    next = std::string_view::npos;
    return false;
  }
  next = j + 1;
  return matched != negated;
}

// Matches one pattern element at pattern[p] against character c; sets `next` to the index
// after the element. Not called for '*'.
bool match_element(std::string_view pattern, std::size_t p, char c, std::size_t& next) {
  char pc = pattern[p];
  if (pc == '?') {
    next = p + 1;
    return true;
  }
  if (pc == '[') {
    bool matched = match_class(pattern, p, c, next);
    if (next != std::string_view::npos) return matched;
  }
  if (pc == '\\' && p + 1 < pattern.size()) {
    next = p + 2;
    return pattern[p + 1] == c;
  }
  next = p + 1;
  return pc == c;
}

// One segment against one name: `*` any run of characters, with the usual single backtrack
// point (enough because `*` matches any sequence).
bool match_segment(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0;
  std::size_t star_p = std::string_view::npos, star_n = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star_p = ++p;
      star_n = n;
      continue;
    }
    std::size_t next = 0;
    if (p < pattern.size() && match_element(pattern, p, name[n], next)) {
      p = next;
      ++n;
      continue;
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    n = ++star_n;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

// Segments against segments: `**` matches any number of whole segments.
bool match_segments(const std::vector<std::string>& pattern,
                    const std::vector<std::string>& subject) {
  std::size_t p = 0, s = 0;
  std::size_t star_p = std::string::npos, star_s = 0;
  while (s < subject.size()) {
    if (p < pattern.size() && pattern[p] == "**") {
      star_p = ++p;
      star_s = s;
      continue;
    }
    if (p < pattern.size() && match_segment(pattern[p], subject[s])) {
      ++p;
      ++s;
      continue;
    }
    if (star_p == std::string::npos) return false;
    p = star_p;
    s = ++star_s;
  }
  while (p < pattern.size() && pattern[p] == "**") ++p;
  return p == pattern.size();
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto slash = text.find('/', start);
    if (slash == std::string_view::npos) slash = text.size();
    if (slash > start) parts.emplace_back(text.substr(start, slash - start));
    start = slash + 1;
  }
  return parts;
}

struct Pattern {
  bool negate = false;
  bool directory_only = false;
  std::vector<std::string> segments;  // of an absolute path, '.' and '..' resolved
  fs::path search_path;               // the literal prefix
};

Pattern parse_pattern(std::string_view text, const fs::path& base) {
  Pattern pattern;
  while (!text.empty() && text.front() == '!') {
    pattern.negate = !pattern.negate;
    text.remove_prefix(1);
  }
  pattern.directory_only = !text.empty() && text.back() == '/';
  std::string full =
      text.starts_with('/') ? std::string(text) : base.string() + "/" + std::string(text);
  for (auto& segment : split(full)) {
    if (segment == ".") continue;
    if (segment == "..") {
      if (!pattern.segments.empty()) pattern.segments.pop_back();
      continue;
    }
    pattern.segments.push_back(std::move(segment));
  }
  fs::path search("/");
  for (const auto& segment : pattern.segments) {
    if (has_magic(segment)) break;
    search /= unescape(segment);
  }
  pattern.search_path = search;
  return pattern;
}

std::vector<std::string> path_segments(const fs::path& path) { return split(path.string()); }

// The last pattern that matches decides; a pattern also matches everything below a directory
// it matches.
bool selected(const std::vector<Pattern>& patterns, const fs::path& path, bool is_directory) {
  auto subject = path_segments(path);
  bool included = false;
  for (const auto& pattern : patterns) {
    bool matched = false;
    if (match_segments(pattern.segments, subject)) {
      matched = is_directory || !pattern.directory_only;
    } else {
      auto descendants = pattern.segments;
      descendants.emplace_back("**");
      matched = match_segments(descendants, subject);
    }
    if (matched) included = !pattern.negate;
  }
  return included;
}

bool hidden_name(const fs::path& path) { return path.filename().string().starts_with('.'); }

}  // namespace

bool match_path_pattern(std::string_view pattern, std::string_view subject) {
  return match_segments(split(pattern), split(subject));
}

fs::path least_common_ancestor(const std::vector<fs::path>& paths) {
  if (paths.empty()) return {};
  std::vector<std::string> common = path_segments(paths.front());
  for (const auto& path : paths) {
    auto segments = path_segments(path);
    auto [mine, theirs] =
        std::mismatch(common.begin(), common.end(), segments.begin(), segments.end());
    common.erase(mine, common.end());
  }
  fs::path result("/");
  for (const auto& segment : common) result /= segment;
  return result;
}

Result<PathSearchResult> search_files(const std::vector<std::string>& lines, const fs::path& base,
                                      const PathSearchOptions& options) {
  std::vector<Pattern> patterns;
  for (const auto& line : lines) {
    if (line.empty() || line.starts_with('#')) continue;
    patterns.push_back(parse_pattern(line, base));
  }

  PathSearchResult result;
  std::vector<fs::path> roots;
  for (const auto& pattern : patterns) {
    if (!pattern.negate) roots.push_back(pattern.search_path);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  for (const auto& root : roots) {
    bool below_another = std::any_of(roots.begin(), roots.end(), [&](const fs::path& other) {
      return other != root &&
             std::mismatch(other.begin(), other.end(), root.begin(), root.end()).first ==
                 other.end();
    });
    if (!below_another) result.search_paths.push_back(root);
  }

  std::set<fs::path> found;
  const fs::path normal_base = base.lexically_normal();
  for (const auto& root : result.search_paths) {
    std::error_code ec;
    auto status = fs::status(root, ec);
    if (ec || !fs::exists(status)) continue;
    if (!options.include_hidden && root != normal_base && hidden_name(root)) continue;
    if (!fs::is_directory(status)) {
      if (fs::is_regular_file(status) && selected(patterns, root, false)) found.insert(root);
      continue;
    }
    auto it =
        fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      return fail(ErrorCode::io_error, "cannot search {}: {}", root.string(), ec.message());
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) {
        return fail(ErrorCode::io_error, "cannot search {}: {}", root.string(), ec.message());
      }
      const auto& entry = *it;
      if (!options.include_hidden && hidden_name(entry.path())) {
        it.disable_recursion_pending();
        continue;
      }
      std::error_code type_ec;
      // Links to directories are not walked into (no cycles); links to files count as files.
      if (entry.is_symlink(type_ec) && entry.is_directory(type_ec)) continue;
      if (entry.is_regular_file(type_ec) && selected(patterns, entry.path(), false)) {
        found.insert(entry.path());
      }
    }
  }
  result.files.assign(found.begin(), found.end());
  return result;
}

}  // namespace kiln::exec
