// PyramidPlan. FROM_BASE: every level in one launch of the source-rectangle kernel
// (pyramid_rects.cuh). CASCADED: the output-tile kernel below, whose grid is flattened over the
// 64x64 output tiles of the launch's levels; each block finds its level with a warp ballot over
// the per-level first-block table in the kernel parameters, each warp resolves the source rows of
// its 16 output rows once (shared memory), each thread its source column once, and then every
// output is 4 read-only loads and one coalesced store.
#include "cuimg/kernels/pyramid.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/div_small.cuh"
#include "common/kernel_attributes.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "pyramid_device.cuh"
#include "pyramid_rects.cuh"

namespace cuimg {
namespace {

constexpr int kMaxJobs = 64;  // levels per launch (kernel parameters stay below 4 KiB)
constexpr int kTileW = 64;
constexpr int kRowsPerThread = 16;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTileH = kWarps / (kTileW / 32) * kRowsPerThread;  // 64
constexpr std::size_t kAlign = 256;

std::size_t AlignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// One level written by a launch.
struct LevelJob {
  void* out;       // the level's first element in the packed output
  float* f32_out;  // CASCADED with an integer output: the level's f32 values too, or null
  double scale_x;  // ResizeScale(source width, level width)
  double scale_y;
  int width;
  int height;
  int tiles_x;
  float inv_tiles_x;  // for the division of the block's tile index
  int copy;           // the level has the source's size: a (converting) copy
};

template <typename S>
struct PyramidParams {
  const S* src;
  int src_w;
  int src_h;
  int num_jobs;
  int first_block[kMaxJobs + 1];  // first_block[num_jobs] = the grid size
  LevelJob jobs[kMaxJobs];
};

template <typename S, typename O>
__global__ void __launch_bounds__(kThreads, 4)
    PyramidKernel(const __grid_constant__ PyramidParams<S> p) {
  __shared__ uint4 row_taps[kWarps][kRowsPerThread];  // (offset0, offset1, wy1, unused) per row
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int block = static_cast<int>(blockIdx.x);
  // The level: how many jobs start at or before this block, minus one.
  const unsigned low =
      __ballot_sync(0xffffffffu, lane < p.num_jobs && p.first_block[lane] <= block);
  const unsigned high =
      __ballot_sync(0xffffffffu, lane + 32 < p.num_jobs && p.first_block[lane + 32] <= block);
  const int level = __popc(low) + __popc(high) - 1;
  const LevelJob& job = p.jobs[level];
  const int tile = block - p.first_block[level];
  const int tile_y = DivSmall(tile, job.inv_tiles_x);  // exact: a level has < 2^21 tiles
  const int tile_x = tile - tile_y * job.tiles_x;
  const int x = tile_x * kTileW + (warp & 1) * 32 + lane;
  const int y0 = tile_y * kTileH + (warp >> 1) * kRowsPerThread;
  if (y0 >= job.height) return;  // the warp's rows are all below the level (warp-uniform)
  const int rows = min(kRowsPerThread, job.height - y0);
  const bool store = x < job.width;
  // 32-bit element indices: a level has < 2^31 pixels.
  const unsigned width = static_cast<unsigned>(job.width);
  const unsigned first = static_cast<unsigned>(y0) * width + static_cast<unsigned>(x);
  float v[kRowsPerThread];

  if (job.copy) {
    if (!store) return;
      // Same width as the source.
#pragma unroll
    for (int r = 0; r < kRowsPerThread; ++r) {
      v[r] = pyramid::LoadSample(p.src + (first + static_cast<unsigned>(min(r, rows - 1)) * width));
    }
  } else {
    if (lane < kRowsPerThread) {
      const pyramid::AxisTap t =
          pyramid::ResolveAxis(min(y0 + lane, job.height - 1), job.scale_y, p.src_h);
      // Unsigned offsets: added to a 64-bit pointer without a sign extension.
      row_taps[warp][lane] =
          make_uint4(static_cast<unsigned>(t.i0 * p.src_w),
                     static_cast<unsigned>((t.i0 + t.step) * p.src_w), __float_as_uint(t.w1), 0);
    }
    __syncwarp();
    // Columns past the level's width sample its last column (valid loads, no stores).
    const pyramid::AxisTap tx = pyramid::ResolveAxis(min(x, job.width - 1), job.scale_x, p.src_w);
    const S* column = p.src + tx.i0;
    auto sample_rows = [&](auto dx) {
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) {
        const uint4 e = row_taps[warp][r];
        v[r] = pyramid::BilinearSample(column + e.x, column + e.y, decltype(dx)::value, tx.w1,
                                       __uint_as_float(e.z));
      }
    };
    if (p.src_w >= 2) {
      sample_rows(std::integral_constant<int, 1>{});
    } else {
      sample_rows(std::integral_constant<int, 0>{});
    }
  }
  if (!store) return;
  auto store_rows = [&](auto* to, auto convert) {
    if (rows == kRowsPerThread) {
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) to[first + r * width] = convert(v[r]);
    } else {
#pragma unroll
      for (int r = 0; r < kRowsPerThread; ++r) {
        if (r < rows) to[first + r * width] = convert(v[r]);
      }
    }
  };
  store_rows(static_cast<O*>(job.out), [](float f) { return pyramid::FromFloat<O>(f); });
  if (job.f32_out != nullptr) store_rows(job.f32_out, [](float f) { return f; });
}

}  // namespace

namespace internal {

// One kernel launch: the levels it writes and where it reads.
struct PyramidLaunch {
  int source = -1;  // -1: the input; else the level whose f32 values are read
  struct Job {
    int level = 0;
    // CASCADED (output-tile kernel) only:
    int side = -1;  // workspace ping-pong buffer for the level's f32 values, or -1
    int tiles_x = 0;
    int blocks = 0;  // output tiles of the level
  };
  std::vector<Job> jobs;
  std::int64_t blocks = 0;  // CASCADED; FROM_BASE grids are sized per device in Run()
};

}  // namespace internal

using internal::PyramidLaunch;

struct PyramidPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  PyramidSpec spec;
  std::vector<PyramidLevel> levels;
  std::vector<PyramidLaunch> launches;
  std::size_t output_bytes = 0;
  std::size_t side_bytes = 0;  // one ping-pong buffer (CASCADED, integer output)
  std::size_t workspace_bytes = 0;
};

namespace {

// Where launch `launch` reads and writes, as kernel parameters.
template <typename S, typename O>
absl::Status Launch(const PyramidPlan::Impl& plan, const PyramidLaunch& launch, const S* src,
                    std::int64_t src_w, std::int64_t src_h, O* out, std::uint8_t* workspace,
                    cudaStream_t stream) {
  PyramidParams<S> p{};
  p.src = src;
  p.src_w = static_cast<int>(src_w);
  p.src_h = static_cast<int>(src_h);
  p.num_jobs = static_cast<int>(launch.jobs.size());
  int first = 0;
  for (std::size_t j = 0; j < launch.jobs.size(); ++j) {
    const PyramidLaunch::Job& job = launch.jobs[j];
    const PyramidLevel& level = plan.levels[job.level];
    LevelJob& k = p.jobs[j];
    k.out = reinterpret_cast<std::uint8_t*>(out) + level.offset_bytes;
    k.f32_out =
        job.side < 0 ? nullptr : reinterpret_cast<float*>(workspace + job.side * plan.side_bytes);
    k.scale_x = ResizeScale(src_w, level.width);
    k.scale_y = ResizeScale(src_h, level.height);
    k.width = static_cast<int>(level.width);
    k.height = static_cast<int>(level.height);
    k.tiles_x = job.tiles_x;
    k.inv_tiles_x = 1.0f / static_cast<float>(job.tiles_x);
    k.copy = level.width == src_w && level.height == src_h;
    p.first_block[j] = first;
    first += job.blocks;
  }
  p.first_block[launch.jobs.size()] = first;
  PyramidKernel<S, O><<<static_cast<unsigned>(launch.blocks), kThreads, 0, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "PyramidKernel");
  return absl::OkStatus();
}

// Rows per FROM_BASE rectangle of `extent` on the current device (pyramid_rect_rows.h).
int CurrentRectRows(const Extent& extent) {
  return pyramid::RectRows(extent.width, extent.height, CurrentDeviceLimits().multiprocessors);
}

// FROM_BASE: the launch's levels from the input, one block per source rectangle.
template <typename S, typename O>
absl::Status LaunchRects(const PyramidPlan::Impl& plan, const PyramidLaunch& launch, int rect_h,
                         const S* src, O* out, cudaStream_t stream) {
  pyramid::RectParams<S> p{};
  p.src = src;
  p.src_w = static_cast<int>(plan.extent.width);
  p.src_h = static_cast<int>(plan.extent.height);
  p.rects_x = static_cast<int>(pyramid::RectsX(plan.extent.width));
  p.rect_h = rect_h;
  p.num_levels = static_cast<int>(launch.jobs.size());
  for (std::size_t j = 0; j < launch.jobs.size(); ++j) {
    const PyramidLevel& level = plan.levels[launch.jobs[j].level];
    pyramid::RectLevel& k = p.levels[j];
    k.out = reinterpret_cast<std::uint8_t*>(out) + level.offset_bytes;
    k.scale_x = ResizeScale(plan.extent.width, level.width);
    k.scale_y = ResizeScale(plan.extent.height, level.height);
    k.width = static_cast<int>(level.width);
    k.height = static_cast<int>(level.height);
    k.copy = level.width == plan.extent.width && level.height == plan.extent.height;
  }
  const auto blocks = pyramid::RectBlocks(plan.extent.width, plan.extent.height, rect_h);
  pyramid::PyramidRectKernel<S, O>
      <<<static_cast<unsigned>(blocks), pyramid::kRectThreads, 0, stream>>>(p);
  CUIMG_CUDA_CHECK_LAUNCH(stream, "PyramidRectKernel");
  return absl::OkStatus();
}

template <typename T, typename O>
absl::Status RunLaunches(const PyramidPlan::Impl& plan, const T* in, O* out,
                         std::uint8_t* workspace, cudaStream_t stream) {
  int rect_h = 0;
  if (plan.spec.mode == PyramidMode::kFromBase) {
    rect_h = CurrentRectRows(plan.extent);
  }
  for (const PyramidLaunch& launch : plan.launches) {
    if (plan.spec.mode == PyramidMode::kFromBase) {
      CUIMG_RETURN_IF_ERROR((LaunchRects<T, O>(plan, launch, rect_h, in, out, stream)));
      continue;
    }
    if (launch.source < 0) {
      CUIMG_RETURN_IF_ERROR((Launch<T, O>(plan, launch, in, plan.extent.width, plan.extent.height,
                                          out, workspace, stream)));
      continue;
    }
    // CASCADED: the previous level's f32 values, in the output or in the workspace.
    const PyramidLevel& source = plan.levels[launch.source];
    const float* src =
        std::is_same_v<O, float>
            ? reinterpret_cast<const float*>(reinterpret_cast<const std::uint8_t*>(out) +
                                             source.offset_bytes)
            : reinterpret_cast<const float*>(workspace + (launch.source % 2) * plan.side_bytes);
    CUIMG_RETURN_IF_ERROR(
        (Launch<float, O>(plan, launch, src, source.width, source.height, out, workspace, stream)));
  }
  return absl::OkStatus();
}

PyramidLaunch::Job MakeJob(const PyramidLevel& level, int side) {
  PyramidLaunch::Job job;
  job.level = level.index;
  job.side = side;
  job.tiles_x = static_cast<int>((level.width + kTileW - 1) / kTileW);
  job.blocks = job.tiles_x * static_cast<int>((level.height + kTileH - 1) / kTileH);
  return job;
}

}  // namespace

absl::StatusOr<PyramidPlan> PyramidPlan::Create(PixelType type, const Extent& extent,
                                                const PyramidSpec& spec) {
  CUIMG_ASSIGN_OR_RETURN(std::vector<PyramidLevel> levels, PlanPyramidLevels(type, extent, spec));
  if (extent.Pixels() > 0x7fffffff) {
    return absl::InvalidArgumentError(
        absl::StrCat("extent: ", extent.width, "x", extent.height, " has 2^31 pixels or more"));
  }
  auto impl = std::make_shared<Impl>();
  impl->type = type;
  impl->extent = extent;
  impl->spec = spec;
  impl->levels = std::move(levels);
  impl->output_bytes = PyramidOutputBytes(impl->levels);
  const int n = static_cast<int>(impl->levels.size());
  if (spec.mode == PyramidMode::kFromBase) {
    for (int begin = 0; begin < n; begin += pyramid::kRectLevels) {
      PyramidLaunch launch;
      for (int i = begin; i < std::min(n, begin + pyramid::kRectLevels); ++i) {
        launch.jobs.emplace_back().level = i;
      }
      // Run() sizes the grid per device: at most one block per source pixel, below 2^31.
      impl->launches.push_back(std::move(launch));
    }
  } else {
    // Levels 0 and 1 both read the input; level i >= 2 reads level i-1's f32 values: from the
    // output when it is f32, else from workspace buffer (i-1) % 2, written by level i-1.
    const bool side = spec.output_type != PixelType::kF32 && n >= 3;
    auto side_of = [&](int i) { return side && i >= 1 && i <= n - 2 ? i % 2 : -1; };
    PyramidLaunch first;
    first.jobs.push_back(MakeJob(impl->levels[0], -1));
    if (n >= 2) first.jobs.push_back(MakeJob(impl->levels[1], side_of(1)));
    impl->launches.push_back(std::move(first));
    for (int i = 2; i < n; ++i) {
      PyramidLaunch launch;
      launch.source = i - 1;
      launch.jobs.push_back(MakeJob(impl->levels[i], side_of(i)));
      impl->launches.push_back(std::move(launch));
    }
    if (side) {
      impl->side_bytes = AlignUp(
          static_cast<std::size_t>(impl->levels[1].width * impl->levels[1].height) * sizeof(float));
      impl->workspace_bytes = 2 * impl->side_bytes;
    }
  }
  for (PyramidLaunch& launch : impl->launches) {
    for (const PyramidLaunch::Job& job : launch.jobs) launch.blocks += job.blocks;  // CASCADED
    if (launch.blocks > 0x7fffffff) {
      return absl::InvalidArgumentError("extent: too many pyramid tiles for one grid");
    }
  }
  PyramidPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

const std::vector<PyramidLevel>& PyramidPlan::Levels() const { return impl_->levels; }
std::size_t PyramidPlan::OutputBytes() const { return impl_->output_bytes; }
std::size_t PyramidPlan::WorkspaceBytes() const { return impl_->workspace_bytes; }
PixelType PyramidPlan::type() const { return impl_->type; }
const Extent& PyramidPlan::extent() const { return impl_->extent; }
const PyramidSpec& PyramidPlan::spec() const { return impl_->spec; }
int PyramidPlan::LaunchCount() const { return static_cast<int>(impl_->launches.size()); }

std::string PyramidPlan::Describe() const {
  const Impl& plan = *impl_;
  const auto levels_and_launches =
      absl::StrCat(plan.levels.size(), " levels, launches ", plan.launches.size());
  if (plan.spec.mode == PyramidMode::kFromBase) {
    // Rectangles as Run() would size them on the current device (CurrentDeviceLimits).
    const int rows = CurrentRectRows(plan.extent);
    const std::int64_t blocks =
        pyramid::RectBlocks(plan.extent.width, plan.extent.height, rows) * plan.launches.size();
    return absl::StrCat("from_base(", levels_and_launches, ", ", blocks, " blocks of ",
                        pyramid::kRectW, "x", rows, " source pixels)");
  }
  std::int64_t blocks = 0;
  for (const PyramidLaunch& launch : plan.launches) blocks += launch.blocks;
  return absl::StrCat("cascaded(", levels_and_launches, ", ", blocks, " blocks of ", kTileW, "x",
                      kTileH, " output pixels)");
}

absl::Status PyramidPlan::Run(const void* in, void* out, void* workspace,
                              cudaStream_t stream) const {
  const Impl& plan = *impl_;
  if (in == nullptr || out == nullptr || (plan.workspace_bytes > 0 && workspace == nullptr)) {
    return absl::InvalidArgumentError("in, out, workspace: must not be null");
  }
  auto* ws = static_cast<std::uint8_t*>(workspace);
  return VisitPixelType(plan.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(in);
    if (plan.spec.output_type == PixelType::kF32) {
      return RunLaunches<T, float>(plan, src, static_cast<float*>(out), ws, stream);
    }
    return RunLaunches<T, T>(plan, src, static_cast<T*>(out), ws, stream);
  });
}

}  // namespace cuimg
