// Code already ported for both platforms: what only a CUDA build compiles is no port blocker.
#ifdef USE_ROCM
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#if !defined(__HIP_PLATFORM_AMD__) && CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif

// A HIP build before ROCm 6 takes the #else: it is not CUDA-only.
#if defined(USE_ROCM) && ROCM_VERSION >= 60000
typedef int fast_t;
#else
#include <cuda_fp8.h>
#endif

// A shim: after it, __nv_bfloat16 is HIP's type in a HIP build.
#ifdef __HIPCC__
typedef __hip_bfloat16 __nv_bfloat16;
#endif
__device__ float to_float(__nv_bfloat16 b);

void sync_device() {
#if defined(__HIP__) || defined(__HIP_PLATFORM_HCC__)
  (void)hipDeviceSynchronize();
#elif CUDART_VERSION >= 12000
  cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                     cudaFlushGPUDirectRDMAWritesToOwner);
#else
  cudaThreadSynchronize();
#endif
}

// The project's own macro counts with --hip-macro KILN_PROJECT_HIP (or kiln.yml).
#ifndef KILN_PROJECT_HIP
void flush() { cudaDeviceFlushGPUDirectRDMAWrites(t, s); }
#endif
