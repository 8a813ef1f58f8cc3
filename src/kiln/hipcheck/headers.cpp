#include "kiln/hipcheck/headers.h"

#include <array>
#include <filesystem>
#include <system_error>
#include <utility>

namespace kiln::hipcheck {

namespace {

using Pair = std::pair<std::string_view, std::string_view>;

// Headers the CUDA toolkit installs, with the HIP/ROCm header to use ("" when there is none).
constexpr auto k_headers = std::to_array<Pair>({
    // Runtime, driver and device headers: hip/hip_runtime.h covers them.
    {"cuda.h", "hip/hip_runtime.h"},
    {"cuda_runtime.h", "hip/hip_runtime.h"},
    {"cuda_runtime_api.h", "hip/hip_runtime_api.h"},
    {"cuda_device_runtime_api.h", "hip/hip_runtime.h"},
    {"device_launch_parameters.h", "hip/hip_runtime.h"},
    {"device_functions.h", "hip/hip_runtime.h"},
    {"device_atomic_functions.h", "hip/hip_runtime.h"},
    {"device_types.h", "hip/hip_runtime.h"},
    {"builtin_types.h", "hip/hip_runtime.h"},
    {"host_defines.h", "hip/hip_runtime.h"},
    {"math_functions.h", "hip/hip_runtime.h"},
    {"vector_functions.h", "hip/hip_runtime.h"},
    {"surface_functions.h", "hip/hip_runtime.h"},
    {"texture_fetch_functions.h", "hip/hip_runtime.h"},
    {"texture_indirect_functions.h", "hip/hip_runtime.h"},
    {"sm_20_atomic_functions.h", "hip/hip_runtime.h"},
    {"sm_32_atomic_functions.h", "hip/hip_runtime.h"},
    {"sm_35_atomic_functions.h", "hip/hip_runtime.h"},
    {"sm_60_atomic_functions.h", "hip/hip_runtime.h"},
    {"sm_20_intrinsics.h", "hip/hip_runtime.h"},
    {"sm_30_intrinsics.h", "hip/hip_runtime.h"},
    {"sm_32_intrinsics.h", "hip/hip_runtime.h"},
    {"sm_35_intrinsics.h", "hip/hip_runtime.h"},
    {"sm_61_intrinsics.h", "hip/hip_runtime.h"},
    {"driver_types.h", "hip/driver_types.h"},
    {"channel_descriptor.h", "hip/channel_descriptor.h"},
    {"library_types.h", "hip/library_types.h"},
    {"texture_types.h", "hip/texture_types.h"},
    {"cuda_texture_types.h", "hip/hip_texture_types.h"},
    {"surface_types.h", "hip/surface_types.h"},
    {"cuda_surface_types.h", "hip/surface_types.h"},
    {"vector_types.h", "hip/hip_vector_types.h"},
    {"math_constants.h", "hip/hip_math_constants.h"},
    {"cuda_fp16.h", "hip/hip_fp16.h"},
    {"cuda_fp16.hpp", "hip/hip_fp16.h"},
    {"cuda_bf16.h", "hip/hip_bf16.h"},
    {"cuda_bf16.hpp", "hip/hip_bf16.h"},
    {"cuda_fp8.h", "hip/hip_fp8.h"},
    {"cuda_fp8.hpp", "hip/hip_fp8.h"},
    {"cuda_fp6.h", ""},
    {"cuda_fp4.h", ""},
    {"cuda_profiler_api.h", "hip/hip_runtime_api.h"},
    {"cudaProfiler.h", "hip/hip_runtime_api.h"},
    {"cuda_gl_interop.h", "hip/hip_gl_interop.h"},
    {"cudaGL.h", "hip/hip_gl_interop.h"},
    {"cuda_occupancy.h", ""},
    {"cuda_pipeline.h", ""},
    {"cuda_pipeline_primitives.h", ""},
    {"cuda_awbarrier.h", ""},
    {"cuda_awbarrier_primitives.h", ""},
    {"cuda_egl_interop.h", ""},
    {"cudaEGL.h", ""},
    {"cuda_d3d9_interop.h", ""},
    {"cuda_d3d10_interop.h", ""},
    {"cuda_d3d11_interop.h", ""},
    {"cudaD3D9.h", ""},
    {"cudaD3D10.h", ""},
    {"cudaD3D11.h", ""},
    {"cuda_vdpau_interop.h", ""},
    {"cudaVDPAU.h", ""},
    {"cudaTypedefs.h", ""},
    {"cuComplex.h", "hip/hip_complex.h"},
    {"cooperative_groups.h", "hip/hip_cooperative_groups.h"},
    {"cuda_cooperative_groups.h", "hip/hip_cooperative_groups.h"},
    {"nvfunctional", ""},
    // Libraries.
    {"nvrtc.h", "hip/hiprtc.h"},
    {"cublas.h", "hipblas/hipblas.h"},
    {"cublas_v2.h", "hipblas/hipblas.h"},
    {"cublas_api.h", "hipblas/hipblas.h"},
    {"cublasLt.h", "hipblaslt/hipblaslt.h"},
    {"cublasXt.h", ""},
    {"cudnn.h", "hipdnn.h"},
    {"cufft.h", "hipfft/hipfft.h"},
    {"cufftXt.h", "hipfft/hipfftXt.h"},
    {"cufftw.h", ""},
    {"curand.h", "hiprand/hiprand.h"},
    {"curand_kernel.h", "hiprand/hiprand_kernel.h"},
    {"cusolverDn.h", "hipsolver/hipsolver.h"},
    {"cusolverSp.h", "hipsolver/hipsolver.h"},
    {"cusolverRf.h", "hipsolver/hipsolver.h"},
    {"cusolver_common.h", "hipsolver/hipsolver.h"},
    {"cusolverMg.h", ""},
    {"cusparse.h", "hipsparse/hipsparse.h"},
    {"cusparse_v2.h", "hipsparse/hipsparse.h"},
    {"cusparseLt.h", "hipsparselt/hipsparselt.h"},
    {"cutensor.h", "hiptensor/hiptensor.h"},
    {"nvToolsExt.h", "roctracer/roctx.h"},
    {"nvToolsExtCuda.h", "roctracer/roctx.h"},
    {"nvToolsExtCudaRt.h", "roctracer/roctx.h"},
    {"nvml.h", "rocm_smi/rocm_smi.h"},
    {"nvjpeg.h", "rocjpeg/rocjpeg.h"},
    {"nvcuvid.h", "rocdecode/rocdecode.h"},
    {"cuviddec.h", "rocdecode/rocdecode.h"},
    {"mma.h", "rocwmma/rocwmma.hpp"},
    {"cudla.h", ""},
    {"nvscibuf.h", ""},
    {"nvscisync.h", ""},
    {"nvvm.h", ""},
    {"cufile.h", ""},
    {"npp.h", ""},
    {"nppcore.h", ""},
    {"nppdefs.h", ""},
});

// Folders of toolkit headers (CUB, libcu++, cooperative groups, NVTX 3, the CUDA runtime's
// internals), and header families named by a prefix (nppi*.h, curand_*.h, cudnn_*.h).
constexpr auto k_folders = std::to_array<Pair>({
    {"cub/", "hipcub/hipcub.hpp"},
    {"cuda/", ""},
    {"nv/", ""},
    {"cooperative_groups/", ""},
    {"crt/", "hip/hip_runtime.h"},
    {"nvtx3/", "roctracer/roctx.h"},
});
constexpr auto k_families = std::to_array<Pair>({
    {"nppi", ""},
    {"npps", ""},
    {"curand_", "hiprand/hiprand_kernel.h"},
    {"cudnn_", "hipdnn.h"},
});

}  // namespace

std::optional<HeaderMatch> classify_header(std::string_view name) {
  for (const auto& [cuda, hip] : k_headers)
    if (name == cuda) return HeaderMatch{hip};
  for (const auto& [folder, hip] : k_folders)
    if (name.starts_with(folder)) return HeaderMatch{hip};
  if (name.find('/') == std::string_view::npos && name.ends_with(".h"))
    for (const auto& [prefix, hip] : k_families)
      if (name.starts_with(prefix)) return HeaderMatch{hip};
  return std::nullopt;
}

ProjectFiles::ProjectFiles(std::span<const std::string> paths) {
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    paths_.emplace(std::filesystem::path(path).lexically_normal().generic_string(), i);
    for (std::size_t at = path.find('/'); at != std::string::npos; at = path.find('/', at + 1))
      tails_.emplace(path.substr(at + 1), i);  // the first path with this tail keeps it
    tails_.emplace(path, i);
  }
}

std::optional<std::size_t> ProjectFiles::find(std::string_view including,
                                              std::string_view header) const {
  namespace fs = std::filesystem;
  std::string beside =
      (fs::path(including).parent_path() / fs::path(header)).lexically_normal().generic_string();
  if (auto it = paths_.find(beside); it != paths_.end()) return it->second;
  if (auto it = tails_.find(std::string(header)); it != tails_.end()) return it->second;
  return std::nullopt;
}

bool ProjectFiles::resolves(std::string_view including, std::string_view header) const {
  if (find(including, header)) return true;
  namespace fs = std::filesystem;
  std::error_code ec;
  return fs::is_regular_file(fs::path(including).parent_path() / fs::path(header), ec);
}

}  // namespace kiln::hipcheck
