#pragma once
// CUDA headers and the HIP headers that replace them. HIPIFY's API tables do not list headers,
// so this map is Kiln's own: the header names the CUDA toolkit (and its libraries) installs,
// nothing else, so that a project's own "cuda_helpers.h" is never taken for CUDA's.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kiln::hipcheck {

struct HeaderMatch {
  std::string_view hip;  // the HIP header to include instead; empty when there is none
};

// `name` is the header as written between the delimiters ("cuda_runtime.h", "cub/cub.cuh").
// Returns nothing for a header that is not one the CUDA toolkit installs.
std::optional<HeaderMatch> classify_header(std::string_view name);

// The files of one scan, to tell a project's own header from CUDA's: `#include "x.h"` that names
// one of them (beside the including file, or below an include directory of the tree) is the
// project's, whatever its name.
class ProjectFiles {
 public:
  ProjectFiles() = default;
  explicit ProjectFiles(std::span<const std::string> paths);
  // Whether the quoted include `header` in file `including` resolves to a file of the scan, or
  // to a file on disk beside `including`.
  bool resolves(std::string_view including, std::string_view header) const;
  // The index (in the paths given) of the file `#include "header"` or `<header>` in `including`
  // names: the one beside `including`, else the first whose path ends with "/header".
  std::optional<std::size_t> find(std::string_view including, std::string_view header) const;

 private:
  std::unordered_map<std::string, std::size_t> paths_;
  std::unordered_map<std::string, std::size_t> tails_;  // every "dir/.../name" suffix of a path
};

}  // namespace kiln::hipcheck
