#pragma once
// CUDA headers and the HIP headers that replace them. HIPIFY's API tables do not list headers,
// so this small map is Kiln's own (from the ROCm library names).

#include <optional>
#include <string_view>

namespace kiln::hipcheck {

struct HeaderMatch {
  std::string_view hip;  // the HIP header to include instead; empty when there is none
};

// `name` is the header as written between the delimiters ("cuda_runtime.h", "cub/cub.cuh").
// Returns nothing for a header that is not CUDA's.
std::optional<HeaderMatch> classify_header(std::string_view name);

}  // namespace kiln::hipcheck
