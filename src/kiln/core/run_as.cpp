#include "kiln/core/run_as.h"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::core {

namespace fs = std::filesystem;

namespace {

template <class T>
bool parse_id(std::string_view text, T& out) {
  if (text.empty()) return false;
  unsigned long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 0xFFFFFFFEul) return false;
  out = static_cast<T>(value);
  return true;
}

std::vector<gid_t> groups_of(const std::string& name, gid_t gid) {
  int count = 32;
  std::vector<gid_t> groups(static_cast<std::size_t>(count));
  if (::getgrouplist(name.c_str(), gid, groups.data(), &count) < 0) {
    groups.resize(static_cast<std::size_t>(count));
    if (::getgrouplist(name.c_str(), gid, groups.data(), &count) < 0) return {gid};
  }
  groups.resize(static_cast<std::size_t>(count));
  return groups;
}

}  // namespace

std::string RunAs::to_argument() const {
  return fmt::format("{}:{}:{}", uid, gid, fmt::join(groups, ","));
}

Result<RunAs> resolve_run_as(std::string_view spec) {
  RunAs user;
  const auto colon = spec.find(':');
  const std::string_view first = spec.substr(0, colon);
  uid_t uid = 0;
  if (parse_id(first, uid)) {
    user.uid = uid;
    user.name = std::string(first);
    const passwd* entry = ::getpwuid(uid);
    user.gid = entry ? entry->pw_gid : static_cast<gid_t>(uid);
    if (entry) user.name = entry->pw_name;
    if (colon != std::string_view::npos && !parse_id(spec.substr(colon + 1), user.gid))
      return fail(ErrorCode::invalid_input, "'{}' is not a user name, UID or UID:GID", spec);
    user.groups = entry ? groups_of(user.name, user.gid) : std::vector<gid_t>{user.gid};
  } else {
    if (colon != std::string_view::npos || first.empty())
      return fail(ErrorCode::invalid_input, "'{}' is not a user name, UID or UID:GID", spec);
    const passwd* entry = ::getpwnam(std::string(first).c_str());
    if (!entry)
      return fail(ErrorCode::invalid_input,
                  "no user '{}' on this host (create it first, e.g. useradd --system {})", first,
                  first);
    user.name = entry->pw_name;
    user.uid = entry->pw_uid;
    user.gid = entry->pw_gid;
    user.groups = groups_of(user.name, user.gid);
  }
  if (user.uid == 0)
    return fail(ErrorCode::invalid_input,
                "'{}' is root: jobs.user names the unprivileged user jobs run as", spec);
  return user;
}

Status give_to(const fs::path& path, const RunAs& user) {
  auto change = [&](const fs::path& p) -> Status {
    if (::lchown(p.c_str(), user.uid, user.gid) != 0)
      return fail(ErrorCode::io_error, "cannot give {} to user {}: {}", p.string(), user.name,
                  std::strerror(errno));
    return {};
  };
  KILN_TRY_VOID(change(path));
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(path, ec))) return {};
  for (fs::recursive_directory_iterator it(path, fs::directory_options::none, ec), end;
       !ec && it != end; it.increment(ec))
    KILN_TRY_VOID(change(it->path()));
  if (ec) return fail(ErrorCode::io_error, "cannot walk {}: {}", path.string(), ec.message());
  return {};
}

namespace {

// Whether `user` has `bit` (4 read, 2 write, 1 search) on a file of this stat by its mode.
bool permits(const struct stat& info, const RunAs& user, unsigned bit) {
  if (info.st_uid == user.uid) return info.st_mode & (bit << 6);
  if (info.st_gid == user.gid || std::ranges::find(user.groups, info.st_gid) != user.groups.end())
    return info.st_mode & (bit << 3);
  return info.st_mode & bit;
}

}  // namespace

Status check_readable_by(const fs::path& file, const RunAs& user) {
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(file, ec);
  auto refuse = [&] {
    return fail(ErrorCode::invalid_input,
                "{} is not readable by jobs.user '{}': kiln does not read it for the job",
                file.string(), user.name);
  };
  if (ec) return refuse();
  struct stat info{};
  fs::path prefix;
  for (auto part = resolved.begin(); part != resolved.end(); ++part) {
    prefix /= *part;
    if (std::next(part) == resolved.end()) break;
    if (::stat(prefix.c_str(), &info) != 0) {
      if (errno == ENOENT) return {};  // missing: the caller says so
      return refuse();
    }
    if (!permits(info, user, 1)) return refuse();
  }
  if (::stat(resolved.c_str(), &info) != 0) return {};  // missing: the caller says so
  if (!permits(info, user, 4)) return refuse();
  return {};
}

Status check_writable_by(const fs::path& file, const RunAs& user) {
  auto refuse = [&] {
    return fail(ErrorCode::invalid_input,
                "{} is not writable by jobs.user '{}': kiln does not write it for the job",
                file.string(), user.name);
  };
  struct stat info{};
  if (::stat(file.c_str(), &info) == 0 && !S_ISDIR(info.st_mode) && !permits(info, user, 2))
    return refuse();
  fs::path dir = file.parent_path();
  while (!dir.empty() && ::stat(dir.c_str(), &info) != 0) {
    if (dir == dir.root_path()) return refuse();
    dir = dir.parent_path();
  }
  if (dir.empty() || !permits(info, user, 2) || !permits(info, user, 1)) return refuse();
  return check_readable_by(dir, user).has_value() ? Status{} : refuse();
}

Status check_unreadable_by(const fs::path& file, const RunAs& user) {
  struct stat info{};
  if (::stat(file.c_str(), &info) != 0) return {};  // nothing to read
  if (!permits(info, user, 4)) return {};
  return fail(ErrorCode::invalid_input,
              "{} is readable by jobs.user '{}' (mode {:04o}): jobs must not read it; chmod 600 {}",
              file.string(), user.name, info.st_mode & 07777, file.string());
}

}  // namespace kiln::core
