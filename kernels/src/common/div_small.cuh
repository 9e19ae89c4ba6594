// DivSmall: integer division by a small runtime divisor without the ~20-instruction integer
// division, for block and row indices in the kernels' hot paths.
#ifndef CUIMG_KERNELS_SRC_DIV_SMALL_CUH_
#define CUIMG_KERNELS_SRC_DIV_SMALL_CUH_

namespace cuimg {

// floor(a / b) for 0 <= a < 2^21 given inv_b = 1.0f / b. Exact: (a + 0.5) / b is at least
// 0.5 / b away from an integer, far more than the float error for a < 2^21.
__device__ __forceinline__ int DivSmall(int a, float inv_b) {
  return static_cast<int>((static_cast<float>(a) + 0.5f) * inv_b);
}

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_DIV_SMALL_CUH_
