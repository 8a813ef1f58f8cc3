#include "kiln/hipcheck/walk.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "kiln/hipcheck/gitignore.h"

namespace kiln::hipcheck {

namespace fs = std::filesystem;

std::vector<std::string> default_extensions() {
  return {".cu", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hip"};
}

namespace {

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// "" for `dir` == `root`, else the '/'-separated path of `dir` below `root`.
std::string relative_to(const fs::path& dir, const fs::path& root) {
  std::string rel = dir.lexically_relative(root).generic_string();
  return rel == "." ? std::string() : rel;
}

struct Walker {
  const std::vector<std::string>& extensions;
  IgnoreRules rules;
  fs::path root;  // where `rules` paths are relative to
  std::vector<std::string>& out;

  bool wanted(const fs::path& file) const {
    std::string name = file.filename().string();
    return std::any_of(extensions.begin(), extensions.end(), [&](const std::string& ext) {
      return name.size() > ext.size() && name.ends_with(ext);
    });
  }

  void load_ignore(const fs::path& dir) {
    std::error_code ec;
    fs::path file = dir / ".gitignore";
    if (fs::is_regular_file(file, ec)) rules.add(relative_to(dir, root), read_text(file));
  }

  // `shown` is how the user sees `dir` (their spelling of the path, extended).
  void walk(const fs::path& dir, const fs::path& shown) {
    load_ignore(dir);
    std::error_code ec;
    std::vector<fs::directory_entry> entries;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      entries.push_back(*it);
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
      return a.path().filename() < b.path().filename();
    });
    for (const fs::directory_entry& entry : entries) {
      fs::path name = entry.path().filename();
      if (name == ".git") continue;
      std::error_code type_ec;
      bool is_dir = entry.is_directory(type_ec) && !entry.is_symlink(type_ec);
      bool is_file = entry.is_regular_file(type_ec);
      std::string rel = relative_to(entry.path(), root);
      if (!rules.empty() && rules.ignored(rel, is_dir)) continue;
      if (is_dir)
        walk(entry.path(), shown / name);
      else if (is_file && wanted(name))
        out.push_back((shown / name).lexically_normal().generic_string());
    }
  }
};

// The top of the git work tree that holds `dir`, or `dir` itself when there is none.
fs::path work_tree_top(const fs::path& dir) {
  std::error_code ec;
  for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
    if (fs::exists(p / ".git", ec)) return p;
    if (p == p.parent_path()) break;
  }
  return dir;
}

}  // namespace

Result<std::vector<std::string>> find_sources(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& extensions) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
      return make_error(ErrorCode::not_found, "no such file or directory", {path});
    if (!fs::is_directory(status)) {
      out.push_back(fs::path(path).lexically_normal().generic_string());
      continue;
    }
    fs::path dir = fs::absolute(path, ec).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    Walker walker{extensions, {}, work_tree_top(dir), out};
    // .gitignore files from the work tree's top down to `dir` apply as well.
    std::error_code exclude_ec;
    fs::path exclude = walker.root / ".git" / "info" / "exclude";
    if (fs::is_regular_file(exclude, exclude_ec)) walker.rules.add("", read_text(exclude));
    for (fs::path p = walker.root; p != dir;) {
      walker.load_ignore(p);
      fs::path rel = dir.lexically_relative(p);
      p /= *rel.begin();
    }
    if (dir != walker.root && walker.rules.ignored(relative_to(dir, walker.root), true)) {
      // The user named an ignored directory: scan it anyway, as git would list it if asked.
      walker.rules = IgnoreRules{};
    }
    walker.walk(dir, fs::path(path));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kiln::hipcheck
