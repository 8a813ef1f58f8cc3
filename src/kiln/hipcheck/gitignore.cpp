#include "kiln/hipcheck/gitignore.h"

namespace kiln::hipcheck {

namespace {

// [...] at pattern[p] (p at '['): matches c? Returns the index after ']' in `next`, or npos when
// the class is malformed (then '[' is literal).
bool match_class(std::string_view pattern, std::size_t p, char c, std::size_t& next) {
  std::size_t i = p + 1;
  bool negate = false;
  if (i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < pattern.size() && (first || pattern[i] != ']')) {
    first = false;
    char lo = pattern[i];
    if (lo == '\\' && i + 1 < pattern.size()) lo = pattern[++i];
    char hi = lo;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      hi = pattern[i + 2];
      if (hi == '\\' && i + 3 < pattern.size()) hi = pattern[++i + 2];
      i += 2;
    }
    if (c >= lo && c <= hi) matched = true;
    ++i;
  }
  if (i >= pattern.size()) {
    next = std::string_view::npos;
    return false;
  }
  next = i + 1;
  return matched != negate;
}

bool match_from(std::string_view pattern, std::size_t p, std::string_view text, std::size_t t) {
  while (p < pattern.size()) {
    char pc = pattern[p];
    if (pc == '*') {
      bool double_star = p + 1 < pattern.size() && pattern[p + 1] == '*';
      if (double_star) {
        std::size_t after = p + 2;
        bool at_segment_start = p == 0 || pattern[p - 1] == '/';
        if (at_segment_start && (after == pattern.size() || pattern[after] == '/')) {
          if (after == pattern.size()) return true;  // trailing "**": everything below
          // "**/": zero or more whole directories.
          for (std::size_t k = t;;) {
            if (match_from(pattern, after + 1, text, k)) return true;
            std::size_t slash = text.find('/', k);
            if (slash == std::string_view::npos) return false;
            k = slash + 1;
          }
        }
        // Otherwise "**" is an ordinary star.
        p = after - 1;
      }
      ++p;
      for (std::size_t k = t;; ++k) {
        if (match_from(pattern, p, text, k)) return true;
        if (k >= text.size() || text[k] == '/') return false;
      }
    }
    if (t >= text.size()) return false;
    if (pc == '?') {
      if (text[t] == '/') return false;
      ++p;
      ++t;
      continue;
    }
    if (pc == '[') {
      std::size_t next;
      bool ok = match_class(pattern, p, text[t], next);
      if (next != std::string_view::npos) {
        if (!ok || text[t] == '/') return false;
        p = next;
        ++t;
        continue;
      }
    }
    if (pc == '\\' && p + 1 < pattern.size()) pc = pattern[++p];
    if (pc != text[t]) return false;
    ++p;
    ++t;
  }
  return t == text.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text) {
  return match_from(pattern, 0, text, 0);
}

void IgnoreRules::add(std::string_view base, std::string_view text) {
  std::size_t pos = 0;
  while (pos <= text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // Trailing blanks are dropped unless escaped with a backslash.
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\'))
      line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Pattern p;
    p.base = std::string(base);
    if (line[0] == '!') {
      p.negated = true;
      line.erase(0, 1);
    } else if (line[0] == '\\' && line.size() > 1 && (line[1] == '#' || line[1] == '!')) {
      line.erase(0, 1);
    }
    if (!line.empty() && line.back() == '/') {
      p.dir_only = true;
      line.pop_back();
    }
    if (line.empty()) continue;
    if (line.find('/') != std::string::npos) {
      p.anchored = true;
      if (line[0] == '/') line.erase(0, 1);
    }
    p.glob = std::move(line);
    patterns_.push_back(std::move(p));
  }
}

bool IgnoreRules::ignored(std::string_view path, bool is_dir) const {
  bool result = false;
  for (const Pattern& p : patterns_) {
    if (p.dir_only && !is_dir) continue;
    std::string_view rel = path;
    if (!p.base.empty()) {
      if (rel.size() <= p.base.size() || !rel.starts_with(p.base) || rel[p.base.size()] != '/')
        continue;
      rel.remove_prefix(p.base.size() + 1);
    }
    bool match;
    if (p.anchored) {
      match = glob_match(p.glob, rel);
    } else {
      std::size_t slash = rel.rfind('/');
      match = glob_match(p.glob, slash == std::string_view::npos ? rel : rel.substr(slash + 1));
    }
    if (match) result = !p.negated;
  }
  return result;
}

}  // namespace kiln::hipcheck
