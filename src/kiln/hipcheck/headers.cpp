#include "kiln/hipcheck/headers.h"

#include <array>
#include <utility>

namespace kiln::hipcheck {

namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 38> k_headers{{
    {"cuda.h", "hip/hip_runtime.h"},
    {"cuda_runtime.h", "hip/hip_runtime.h"},
    {"cuda_runtime_api.h", "hip/hip_runtime_api.h"},
    {"device_launch_parameters.h", "hip/hip_runtime.h"},
    {"device_functions.h", "hip/hip_runtime.h"},
    {"cuda_fp16.h", "hip/hip_fp16.h"},
    {"cuda_bf16.h", "hip/hip_bf16.h"},
    {"cuda_fp8.h", "hip/hip_fp8.h"},
    {"cuda_profiler_api.h", "hip/hip_runtime_api.h"},
    {"cuda_texture_types.h", "hip/hip_texture_types.h"},
    {"texture_fetch_functions.h", "hip/hip_runtime.h"},
    {"surface_types.h", "hip/surface_types.h"},
    {"vector_types.h", "hip/hip_vector_types.h"},
    {"math_constants.h", "hip/hip_math_constants.h"},
    {"cuComplex.h", "hip/hip_complex.h"},
    {"cuda_cooperative_groups.h", "hip/hip_cooperative_groups.h"},
    {"cooperative_groups.h", "hip/hip_cooperative_groups.h"},
    {"cooperative_groups/reduce.h", ""},
    {"cooperative_groups/scan.h", ""},
    {"cooperative_groups/memcpy_async.h", ""},
    {"nvrtc.h", "hip/hiprtc.h"},
    {"cublas.h", "hipblas/hipblas.h"},
    {"cublas_v2.h", "hipblas/hipblas.h"},
    {"cublas_api.h", "hipblas/hipblas.h"},
    {"cublasLt.h", "hipblaslt/hipblaslt.h"},
    {"cudnn.h", "hipdnn.h"},
    {"cufft.h", "hipfft/hipfft.h"},
    {"cufftXt.h", "hipfft/hipfftXt.h"},
    {"curand.h", "hiprand/hiprand.h"},
    {"curand_kernel.h", "hiprand/hiprand_kernel.h"},
    {"cusolverDn.h", "hipsolver/hipsolver.h"},
    {"cusolverSp.h", "hipsolver/hipsolver.h"},
    {"cusolver_common.h", "hipsolver/hipsolver.h"},
    {"cusparse.h", "hipsparse/hipsparse.h"},
    {"cusparse_v2.h", "hipsparse/hipsparse.h"},
    {"cub/cub.cuh", "hipcub/hipcub.hpp"},
    {"nvToolsExt.h", "roctracer/roctx.h"},
    {"nvml.h", "rocm_smi/rocm_smi.h"},
}};

}  // namespace

std::optional<HeaderMatch> classify_header(std::string_view name) {
  for (const auto& [cuda, hip] : k_headers)
    if (name == cuda) return HeaderMatch{hip};
  // Other headers of the same families: known to be CUDA's, HIP equivalent unknown.
  if (name.starts_with("cub/")) return HeaderMatch{"hipcub/hipcub.hpp"};
  if (name.starts_with("cooperative_groups/") || name.starts_with("cuda/") ||
      name.starts_with("crt/") || name.starts_with("nvtx3/") || name.starts_with("cuda_") ||
      name.starts_with("cusolver") || name.starts_with("cusparse") || name.starts_with("cublas") ||
      name.starts_with("cufft") || name.starts_with("curand") || name.starts_with("cudnn") ||
      name.starts_with("nvrtc") ||
      (name.starts_with("sm_") && name.find("_intrinsics") != std::string_view::npos) ||
      (name.starts_with("cuda") && name.ends_with(".h")))
    return HeaderMatch{""};
  return std::nullopt;
}

}  // namespace kiln::hipcheck
