// The ported kernel: element-wise addition, written for HIP.
#include <hip/hip_runtime.h>

__global__ void vector_add(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

void launch_vector_add(const float* a, const float* b, float* out, int n, hipStream_t stream) {
  hipLaunchKernelGGL(vector_add, dim3((n + 255) / 256), dim3(256), 0, stream, a, b, out, n);
}
