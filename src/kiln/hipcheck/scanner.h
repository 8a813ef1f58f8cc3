#pragma once
// Scans one source file: lexes it (lexer.h) and applies every rule to the tokens, so a file is
// read once. Files are independent except for macros: a macro defined with CUDA in a header and
// used in a .cu file is reported where it expands, which needs the header's definition. The
// scan therefore returns the CUDA macros a file defines; hipcheck.cpp rescans only the files
// whose text contains the name of another file's CUDA macro.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kiln/hipcheck/finding.h"
#include "kiln/hipcheck/headers.h"
#include "kiln/hipcheck/lexer.h"
#include "kiln/hipcheck/rocm.h"

namespace kiln::hipcheck {

// A macro whose definition uses CUDA.
struct CudaMacro {
  std::string name;
  std::string file;
  int line = 0;
  bool function_like = false;
  Category category = Category::convertible;  // unsupported if any use in it is
  std::vector<std::string> uses;              // the CUDA names in its body, in order, unique
};
using MacroMap = std::unordered_map<std::string, CudaMacro>;

struct FileScan {
  std::string path;
  std::uint32_t lines = 0;
  std::uint32_t code_lines = 0;
  std::vector<Finding> findings;  // sorted by line, then column
  // The text the findings' views point into; shared by copies of this FileScan.
  std::shared_ptr<TextArena> strings;
  std::vector<CudaMacro> macros;  // CUDA macros this file defines
  // CUDA names this file makes HIP's (`#define cudaMalloc hipMalloc`, `typedef __hip_bfloat16
  // __nv_bfloat16;`): they are HIP in the files that include it too.
  std::vector<std::string> shims;
};

// What a scan judges by, the same for every file of a run.
struct ScanOptions {
  RocmVersion rocm = newest_known_rocm();  // support is judged for this ROCm release
  // The files scanned together: a quoted include of one of them is the project's own header.
  const ProjectFiles* project = nullptr;
  // The project's own macros that mean "building for HIP" (kiln.yml hipcheck.hip_macros,
  // --hip-macro), besides USE_ROCM, __HIP_PLATFORM_AMD__, __HIPCC__, __HIP__, HIP_PLATFORM ...
  std::vector<std::string> hip_macros;
};
// The macros every scan takes for "building for HIP".
std::span<const std::string_view> builtin_hip_macros();
const ScanOptions& default_scan_options();

// Scans `source` (the contents of `path`). `external` holds CUDA macros defined in the files it
// includes; a use of one of them is reported unless this file defines or #undefs the name
// first. `shims` are CUDA names those files make HIP's. `tokens` is scratch space, reused across
// calls by one thread.
FileScan scan_source(std::string_view path, std::string_view source, const MacroMap* external,
                     std::vector<Token>& tokens,
                     const ScanOptions& options = default_scan_options(),
                     const std::vector<std::string>* shims = nullptr);
FileScan scan_source(std::string_view path, std::string_view source,
                     const MacroMap* external = nullptr,
                     const ScanOptions& options = default_scan_options());

// Whether `path` is a CUDA source (.cu, .cuh): there, a few CUDA device functions with
// generic names (umin, saturate, ...) are reported, and any inline asm is taken for PTX.
bool is_cuda_file(std::string_view path);

}  // namespace kiln::hipcheck
