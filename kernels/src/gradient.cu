// GradientPlan: one fused launch per call. Each block runs the three tile passes of
// gradient_device.cuh on its 64x64 tile of one slice and stores gx, gy (and magnitude, angle) once.
#include "cuimg/kernels/gradient.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "common/kernel_attributes.h"
#include "gradient_device.cuh"

namespace cuimg {

struct GradientPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  GradientSpec spec;
  GradientTaps taps;  // float64
  std::vector<float> smoothing;
  std::vector<float> derivative;
  gradient::Taps device_taps{};
  dim3 grid;
};

namespace {

using gradient::kThreads;
using gradient::kTileH;
using gradient::kTileW;

constexpr int kMaxGridZ = 65535;

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
      float* at = out + first + static_cast<std::size_t>(m) * p.width;
      if (p.vector_out) {  // cols == 4: width and x are multiples of 4
        *reinterpret_cast<float4*>(at) = v;
        return;
      }
      at[0] = v.x;
      if (cols > 1) at[1] = v.y;
      if (cols > 2) at[2] = v.z;
      if (cols > 3) at[3] = v.w;
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
absl::Status LaunchRadius(const GradientParams<T>& p, dim3 grid, cudaStream_t stream) {
  constexpr std::size_t kSmem = gradient::TileGeometry<R>::kSmemBytes;
  // All of the SM's unified L1/shared memory as shared memory: four 55 KiB blocks per SM at
  // radius <= 3 (the default carveout may leave room for fewer).
  CUIMG_RETURN_IF_ERROR(EnsureKernelSharedMemory(reinterpret_cast<const void*>(
                                                     &GradientKernel<T, R>),
                                                 kSmem, "GradientKernel", true));
  GradientKernel<T, R><<<grid, kThreads, kSmem, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "GradientKernel");
  return absl::OkStatus();
}

// The radius is a template parameter (taps unrolled into the constant bank): one instantiation
// per radius 1..15, chosen here.
template <typename T, int R = 1>
absl::Status LaunchForRadius(int radius, const GradientParams<T>& p, dim3 grid,
                             cudaStream_t stream) {
  if constexpr (R > gradient::kMaxRadius) {
    return absl::InternalError("gradient radius out of range");
  } else {
    if (radius == R) return LaunchRadius<T, R>(p, grid, stream);
    return LaunchForRadius<T, R + 1>(radius, p, grid, stream);
  }
}

bool Aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

absl::StatusOr<GradientPlan> GradientPlan::Create(PixelType type, const Extent& extent,
                                                  const GradientSpec& spec) {
  CUIMG_ASSIGN_OR_RETURN(GradientTaps taps, ComputeGradientTaps(spec));
  if (extent.width < 1 || extent.height < 1 || extent.depth < 1) {
    return absl::InvalidArgumentError("extent: every dimension must be >= 1");
  }
  const std::int64_t tiles_x = (extent.width + kTileW - 1) / kTileW;
  const std::int64_t tiles_y = (extent.height + kTileH - 1) / kTileH;
  if (tiles_x > 0x7fffffff || tiles_y > 65535 || extent.SlicePixels() > 0x7fffffff ||
      extent.depth > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("extent: ", extent.width, "x", extent.height, "x", extent.depth,
                     " exceeds the gradient's limits (slices below 2^31 pixels, height below ",
                     65535 * kTileH, ")"));
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
  impl->grid = dim3(static_cast<unsigned>(tiles_x), static_cast<unsigned>(tiles_y),
                    static_cast<unsigned>(std::min<std::int64_t>(extent.depth, kMaxGridZ)));
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
  return absl::StrCat("fused(tile ", kTileW, "x", kTileH, ", radius ", plan.taps.radius, ", ",
                      plan.grid.x * plan.grid.y * plan.grid.z, " blocks)");
}

absl::Status GradientPlan::Run(const void* in, float* gx, float* gy, float* magnitude,
                               float* angle, cudaStream_t stream) const {
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
    return LaunchForRadius<T>(plan.taps.radius, p, plan.grid, stream);
  });
}

}  // namespace cuimg
