#pragma once
// Files kiln writes and reads in a directory a job can write (RUNNER_TEMP: step scripts and the
// GITHUB_OUTPUT/ENV/PATH/STATE/STEP_SUMMARY files). kiln may run as root while the job runs as
// another user (kiln.yml jobs.user, containers.user), so a job could put a symbolic or hard link
// where kiln will write next, to make root write or read a file of its choosing. These never go
// through a link: a file that is not a plain file with one link is removed and created anew.

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/core/result.h"

namespace kiln::core {

struct FileOwner {
  uid_t uid = 0;
  gid_t gid = 0;
};

// The owner kiln gives the files it writes in `dir`: dir's owner when kiln runs as root and
// dir belongs to someone else (the job's user), else none (kiln's own).
std::optional<FileOwner> owner_for_files_in(const std::filesystem::path& dir);

// Writes `text` to `file` from empty: mode 0600, owned by `owner` when given.
Status write_fresh_file(const std::filesystem::path& file, std::string_view text,
                        std::optional<FileOwner> owner = std::nullopt);

// An empty `file` as write_fresh_file makes it; an existing empty plain file with one link and
// the right owner is left as it is (most steps write no file command: one lstat).
Status ensure_empty_file(const std::filesystem::path& file, std::optional<FileOwner> owner);

// The contents of `file`, read without following a link; "" when it does not exist. A link or
// anything but a plain file is an invalid_input error naming it.
Result<std::string> read_plain_file(const std::filesystem::path& file);

}  // namespace kiln::core
