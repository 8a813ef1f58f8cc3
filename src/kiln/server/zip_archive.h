#pragma once
// Artifacts over the API are downloaded as zip files, as actions/upload-artifact's users get
// them from GitHub. Written with libzip (Debian's libzip-dev).

#include <filesystem>

#include "kiln/core/result.h"

namespace kiln::server {

// Writes every regular file and directory under `directory` into a new zip file at `zip_path`
// (replaced if it exists), named by their paths relative to `directory` with '/' separators,
// in sorted order, deflated. Symbolic links are left out: an artifact is the files a job
// uploaded, and a link could point anywhere on the server. Errors: io_error.
Status write_zip(const std::filesystem::path& directory, const std::filesystem::path& zip_path);

}  // namespace kiln::server
