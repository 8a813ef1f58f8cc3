#pragma once
// Which files a `kiln hipcheck PATH...` run scans: named files as they are, directories
// recursively, keeping sources with a scanned extension and honouring .gitignore files (those
// of the enclosing git work tree above the directory too, and .git/info/exclude).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::hipcheck {

// The default extensions: C, C++, CUDA and HIP sources and headers.
std::vector<std::string> default_extensions();

// The files to scan, '/'-separated, lexically normal, sorted and unique. A path that does not
// exist is a not_found error "PATH: error: no such file or directory". What is skipped is said
// in `warnings` ("PATH: warning: ..."): FIFOs, devices and sockets (named or found), symlink loops
// and broken symlinks. Symlinked directories are not followed.
Result<std::vector<std::string>> find_sources(const std::vector<std::string>& paths,
                                              const std::vector<std::string>& extensions,
                                              std::vector<std::string>* warnings = nullptr);

// Why `status` is not a file hipcheck reads ("a FIFO", "a character device", ...), or "" for a
// regular file.
std::string_view special_file_kind(const std::filesystem::file_status& status);

}  // namespace kiln::hipcheck
