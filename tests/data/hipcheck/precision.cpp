// Nothing here is a CUDA use: names inside literals, comments, dead blocks, members,
// other namespaces and longer identifiers.
#include <string>
#include "mine.h"
#define cudaMalloc hipMalloc  // a porting shim defines the CUDA name: not a use

struct Device {
  int cudaMalloc() const { return 0; }
};

int precise(const Device& d, Device* p) {
  std::string raw = R"x(cudaMemcpy(dst, src, n, cudaMemcpyDefault); )" still raw)x";
  std::string wide = LR"(cudaFree)";
  char quote = '"';
  char apostrophe = '\'';
  int big = 1'000'000;  // digit separators are not character literals: cudaFree
  int my_cudaMalloc = 0, cudaMallocX = 0;
  // a continued comment \
     cudaDeviceReset();
#if 1
  int kept = 1;
#else
  cudaDeviceReset();
#endif
  return d.cudaMalloc() + p->cudaMalloc() + mine::cudaFree(nullptr) + big + my_cudaMalloc +
         cudaMallocX + quote + apostrophe + kept + static_cast<int>(raw.size() + wide.size());
}
