#include "kiln/hipcheck/walk.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <fmt/format.h>

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

void warn(std::vector<std::string>* warnings, const fs::path& path, std::string_view what) {
  if (warnings) warnings->push_back(fmt::format("{}: warning: {}", path.generic_string(), what));
}

// The error of a path whose status could not be read: a symlink loop says so.
std::string status_problem(const std::error_code& ec) {
  if (ec == std::errc::too_many_symbolic_link_levels) return "a symlink loop; skipped";
  if (ec == std::errc::no_such_file_or_directory) return "a broken symlink; skipped";
  return fmt::format("cannot read its type ({}); skipped", ec.message());
}

struct Walker {
  const std::vector<std::string>& extensions;
  IgnoreRules rules;
  fs::path root;  // where `rules` paths are relative to
  std::vector<std::string>& out;
  std::vector<std::string>* warnings;

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
      bool is_symlink = entry.is_symlink(type_ec);
      bool is_dir = entry.is_directory(type_ec) && !is_symlink;
      std::string rel = relative_to(entry.path(), root);
      if (!rules.empty() && rules.ignored(rel, is_dir)) continue;
      if (is_dir) {
        walk(entry.path(), shown / name);
        continue;
      }
      if (!wanted(name)) continue;
      fs::path file = (shown / name).lexically_normal();
      std::error_code status_ec;
      fs::file_status status = fs::status(entry.path(), status_ec);
      if (status_ec) {
        warn(warnings, file, status_problem(status_ec));
      } else if (fs::is_directory(status)) {
        warn(warnings, file, "a symlink to a directory (not followed); skipped");
      } else if (std::string_view kind = special_file_kind(status); !kind.empty()) {
        warn(warnings, file, fmt::format("{}, not a regular file; skipped", kind));
      } else {
        out.push_back(file.generic_string());
      }
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

std::string_view special_file_kind(const fs::file_status& status) {
  switch (status.type()) {
    case fs::file_type::regular:
      return "";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    default:
      return "not a regular file";
  }
}

Result<std::vector<std::string>> find_sources(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& extensions,
                                              std::vector<std::string>* warnings) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status status = fs::status(path, ec);
    if (ec == std::errc::too_many_symbolic_link_levels) {
      warn(warnings, path, "a symlink loop; skipped");
      continue;
    }
    if (ec || !fs::exists(status))
      return make_error(ErrorCode::not_found, "no such file or directory", {path});
    if (!fs::is_directory(status)) {
      // Named on the command line: scanned whatever its extension, but never a FIFO (reading
      // it would wait forever) or a device (/dev/zero never ends).
      if (std::string_view kind = special_file_kind(status); !kind.empty())
        warn(warnings, path, fmt::format("{}, not a regular file; skipped", kind));
      else
        out.push_back(fs::path(path).lexically_normal().generic_string());
      continue;
    }
    fs::path dir = fs::absolute(path, ec).lexically_normal();
    if (!dir.has_filename()) dir = dir.parent_path();
    Walker walker{extensions, {}, work_tree_top(dir), out, warnings};
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
