#pragma once
// A job's GPU request from its runs-on labels (DESIGN.md "GPU requests", default grammar; all
// valid GitHub labels, compared case-insensitively as GitHub does):
//   gpu                  one GPU            gpu:N        N GPUs        gpu:all   every GPU
//   gpu-vendor:nvidia|amd                   gpu-model:<substring of the model name>
//   gpu-arch:sm_90|gfx942                   gpu-mem:<N>G  at least N GiB free on each GPU
//   gpu-mem-budget:<N>G|<N>M   the job's processes may use at most this much memory of one GPU
//                              (telemetry.h: exceeding it fails the job)
// A qualifier without a count asks for one GPU. Other labels, including custom ones that start
// with "gpu-" (gpu-a100, roc-gpu-mi200: the host config maps those), are not this grammar's and
// are left alone.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::gpu {

struct GpuRequest {
  int count = 0;       // GPUs wanted; 0 with all == false: no GPU
  bool all = false;    // gpu:all: every GPU of the host that matches
  std::string vendor;  // "nvidia", "amd", or empty for any
  std::string model;   // lowercase substring of the model name, or empty
  std::string arch;    // "sm_90", "gfx942", or empty
  std::uint64_t min_free_mib = 0;
  std::uint64_t memory_budget_mib = 0;  // gpu-mem-budget; 0: none

  bool wants_gpus() const { return all || count > 0; }
  // The request in label form, for messages: "gpu:2 gpu-vendor:nvidia gpu-mem:40G".
  std::string to_string() const;
};

// A label and where the workflow wrote it (errors are reported there, as FILE:LINE:COL).
struct GpuLabel {
  std::string value;
  SourceLocation where;
  // The host's custom label this one is part of the request of (labels.h), and where the host
  // config maps it; empty: the workflow wrote it. A bare `gpu` of a mapping says the kind, not
  // the count: next to `gpu:N` it means N GPUs of that kind.
  std::string mapped_from = {};
  SourceLocation mapped_where = {};
};

// True for a label of the grammar above: `gpu`, `gpu:...`, `gpu-vendor:...`, `gpu-model:...`,
// `gpu-arch:...`, `gpu-mem:...`, `gpu-mem-budget:...` (valid or not).
bool is_grammar_label(std::string_view label);

// Errors: a malformed value ("gpu:0", "gpu:two", "gpu-mem:16", "gpu-vendor:intel",
// "gpu-arch:90"), two different counts, two different values for one qualifier, a vendor that
// contradicts the arch; a label that comes from a custom label is named by that label.
Result<GpuRequest> parse_gpu_request(std::span<const GpuLabel> labels);
Result<GpuRequest> parse_gpu_request(const std::vector<std::string>& labels);

}  // namespace kiln::gpu
