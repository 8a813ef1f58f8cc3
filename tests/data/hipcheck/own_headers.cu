// Headers of the project itself are not CUDA's, whatever they are called.
#include "cuda_helpers.h"
#include "vendored/nvml.h"
#include <cuda_helpers_on_the_include_path.h>
#include "cuda_utils_not_in_this_tree.h"
// Toolkit headers, quoted or not, when no file of the tree has that name.
#include "cuda_fp16.h"
#include <mma.h>
#include <curand_philox4x32_x.h>
#include <cuda/std/atomic>
