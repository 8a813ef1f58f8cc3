// CUDA libraries and device forms HIPIFY's tables do not list (issue 17 item 6): name families
// recognised by their prefix (NPP, nvJPEG, NVML, NVTX, cuDLA, NvSci, libNVVM), the qualified
// forms `wmma::` (mma.h) and `cuda::` (libcu++), and where ROCm has a counterpart, its name.
#include <array>

#include "kiln/hipcheck/scanner_impl.h"

namespace kiln::hipcheck::detail {

namespace {

struct Family {
  std::string_view prefix;
  Library library;
  Category category;
  std::string_view counterpart;  // what to use on ROCm, or "" for none
};

// A name is in a family when it starts with the prefix and the next character is not a
// lower-case letter (nvmlInit, Npp8u, NPP_SUCCESS; not nvmlx or Nppy).
constexpr auto k_families = std::to_array<Family>({
    {"nvml", Library::nvml, Category::unsupported,
     "ROCm SMI (rsmi_*, rocm_smi/rocm_smi.h) or AMD SMI (amdsmi_*), a different API"},
    {"nvtx", Library::nvtx, Category::convertible,
     "roctx (roctracer/roctx.h: roctxRangePush/Pop, roctxMark)"},
    {"nvjpeg", Library::nvjpeg, Category::unsupported,
     "rocJPEG (rocJpeg*, rocjpeg/rocjpeg.h), a different API"},
    {"nppi", Library::npp, Category::unsupported, ""},
    {"npps", Library::npp, Category::unsupported, ""},
    {"npp", Library::npp, Category::unsupported, ""},
    {"Nppi", Library::npp, Category::unsupported, ""},
    {"Npps", Library::npp, Category::unsupported, ""},
    {"Npp", Library::npp, Category::unsupported, ""},
    {"NPP_", Library::npp, Category::unsupported, ""},
    {"cudla", Library::cudla, Category::unsupported, ""},
    {"NvSciBuf", Library::nvsci, Category::unsupported, ""},
    {"NvSciSync", Library::nvsci, Category::unsupported, ""},
    {"nvvm", Library::nvvm, Category::unsupported, ""},
});

// libcu++ names under cuda:: (cuda::std::... is all of it).
constexpr auto k_libcudacxx = std::to_array<std::string_view>({"std",
                                                               "atomic",
                                                               "atomic_ref",
                                                               "barrier",
                                                               "pipeline",
                                                               "memcpy_async",
                                                               "thread_scope",
                                                               "thread_scope_system",
                                                               "thread_scope_device",
                                                               "thread_scope_block",
                                                               "thread_scope_thread",
                                                               "aligned_size_t",
                                                               "annotated_ptr",
                                                               "access_property",
                                                               "discard_memory",
                                                               "latch",
                                                               "binary_semaphore",
                                                               "counting_semaphore",
                                                               "stream_ref",
                                                               "ptx",
                                                               "make_pipeline",
                                                               "pipeline_shared_state",
                                                               "mr",
                                                               "device",
                                                               "launch"});

}  // namespace

bool Scanner::library_family(std::size_t i, std::string_view name) {
  char c = name[0];
  if (c != 'n' && c != 'N' && c != 'c') return false;
  for (const Family& f : k_families) {
    if (name.size() <= f.prefix.size() || !name.starts_with(f.prefix)) continue;
    char next = name[f.prefix.size()];
    if (next >= 'a' && next <= 'z') continue;
    std::string_view kept = keep(name);
    std::string_view message =
        f.counterpart.empty()
            ? format("{} ({}) has no HIP equivalent", name, library_name(f.library))
            : format("{} ({}) -> {}", name, library_name(f.library), f.counterpart);
    Finding& finding = add(Rule::cuda_api, f.category, i, kept, message);
    finding.status =
        f.category == Category::unsupported ? ApiStatus::unsupported : ApiStatus::convertible;
    finding.library = library_name(f.library);
    record_use(kept, f.category);
    return true;
  }
  return false;
}

void Scanner::qualified_library(std::size_t i, std::string_view space) {
  std::string_view member = text(i + 2);
  std::string_view qualified = format("{}::{}", space, member);
  if (space == "wmma") {
    Finding& f = add(Rule::cuda_api, Category::convertible, i, qualified,
                     format("{} (WMMA, mma.h) -> rocwmma::{} (rocWMMA)", qualified, member));
    f.status = ApiStatus::convertible;
    f.replacement = format("rocwmma::{}", member);
    f.library = library_name(Library::wmma);
    record_use(qualified, Category::convertible);
    return;
  }
  bool known = false;
  for (std::string_view m : k_libcudacxx) known = known || member == m;
  if (!known) return;  // some other namespace called cuda
  Finding& f = add(Rule::cuda_api, Category::unsupported, i, qualified,
                   format("{} (libcu++) has no HIP equivalent", qualified));
  f.status = ApiStatus::unsupported;
  f.library = library_name(Library::libcudacxx);
  record_use(qualified, Category::unsupported);
}

}  // namespace kiln::hipcheck::detail
