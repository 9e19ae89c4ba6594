// ForEachCell: a block visits every cell of a rows x width grid with `kBatch` cells per thread in
// flight: all loads of a batch are issued before any store, so global-memory latency overlaps
// instead of serializing (one outstanding byte load per thread starves the memory system).
#ifndef CUIMG_KERNELS_SRC_CELL_LOOP_CUH_
#define CUIMG_KERNELS_SRC_CELL_LOOP_CUH_

namespace cuimg {

// floor(a / b) for 0 <= a < 2^21 given inv_b = 1.0f / b (see ForEachCell for why it is exact).
__device__ __forceinline__ int DivSmall(int a, float inv_b) {
  return static_cast<int>((static_cast<float>(a) + 0.5f) * inv_b);
}

// load(row, x) -> V and store(row, x, V) are called for every cell; cells are spread over the
// block's threads, consecutive threads taking consecutive x (coalesced). rows * width < 2^21.
template <int kBatch, typename Load, typename Store>
__device__ __forceinline__ void ForEachCell(int rows, int width, const Load& load,
                                            const Store& store) {
  const int total = rows * width;
  // row = floor(i / width) through a float reciprocal: (i + 0.5) / width is at least 0.5 / width
  // from an integer, far more than the float error for i < 2^21.
  const float inv_width = 1.0f / static_cast<float>(width);
  using V = decltype(load(0, 0));
  for (int first = threadIdx.x; first < total; first += blockDim.x * kBatch) {
    V v[kBatch];
    int row[kBatch];
    int x[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int i = first + b * blockDim.x;
      row[b] = DivSmall(i, inv_width);
      x[b] = i - row[b] * width;
      if (i < total) v[b] = load(row[b], x[b]);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (first + b * static_cast<int>(blockDim.x) < total) store(row[b], x[b], v[b]);
    }
  }
}

}  // namespace cuimg

#endif  // CUIMG_KERNELS_SRC_CELL_LOOP_CUH_
