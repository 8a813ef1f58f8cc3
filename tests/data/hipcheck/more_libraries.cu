// Libraries and device forms beyond HIPIFY's tables (issue 17 item 6).
#include <mma.h>
#include <nvml.h>
#include <nvToolsExt.h>
#include <npp.h>
#include <nvjpeg.h>
#include <cuda/atomic>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
using namespace nvcuda;
using namespace cooperative_groups;

void host() {
  nvmlInit();
  nvtxRangePushA("step");
  NppiSize size{4, 4};
  nppiResize_8u_C1R(src, 4, size, roi, dst, 4, size, roi, NPPI_INTER_LINEAR);
  nvjpegHandle_t handle;
  cudlaCreateDevice(0, &dev, 0);
  nvvmCreateProgram(&program);
  cuda::atomic<int> counter{0};
  nvtxRangePop();
}

__global__ void kernel(float* out) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
  nvcuda::wmma::fill_fragment(a, 0.0f);
  unsigned mask = __activemask();
  unsigned vote = __ballot_sync(~0u, out[0] > 0);
  float v = __shfl_xor_sync(mask, out[1], 1);
  int sum = __reduce_add_sync(uint32_t(-1), 1);
  thread_block_tile<32> tile = tiled_partition<32>(this_thread_block());
  float r = reduce(tile, v, plus<float>());
#ifdef __CUDA_ARCH__
  out[0] = v + r + sum + vote;
#endif
}
