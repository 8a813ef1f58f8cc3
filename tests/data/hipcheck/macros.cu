#include "macros.h"

#define LOCAL_SYNC cudaStreamSynchronize(0)

void use(float* p) {
  CUDA_CHECK(cudaFree(p));
  SYNC_ALL();
  LOCAL_SYNC;
  int CUDA_CHECK = NOT_CUDA(1);  // a function-like macro's name without ( does not expand
  (void)CUDA_CHECK;
}

#undef LOCAL_SYNC
int LOCAL_SYNC = 0;
