#include "kiln/exec/actions_support.h"

#include "kiln/exec/subreaper.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <system_error>

#include "kiln/core/subprocess.h"
#include "kiln/core/text.h"

namespace kiln::exec {
namespace fs = std::filesystem;

ActionInputs::ActionInputs(const std::map<std::string, std::string>& with,
                           std::initializer_list<std::string_view> known)
    : with_(with) {
  for (const auto& [name, value] : with) {
    // Input names are case-insensitive on GitHub; `with:` keys are usually written as declared.
    bool declared = std::any_of(known.begin(), known.end(), [&](std::string_view k) {
      return std::equal(k.begin(), k.end(), name.begin(), name.end(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) ==
               std::tolower(static_cast<unsigned char>(b));
      });
    });
    if (!declared) unexpected_.push_back(name);
  }
}

std::string ActionInputs::get(std::string_view name, std::string_view fallback) const {
  for (const auto& [key, value] : with_) {
    if (key.size() != name.size()) continue;
    bool same = std::equal(key.begin(), key.end(), name.begin(), [](char a, char b) {
      return std::tolower(static_cast<unsigned char>(a)) ==
             std::tolower(static_cast<unsigned char>(b));
    });
    if (!same) continue;
    auto value_text = core::trim(value);
    if (!value_text.empty()) return std::string(value_text);
    break;
  }
  return std::string(fallback);
}

Result<bool> ActionInputs::get_bool(std::string_view name, bool fallback) const {
  std::string value = get(name);
  if (value.empty()) return fallback;
  if (value == "true" || value == "True" || value == "TRUE") return true;
  if (value == "false" || value == "False" || value == "FALSE") return false;
  return fail(ErrorCode::invalid_input,
              "input '{}' must be a boolean (true or false, as YAML 1.2 spells them), got '{}'",
              name, value);
}

Result<std::int64_t> ActionInputs::get_int(std::string_view name, std::int64_t fallback) const {
  std::string value = get(name);
  if (value.empty()) return fallback;
  std::int64_t number = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return fail(ErrorCode::invalid_input, "input '{}' must be a whole number, got '{}'", name,
                value);
  }
  return number;
}

std::vector<std::string> ActionInputs::get_lines(std::string_view name) const {
  std::vector<std::string> lines;
  std::string value = get(name);
  std::string_view rest = value;
  while (!rest.empty()) {
    auto newline = rest.find('\n');
    auto line = core::trim(rest.substr(0, newline));
    if (!line.empty()) lines.emplace_back(line);
    if (newline == std::string_view::npos) break;
    rest.remove_prefix(newline + 1);
  }
  return lines;
}

void log_line(const ActionContext& context, std::string_view line) {
  if (context.log) context.log(line);
}

void log_warning(const ActionContext& context, std::string_view message) {
  log_line(context, fmt::format("warning: {}", message));
}

void warn_unexpected_inputs(const ActionInputs& inputs, std::string_view action,
                            const ActionContext& context) {
  if (inputs.unexpected().empty()) return;
  std::string names;
  for (const auto& name : inputs.unexpected()) {
    if (!names.empty()) names += ", ";
    names += "'" + name + "'";
  }
  log_warning(context,
              fmt::format("Unexpected input(s) {} for {}: they are ignored", names, action));
}

std::string expand_home(std::string_view path, const ActionContext& context) {
  if (path.empty() || path[0] != '~' || (path.size() > 1 && path[1] != '/')) {
    return std::string(path);
  }
  std::string home;
  if (auto it = context.env.find("HOME"); it != context.env.end()) home = it->second;
  if (home.empty()) {
    if (const char* env_home = std::getenv("HOME")) home = env_home;
  }
  if (home.empty()) return std::string(path);
  return home + std::string(path.substr(1));
}

fs::path absolute_under(const fs::path& base, std::string_view path) {
  fs::path p(path);
  fs::path joined = p.is_absolute() ? p : base / p;
  fs::path normal = joined.lexically_normal();
  // "a/b/" normalises to "a/b/" (empty filename); drop the trailing separator.
  if (!normal.has_filename() && normal.has_parent_path() && normal != normal.root_path()) {
    normal = normal.parent_path();
  }
  return normal;
}

bool is_within(const fs::path& path, const fs::path& root) {
  fs::path p = absolute_under(fs::path("/"), path.string());
  fs::path r = absolute_under(fs::path("/"), root.string());
  auto [root_end, path_it] = std::mismatch(r.begin(), r.end(), p.begin(), p.end());
  return root_end == r.end();
}

Status remove_directory_contents(const fs::path& dir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    fs::remove_all(it->path(), ec);
    if (ec) break;
  }
  if (ec) return fail(ErrorCode::io_error, "cannot empty {}: {}", dir.string(), ec.message());
  return {};
}

Result<std::uint64_t> copy_one_file(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (ec) {
    return fail(ErrorCode::io_error, "cannot create {}: {}", to.parent_path().string(),
                ec.message());
  }
  auto status = fs::symlink_status(from, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot read {}: {}", from.string(), ec.message());
  // Replace whatever is in the way, including a link that would redirect the write.
  if (auto target = fs::symlink_status(to, ec); !ec && fs::exists(target)) {
    if (fs::is_directory(target)) {
      return fail(ErrorCode::io_error, "cannot write {}: a directory is in the way", to.string());
    }
    fs::remove(to, ec);
  }
  ec.clear();
  if (fs::is_symlink(status)) {
    fs::copy_symlink(from, to, ec);
    if (ec) return fail(ErrorCode::io_error, "cannot copy {}: {}", from.string(), ec.message());
    return 0;
  }
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot copy {}: {}", from.string(), ec.message());
  auto size = fs::file_size(to, ec);
  return ec ? 0 : static_cast<std::uint64_t>(size);
}

Result<CopyStats> copy_tree(const fs::path& from, const fs::path& to) {
  CopyStats stats;
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot create {}: {}", to.string(), ec.message());
  auto it = fs::recursive_directory_iterator(from, ec);
  if (ec) return fail(ErrorCode::io_error, "cannot read {}: {}", from.string(), ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const auto& entry = *it;
    fs::path target = to / entry.path().lexically_relative(from);
    if (entry.is_symlink(ec) || !entry.is_directory(ec)) {
      KILN_TRY(auto bytes, copy_one_file(entry.path(), target));
      ++stats.files;
      stats.bytes += bytes;
    } else {
      fs::create_directories(target, ec);
      if (ec) break;
    }
  }
  if (ec) return fail(ErrorCode::io_error, "cannot copy {}: {}", from.string(), ec.message());
  return stats;
}

std::uint64_t stable_hash(std::string_view text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  return hash;
}

std::string stable_hash_hex(std::string_view text) {
  return fmt::format("{:016x}", stable_hash(text));
}

GitAsUser::GitAsUser(const core::RunAs* user, std::string home) {
  if (!user) return;
  // The job refuses to start under jobs.user without kiln-subreaper (job_runner.cpp), so the
  // program is there; were it not, the spawn fails rather than git running as kiln's user.
  std::vector<std::string> prefix = {subreaper_program().string(), "--as", user->to_argument(),
                                     "--"};
  wrapper_.emplace(std::move(prefix), std::move(home));
}

}  // namespace kiln::exec
