// Runtime API uses: convertible, deprecated, removed and unsupported names.
#include <cuda_runtime.h>
#include "cuda_fp16.h"
#include <vector>

__global__ void scale(float* data, float factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

void run(std::vector<float>& host) {
  float* device = nullptr;
  size_t bytes = host.size() * sizeof(float);
  cudaMalloc(&device, bytes);  // cudaFree in a comment does not count
  cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice);
  scale<<<(host.size() + 255) / 256, 256>>>(device, 2.0f, static_cast<int>(host.size()));
  cudaThreadSynchronize();
  cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                     cudaFlushGPUDirectRDMAWritesToOwner);
  const char* message = "cudaMemcpy failed";
  (void)message;
  /* cudaMallocManaged(&device, bytes);
     cudaDeviceReset(); */
#if 0
  cudaMallocHost(&device, bytes);
#endif
  cudaFree(device);
}
