// Library APIs: cuBLAS, cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuDNN, CUB, cuComplex, NVRTC.
#include <cublas_v2.h>
#include <cufft.h>
#include <curand.h>
#include <cub/cub.cuh>
#include <cuComplex.h>
#include <nvrtc.h>
#include <cuda/std/atomic>

void blas(cublasHandle_t handle, int n, const float* x, float* y) {
  float alpha = 1.0f;
  cublasSaxpy(handle, n, &alpha, x, 1, y, 1);
  cufftHandle plan;
  cufftPlan1d(&plan, n, CUFFT_C2C, 1);
  curandGenerator_t gen;
  curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT);
  cuFloatComplex z = make_cuFloatComplex(1.0f, 0.0f);
  (void)z;
  nvrtcProgram program;
  (void)program;
  using Reduce = cub::BlockReduce<float, 128>;
}

unsigned lane_id() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

unsigned long long cycles() {
  unsigned lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));  // x86, not PTX
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}
