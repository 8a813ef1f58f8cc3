// Warp-size assumptions that compile for HIP but are wrong on 64-lane wavefronts.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define WARP_SIZE 32
#define FULL_MASK 0xffffffff

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    v += __shfl_down_sync(FULL_MASK, v, offset);
  }
  return v;
}

__device__ int lanes() {
  int lane = threadIdx.x & 31;
  int tid = threadIdx.x;
  int warp = tid >> 5;
  unsigned mask = __activemask();
  __syncwarp();
  unsigned vote = __ballot_sync(0xffffffff, lane < 4);
  return lane + warp + static_cast<int>(mask + vote);
}

__device__ float tile_sum(float v) {
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  return cg::reduce(tile, v, cg::plus<float>());
}

__device__ int not_a_hazard(int x) {
  int columns = x % 32;        // no lane or warp name, no warp operation
  return columns + (x >> 5) + warpSize;
}
