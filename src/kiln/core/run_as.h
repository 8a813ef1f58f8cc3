#pragma once
// The unprivileged user jobs run as (kiln.yml `jobs.user`, docs/configuration.md): resolved
// once from a name or UID[:GID] to the ids a process needs to become that user.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::core {

struct RunAs {
  std::string name;  // the user's name, or the UID as written when it has no passwd entry
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (the user's, from the group database)

  // "UID:GID:G1,G2" as kiln-subreaper's --user takes it.
  std::string to_argument() const;
};

// "kiln-job", "1001" or "1001:1001". A name must exist in the user database; a numeric UID
// without a GID takes the passwd entry's group when there is one, else GID = UID. UID 0 (root)
// is refused: it is what jobs.user exists to avoid.
Result<RunAs> resolve_run_as(std::string_view spec);

// lchown -R: `path` and everything under it to the user, never following a symbolic link (a
// job cannot point kiln at a file outside its tree). Returns the first failure.
Status give_to(const std::filesystem::path& path, const RunAs& user);

// invalid_input unless `user` could read `file` itself: kiln (as root) reads files a job names
// (benchmark and test result files, artifact and cache paths) only when the job's user could,
// so a job cannot use kiln to read what it may not. By mode bits along the resolved path (every
// directory searchable, the file readable; ACLs are not read).
Status check_readable_by(const std::filesystem::path& file, const RunAs& user);

// invalid_input unless `user` could create or replace `file` itself: the nearest existing
// directory above it writable and searchable, and `file`, when it exists, writable.
Status check_writable_by(const std::filesystem::path& file, const RunAs& user);

// invalid_input when `user` could read `file` by its mode bits (owner, group or others; ACLs
// are not read): kiln.yml and the store hold tokens and secrets that jobs must not see.
Status check_unreadable_by(const std::filesystem::path& file, const RunAs& user);

}  // namespace kiln::core
