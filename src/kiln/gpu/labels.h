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

// The labels this host serves (docs/workflows.md "Runner labels"): `self-hosted`, `linux`, the
// machine's architecture (`x64`, `arm64`), `ubuntu-*`, the GPU grammar (request.h), and the labels
// added here: custom GPU labels (`add`) and plain ones that ask for nothing (`serve`). A job may
// only ask for labels the host serves, as a GitHub runner takes only jobs whose every label it has.
class GpuLabelMap {
 public:
  // Adds a mapping; labels are the request in the default grammar (request.h). Errors: an empty
  // or malformed pattern, a placeholder the pattern does not define, or (for a pattern without
  // placeholders) a request that does not parse. `where` is the config line, for the messages.
  Status add(const std::string& pattern, const std::vector<std::string>& labels,
             const SourceLocation& where = {});

  // A label the host serves that asks for no GPU (kiln.yml `labels:`, `kiln run --label NAME`);
  // the same pattern syntax.
  Status serve(const std::string& pattern, const SourceLocation& where = {});

  // The labels with every custom label replaced by its request (same location: errors point at
  // the workflow's label; mapped_from names the custom label). Labels no mapping matches are
  // kept as they are. Case-insensitive.
  std::vector<GpuLabel> expand(std::span<const GpuLabel> labels) const;

  // Whether this host serves the label (see above). Case-insensitive.
  bool serves(std::string_view label) const;
  // The labels served without a mapping (self-hosted, linux, ...), for messages.
  static std::vector<std::string> builtin_labels();
  // The patterns added, as written.
  std::vector<std::string> patterns() const;

  bool empty() const { return entries_.empty(); }

 private:
  struct Entry {
    std::string pattern;
    std::regex regex;
    std::vector<std::string> names;   // placeholder names, in order
    std::vector<std::string> labels;  // the request; empty: a plain label
    SourceLocation where;
  };
  static Result<Entry> compile(const std::string& pattern, const SourceLocation& where);
  std::vector<Entry> entries_;
};

}  // namespace kiln::gpu
