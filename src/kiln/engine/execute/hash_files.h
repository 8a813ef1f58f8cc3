#pragma once
// hashFiles() of GitHub expressions: one SHA-256 over the SHA-256 of every file matching the
// patterns (GitHub's glob syntax, `!` excludes), relative to the workspace, in path order.
// No matching file gives ''.

#include <filesystem>
#include <string>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::engine {

Result<std::string> hash_files(const std::filesystem::path& workspace,
                               const std::vector<std::string>& patterns);

}  // namespace kiln::engine
