// GradientPlan: one fused launch per call. Radius <= 4 (the default length 7 among them) on slices
// taller than the radius: one warp per 120x5 strip of one slice, everything in registers
// (gradient_strip.cuh). Otherwise each block runs the three tile passes of gradient_device.cuh on
// its 64x64 tile. Either kernel stores gx, gy (and magnitude, angle) once.
#include "cuimg/kernels/gradient.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "gradient_device.cuh"
#include "gradient_strip.cuh"

namespace cuimg {

struct GradientPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  GradientSpec spec;
  GradientTaps taps;  // float64
  std::vector<float> smoothing;
  std::vector<float> derivative;
  gradient::Taps device_taps{};
  bool strip = false;  // the strip kernel (radius <= 4), else the tile kernel
  dim3 grid;
};

namespace {

using gradient::kThreads;
using gradient::kTileH;
using gradient::kTileW;

template <typename T>
struct GradientParams {
  const T* in;
  float* gx;
  float* gy;
  float* magnitude;  // null when not wanted
  float* angle;      // null when not wanted
  int width;
  int height;
  int depth;
  bool vector_in;   // width % 4 == 0 and `in` aligned to 4 elements
  bool vector_out;  // width % 4 == 0 and every output 16-byte aligned
  gradient::Taps taps;
};

// Stores the first `cols` (1..4) of v at `at`: one 16-byte store when `vector` (cols is 4 there).
__device__ __forceinline__ void StoreQuad(float* at, float4 v, int cols, bool vector) {
  if (vector) {
    *reinterpret_cast<float4*>(at) = v;
    return;
  }
  at[0] = v.x;
  if (cols > 1) at[1] = v.y;
  if (cols > 2) at[2] = v.z;
  if (cols > 3) at[3] = v.w;
}

// One warp per strip (gradient_strip.cuh): block (x, y) covers output columns 120 x .. 120 x + 119
// and rows 5 y .. 5 y + 4 of slices z, z + gridDim.z, ...; lanes 1..30 store.
// kDerived: magnitude or angle wanted (a separate instantiation keeps their checks out of the
// plain kernel's row loop). The plain kernel is held to 64 registers, 32 warps per SM: the strips
// are short serial chains and latency-bound, so more of them in flight is what pays (run 24,
// 1080p: 8-row strips at 104 registers 11.5-12.7 us; at 64 registers 3 to 8 rows 10.5-11.1 us,
// 5 rows the best: 3456 warps, inside one wave of 4224).
template <typename T, int R, bool kDerived>
__global__ void __launch_bounds__(32, kDerived ? 16 : 32)
    GradientStripKernel(const __grid_constant__ GradientParams<T> p) {
  const int lane = static_cast<int>(threadIdx.x);
  const int x = static_cast<int>(blockIdx.x) * gradient::kStripCols - 4 + 4 * lane;
  const int y0 = static_cast<int>(blockIdx.y) * gradient::kStripRows;
  const bool owner = lane >= 1 && lane <= 30 && x < p.width;
  const int cols = min(4, p.width - x);
  const std::size_t slice_pixels = static_cast<std::size_t>(p.width) * p.height;
  const bool clamped = gradient::StripLoadsClamped(p.vector_in, p.width);  // the same for all warps
  const auto run = [&](int z) {
    const std::size_t slice = static_cast<std::size_t>(z) * slice_pixels;
    const auto emit = [&](int m, float4 gx, float4 gy) {
      if (!owner) return;
      const std::size_t at = slice + static_cast<std::size_t>(y0 + m) * p.width + x;
      StoreQuad(p.gx + at, gx, cols, p.vector_out);
      StoreQuad(p.gy + at, gy, cols, p.vector_out);
      if (!kDerived) return;
      // f(gx, gy) per lane of the quad.
      auto each = [&](auto f) {
        return make_float4(f(gx.x, gy.x), f(gx.y, gy.y), f(gx.z, gy.z), f(gx.w, gy.w));
      };
      if (p.magnitude != nullptr) {
        StoreQuad(p.magnitude + at, each([](float a, float b) { return sqrtf(a * a + b * b); }),
                  cols, p.vector_out);
      }
      if (p.angle != nullptr) {
        StoreQuad(p.angle + at, each([](float a, float b) { return atan2f(b, a); }), cols,
                  p.vector_out);
      }
    };
    if (clamped) {
      gradient::StripGradient<T, R, true>(p.in + slice, p.width, p.height, x, y0, p.vector_in,
                                          p.taps, emit);
    } else {
      gradient::StripGradient<T, R, false>(p.in + slice, p.width, p.height, x, y0, p.vector_in,
                                           p.taps, emit);
    }
  };
  // gridDim.z <= depth, so every block has slice blockIdx.z and only volumes deeper than the grid
  // loop: the first slice outside the loop compiles as straight-line code (1080p 8.26 -> 8.03 us
  // in the same runs, run 150).
  run(static_cast<int>(blockIdx.z));
  for (int z = static_cast<int>(blockIdx.z + gridDim.z); z < p.depth; z += gridDim.z) run(z);
}

// Two blocks of 256 threads per SM at least; four (64 registers each) while the tile's shared
// memory allows it (radius <= 4: <= 57 KiB per block).
template <int R>
constexpr int MinBlocks() {
  return gradient::TileGeometry<R>::kSmemBytes <= 56 * 1024 ? 4 : 2;
}

template <typename T, int R>
__global__ void __launch_bounds__(kThreads, MinBlocks<R>())
    GradientKernel(const __grid_constant__ GradientParams<T> p) {
  using G = gradient::TileGeometry<R>;
  extern __shared__ __align__(16) float smem[];
  float* region = smem;
  float* smooth = smem + G::kRegionFloats;
  float* deriv = smooth + G::kPlaneFloats;
  const int x0 = blockIdx.x * kTileW;
  const int y0 = blockIdx.y * kTileH;
  const std::size_t slice_pixels = static_cast<std::size_t>(p.width) * p.height;
  for (int z = blockIdx.z; z < p.depth; z += gridDim.z) {
    const std::size_t slice = static_cast<std::size_t>(z) * slice_pixels;
    gradient::LoadRegion<T, R>(p.in + slice, p.width, p.height, x0, y0, p.vector_in, region);
    __syncthreads();
    gradient::RowPass<R>(region, p.taps, smooth, deriv);
    __syncthreads();
    // This thread's outputs: 4 columns from x, rows y .. y + kRowsPerThread - 1.
    const int2 owned = gradient::OwnedQuad(0);
    const int x = x0 + owned.x;
    const int y = y0 + owned.y;
    const std::size_t first = slice + static_cast<std::size_t>(y) * p.width + x;
    const int rows = min(gradient::kRowsPerThread, p.height - y);
    const int cols = min(4, p.width - x);
    auto store = [&](float* out, int m, float4 v) {
      if (m >= rows || cols <= 0) return;
      // cols == 4 when vector_out: width and x are multiples of 4.
      StoreQuad(out + first + static_cast<std::size_t>(m) * p.width, v, cols, p.vector_out);
    };
    gradient::ColumnPass<R>(
        smooth, deriv, p.taps, [&](int m, float4 v) { store(p.gx, m, v); },
        [&](int m, float4 v) { store(p.gy, m, v); });
    if (p.magnitude != nullptr || p.angle != nullptr) {
      // Each thread re-reads the gx, gy it has just stored (its own writes: no barrier needed;
      // the .cg loads are opaque to the compiler, which would otherwise keep every value live
      // through the column pass, where atan2f's temporaries make it spill).
      for (int m = 0; m < rows; ++m) {
        for (int c = 0; c < cols; ++c) {
          const std::size_t i = first + static_cast<std::size_t>(m) * p.width + c;
          const float vx = __ldcg(p.gx + i);
          const float vy = __ldcg(p.gy + i);
          if (p.magnitude != nullptr) p.magnitude[i] = sqrtf(vx * vx + vy * vy);
          if (p.angle != nullptr) p.angle[i] = atan2f(vy, vx);
        }
      }
    }
    if (z + static_cast<int>(gridDim.z) < p.depth) __syncthreads();  // the next slice reuses smem
  }
}

template <typename T, int R>
absl::Status LaunchRadius(const GradientParams<T>& p, bool strip, dim3 grid, cudaStream_t stream) {
  if constexpr (R <= gradient::kStripMaxRadius) {
    if (strip) {
      if (p.magnitude != nullptr || p.angle != nullptr) {
        GradientStripKernel<T, R, true><<<grid, 32, 0, stream>>>(p);
      } else {
        GradientStripKernel<T, R, false><<<grid, 32, 0, stream>>>(p);
      }
      CUIMG_CUDA_CHECK_LAUNCH(stream, "GradientStripKernel");
      return absl::OkStatus();
    }
  }
  constexpr std::size_t kSmem = gradient::TileGeometry<R>::kSmemBytes;
  // All of the SM's unified L1/shared memory as shared memory: four 55 KiB blocks per SM at
  // radius <= 3 (the default carveout may leave room for fewer).
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(
      reinterpret_cast<const void*>(&GradientKernel<T, R>), kSmem, "GradientKernel", true));
  GradientKernel<T, R><<<grid, kThreads, kSmem, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "GradientKernel");
  return absl::OkStatus();
}

// The radius is a template parameter (taps unrolled into the constant bank): one instantiation
// per radius 1..15, chosen here.
template <typename T, int R = 1>
absl::Status LaunchForRadius(int radius, const GradientParams<T>& p, bool strip, dim3 grid,
                             cudaStream_t stream) {
  if constexpr (R > gradient::kMaxRadius) {
    return absl::InternalError("gradient radius out of range");
  } else {
    if (radius == R) return LaunchRadius<T, R>(p, strip, grid, stream);
    return LaunchForRadius<T, R + 1>(radius, p, strip, grid, stream);
  }
}

bool Aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

absl::StatusOr<GradientPlan> GradientPlan::Create(PixelType type, const Extent& extent,
                                                  const GradientSpec& spec) {
  CUIMG_RETURN_IF_ERROR(CheckFilterPixelType(type, "type", "the gradient"));
  CUIMG_ASSIGN_OR_RETURN(GradientTaps taps, ComputeGradientTaps(spec));
  if (extent.width < 1 || extent.height < 1 || extent.depth < 1) {
    return absl::InvalidArgumentError("extent: every dimension must be >= 1");
  }
  // Strips for small radii unless the slices are no taller than the radius (StripRow reflects
  // once) or their grid would be too tall; then the 64-row tiles.
  const bool strip =
      taps.radius <= gradient::kStripMaxRadius && extent.height > taps.radius &&
      (extent.height + gradient::kStripRows - 1) / gradient::kStripRows <= kMaxGridYZ;
  const int block_w = strip ? gradient::kStripCols : kTileW;
  const int block_h = strip ? gradient::kStripRows : kTileH;
  const std::int64_t tiles_x = (extent.width + block_w - 1) / block_w;
  const std::int64_t tiles_y = (extent.height + block_h - 1) / block_h;
  // Slices beyond the grid's z run in a loop over z (GradientKernel).
  if (!FitsGrid(tiles_x, tiles_y, 1) || extent.SlicePixels() > 0x7fffffff ||
      extent.depth > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("extent: ", extent.width, "x", extent.height, "x", extent.depth,
                     " exceeds the gradient's limits (slices below 2^31 pixels, height below ",
                     kMaxGridYZ * block_h, ")"));
  }
  auto impl = std::make_shared<Impl>();
  impl->type = type;
  impl->extent = extent;
  impl->spec = spec;
  for (int j = 0; j <= taps.radius; ++j) {
    impl->device_taps.smooth[j] = static_cast<float>(taps.smoothing[taps.radius + j]);
    impl->device_taps.deriv[j] = static_cast<float>(taps.derivative[taps.radius + j]);
  }
  impl->smoothing.reserve(taps.smoothing.size());
  impl->derivative.reserve(taps.derivative.size());
  for (double t : taps.smoothing) impl->smoothing.push_back(static_cast<float>(t));
  for (double t : taps.derivative) impl->derivative.push_back(static_cast<float>(t));
  impl->taps = std::move(taps);
  impl->strip = strip;
  impl->grid = dim3(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                    static_cast<unsigned>(std::min<std::int64_t>(extent.depth, kMaxGridYZ)));
  GradientPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

const std::vector<float>& GradientPlan::SmoothingTaps() const { return impl_->smoothing; }
const std::vector<float>& GradientPlan::DerivativeTaps() const { return impl_->derivative; }
double GradientPlan::sigma() const { return impl_->taps.sigma; }
PixelType GradientPlan::type() const { return impl_->type; }
const Extent& GradientPlan::extent() const { return impl_->extent; }
const GradientSpec& GradientPlan::spec() const { return impl_->spec; }

std::string GradientPlan::Describe() const {
  const Impl& plan = *impl_;
  const unsigned blocks = plan.grid.x * plan.grid.y * plan.grid.z;
  if (plan.strip) {
    return absl::StrCat("fused(strips ", gradient::kStripCols, "x", gradient::kStripRows,
                        " per warp, radius ", plan.taps.radius, ", ", blocks, " warps)");
  }
  return absl::StrCat("fused(tile ", kTileW, "x", kTileH, ", radius ", plan.taps.radius, ", ",
                      blocks, " blocks)");
}

absl::Status GradientPlan::Run(const void* in, float* gx, float* gy, float* magnitude, float* angle,
                               cudaStream_t stream) const {
  const Impl& plan = *impl_;
  if ((magnitude != nullptr) != plan.spec.magnitude || (angle != nullptr) != plan.spec.angle) {
    return absl::InvalidArgumentError(
        "magnitude/angle: an output pointer must be given exactly when the spec asks for it");
  }
  if (gx == nullptr || gy == nullptr || in == nullptr) {
    return absl::InvalidArgumentError("in, gx, gy: must not be null");
  }
  return VisitPixelType(plan.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    GradientParams<T> p{};
    p.in = static_cast<const T*>(in);
    p.gx = gx;
    p.gy = gy;
    p.magnitude = magnitude;
    p.angle = angle;
    p.width = static_cast<int>(plan.extent.width);
    p.height = static_cast<int>(plan.extent.height);
    p.depth = static_cast<int>(plan.extent.depth);
    const bool width4 = plan.extent.width % 4 == 0;
    p.vector_in = width4 && Aligned(in, 4 * sizeof(T));
    p.vector_out = width4 && Aligned(gx, 16) && Aligned(gy, 16) &&
                   (magnitude == nullptr || Aligned(magnitude, 16)) &&
                   (angle == nullptr || Aligned(angle, 16));
    p.taps = plan.device_taps;
    return LaunchForRadius<T>(plan.taps.radius, p, plan.strip, plan.grid, stream);
  });
}

}  // namespace cuimg
