// CUDA libraries and device forms HIPIFY's tables do not list (issue 17 item 6): name families
// recognised by their prefix (NPP, nvJPEG, NVML, NVTX, cuDLA, NvSci, libNVVM), the qualified
// forms `wmma::` (mma.h) and `cuda::` (libcu++), and where ROCm has a counterpart, its name.
#include <algorithm>
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

// A name is in a family when it starts with the prefix and the next character is an upper-case
// letter or a digit after a lower-case prefix (nvtxRangePushA, cudlaCreateDevice; not
// nvtx_helper), anything but a lower-case letter after an upper-case one (Npp8u, NPP_SUCCESS).
// NVML by the words its API starts with: projects name their own nvmlDev, nvml_check.
constexpr std::string_view k_nvml_counterpart =
    "ROCm SMI (rsmi_*, rocm_smi/rocm_smi.h) or AMD SMI (amdsmi_*), a different API";
constexpr auto k_families = std::to_array<Family>({
    {"nvmlInit", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlShutdown", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlDevice", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlSystem", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlUnit", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlEvent", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlGpuInstance", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlComputeInstance", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlVgpu", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlGpm", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlErrorString", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlReturn_t", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlMemory", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlUtilization", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlPciInfo", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlProcessInfo", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlEnableState", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlClockType", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlTemperature", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlPstates", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlNvLink", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlSample", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"nvmlValueType", Library::nvml, Category::unsupported, k_nvml_counterpart},
    {"NVML_", Library::nvml, Category::unsupported, k_nvml_counterpart},
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

namespace {

const Family* family_of(std::string_view name) {
  // Runs for most identifiers: reject by the first two characters (nv, np, Np, NP, Nv, NV, cu).
  if (name.size() < 4) return nullptr;
  char c = name[0], d = name[1];
  bool maybe = (c == 'n' && (d == 'v' || d == 'p')) ||
               (c == 'N' && (d == 'p' || d == 'P' || d == 'v' || d == 'V')) ||
               (c == 'c' && d == 'u' && name.starts_with("cudla"));
  if (!maybe) return nullptr;
  for (const Family& f : k_families) {
    if (name.size() < f.prefix.size() || !name.starts_with(f.prefix)) continue;
    // The bare prefix is a name only when it is an API word (nvmlInit), not a stem (npp: a
    // project's own namespace npp:: is common).
    bool word = std::any_of(f.prefix.begin() + 1, f.prefix.end(),
                            [](char ch) { return ch >= 'A' && ch <= 'Z'; });
    if (name.size() == f.prefix.size() && !word) continue;
    if (name.size() > f.prefix.size()) {
      char last = f.prefix.back(), next = name[f.prefix.size()];
      bool lower_prefix = last >= 'a' && last <= 'z';
      if (next >= 'a' && next <= 'z') continue;
      if (lower_prefix && !((next >= 'A' && next <= 'Z') || (next >= '0' && next <= '9'))) continue;
    }
    return &f;
  }
  return nullptr;
}

}  // namespace

bool Scanner::library_family_name(std::string_view name) { return family_of(name) != nullptr; }

bool Scanner::library_family(std::size_t i, std::string_view name) {
  const Family* family = family_of(name);
  if (!family) return false;
  // The project's own: a macro, a shim or a name an included header defines (NPP_ASSERT).
  if (defined_names_.contains(name)) return true;
  const Family& f = *family;
  std::string_view kept = keep(name);
  std::string_view message =
      f.counterpart.empty() ? format("{} ({}) has no HIP equivalent", name, library_name(f.library))
                            : format("{} ({}) -> {}", name, library_name(f.library), f.counterpart);
  Finding& finding = add(Rule::cuda_api, f.category, i, kept, message);
  finding.status =
      f.category == Category::unsupported ? ApiStatus::unsupported : ApiStatus::convertible;
  finding.library = library_name(f.library);
  record_use(kept, f.category);
  return true;
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
