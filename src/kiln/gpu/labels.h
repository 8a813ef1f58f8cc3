#pragma once
// Custom runs-on labels a host config maps to GPU requests (DESIGN.md "Configuration"): teams
// already name their runners `gpu-a100`, `roc-gpu-mi200` or `linux.rocm.gpu.gfx942.2`, and
// their workflows keep those labels. A pattern may hold placeholders, `{name}`, each matching one
// or more characters other than '.', ':' and '/'; the request's labels may use them:
//
//   gpu-a100: gpu gpu-model:a100
//   linux.rocm.gpu.{arch}.{count}: gpu:{count} gpu-vendor:amd gpu-arch:{arch}

#include <regex>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/gpu/request.h"

namespace kiln::gpu {

class GpuLabelMap {
 public:
  // Adds a mapping; labels are the request in the default grammar (request.h). Errors: an empty
  // or malformed pattern, a placeholder the pattern does not define, or (for a pattern without
  // placeholders) a request that does not parse. `where` is the config line, for the messages.
  Status add(const std::string& pattern, const std::vector<std::string>& labels,
             const SourceLocation& where = {});

  // The labels with every custom label replaced by its request (same location: errors point at
  // the workflow's label). Labels no mapping matches are kept as they are. Case-insensitive.
  std::vector<GpuLabel> expand(std::span<const GpuLabel> labels) const;

  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string pattern;
    std::regex regex;
    std::vector<std::string> names;  // placeholder names, in order
    std::vector<std::string> labels;
  };
  std::vector<Entry> entries_;
};

}  // namespace kiln::gpu
