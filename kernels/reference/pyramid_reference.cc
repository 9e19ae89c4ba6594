#include "cuimg/reference/pyramid_reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuimg/reference/parallel_for.h"

// Built with -ffp-contract=off (kernels/CMakeLists.txt): the float32 differences below must be
// rounded one by one and fused only where std::fma says so, as the CUDA kernels do, for the two
// to agree bit for bit.

namespace cuimg {

LinearTap ResizeLinearTap(std::int64_t d, std::int64_t src, std::int64_t dst) {
  const double scale = ResizeScale(src, dst);
  float f = static_cast<float>((static_cast<double>(d) + 0.5) * scale - 0.5);
  std::int64_t i = static_cast<std::int64_t>(std::floor(f));
  f -= static_cast<float>(i);
  if (i < 0) {
    i = 0;
    f = 0.0f;
  }
  LinearTap tap;
  if (i >= src - 1) {
    // OpenCV's (src - 1, weight 0) as the pair (src - 2, src - 1) with weights (0, 1): the same
    // sample, and the second tap stays one past the first, as the kernels address it.
    tap.i0 = std::max<std::int64_t>(src - 2, 0);
    tap.i1 = src - 1;
    tap.w1 = src >= 2 ? 1.0f : 0.0f;
    return tap;
  }
  tap.i0 = i;
  tap.i1 = i + 1;
  tap.w1 = f;
  return tap;
}

namespace {

// One output row: lerps of the two source rows.
inline __attribute__((always_inline)) void ResizeRow(const float* row0, const float* row1,
                                                     const LinearTap* xs, float wy,
                                                     std::int64_t dst_w, float* out) {
  for (std::int64_t x = 0; x < dst_w; ++x) {
    const LinearTap& tx = xs[x];
    const float top = std::fma(tx.w1, row0[tx.i1] - row0[tx.i0], row0[tx.i0]);
    const float bottom = std::fma(tx.w1, row1[tx.i1] - row1[tx.i0], row1[tx.i0]);
    out[x] = std::fma(wy, bottom - top, top);
  }
}

using RowFunction = void (*)(const float*, const float*, const LinearTap*, float, std::int64_t,
                             float*);

void ResizeRowPortable(const float* row0, const float* row1, const LinearTap* xs, float wy,
                       std::int64_t dst_w, float* out) {
  ResizeRow(row0, row1, xs, wy, dst_w, out);
}

// Where the CPU has FMA, std::fma is one instruction instead of a libm call (six times faster
// here); fma rounds exactly either way, so the results do not depend on the CPU. Chosen at run
// time rather than by ifunc: ifunc resolvers run before ThreadSanitizer's runtime is up.
#if defined(__x86_64__)
__attribute__((target("fma"))) void ResizeRowFma(const float* row0, const float* row1,
                                                 const LinearTap* xs, float wy, std::int64_t dst_w,
                                                 float* out) {
  ResizeRow(row0, row1, xs, wy, dst_w, out);
}
RowFunction FastestRow() {
  return __builtin_cpu_supports("fma") ? ResizeRowFma : ResizeRowPortable;
}
#else
RowFunction FastestRow() { return ResizeRowPortable; }
#endif

}  // namespace

void ResizeLinearF32(const float* src, std::int64_t src_w, std::int64_t src_h, float* dst,
                     std::int64_t dst_w, std::int64_t dst_h, int threads) {
  if (src_w == dst_w && src_h == dst_h) {
    std::copy(src, src + src_w * src_h, dst);
    return;
  }
  std::vector<LinearTap> xs(static_cast<std::size_t>(dst_w));
  for (std::int64_t x = 0; x < dst_w; ++x) xs[x] = ResizeLinearTap(x, src_w, dst_w);
  static const RowFunction row = FastestRow();
  ParallelFor(dst_h, threads, [&](std::int64_t y) {
    const LinearTap ty = ResizeLinearTap(y, src_h, dst_h);
    row(src + ty.i0 * src_w, src + ty.i1 * src_w, xs.data(), ty.w1, dst_w, dst + y * dst_w);
  });
}

absl::StatusOr<std::vector<Image>> PyramidReference(const Image& input, const PyramidSpec& spec,
                                                    int threads, const CancelToken& cancel) {
  if (input.channels() != 1) {
    return absl::InvalidArgumentError("input: the pyramid takes one channel");
  }
  absl::StatusOr<std::vector<PyramidLevel>> levels =
      PlanPyramidLevels(input.type(), input.extent(), spec);
  if (!levels.ok()) return levels.status();
  const Extent& e = input.extent();
  // The input as f32 (exact for every integer type).
  std::vector<float> base(static_cast<std::size_t>(e.Pixels()));
  VisitPixelType(input.type(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = input.As<T>();
    for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(p[i]);
    return 0;
  });
  std::vector<Image> out;
  std::vector<float> previous = base;
  std::int64_t prev_w = e.width;
  std::int64_t prev_h = e.height;
  for (const PyramidLevel& level : *levels) {
    // A level is one linear pass over at most the input's pixels: checking between levels keeps
    // a stopped request's remaining work under one pass.
    if (absl::Status alive = cancel.Check(); !alive.ok()) return alive;
    std::vector<float> plane(static_cast<std::size_t>(level.width * level.height));
    if (spec.mode == PyramidMode::kFromBase) {
      ResizeLinearF32(base.data(), e.width, e.height, plane.data(), level.width, level.height,
                      threads);
    } else {
      ResizeLinearF32(previous.data(), prev_w, prev_h, plane.data(), level.width, level.height,
                      threads);
    }
    Image image(spec.output_type, Extent{level.width, level.height, 1});
    VisitPixelType(spec.output_type, [&](auto tag) {
      using O = decltype(tag);
      O* p = image.As<O>();
      for (std::size_t i = 0; i < plane.size(); ++i) {
        p[i] = SaturateCast<O>(static_cast<double>(plane[i]));
      }
      return 0;
    });
    out.push_back(std::move(image));
    previous = std::move(plane);
    prev_w = level.width;
    prev_h = level.height;
  }
  return out;
}

}  // namespace cuimg
