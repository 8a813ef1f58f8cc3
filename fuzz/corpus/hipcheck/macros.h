// A checking macro defined in a header: its CUDA uses are reported here, and its expansions
// where it is used (macros.cu).
#pragma once
#include <cstdio>

#define CUDA_CHECK(call)                                                  \
  do {                                                                    \
    cudaError_t status_ = (call);                                         \
    if (status_ != cudaSuccess)                                           \
      std::fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(status_)); \
  } while (0)

#define SYNC_ALL() CUDA_CHECK(cudaDeviceSynchronize())

#define NOT_CUDA(x) ((x) + 1)
