// Morphology plan and kernels. This first version is the direct chord loop: one thread per output
// pixel, O(|SE|) per pixel. Fast paths come with the full-strength morphology work.
#include "cuimg/kernels/morphology.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/status_macros.h"
#include "device_ops.cuh"

namespace cuimg {
namespace {

constexpr std::size_t kAlign = 256;
std::size_t AlignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct Dims {
  int width;
  int height;
  int depth;
};

template <typename T, bool kDilate>
__global__ void ChordPassKernel(const T* __restrict__ in, T* __restrict__ out, Dims d,
                                const int4* __restrict__ chords, int chord_count, T outside) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= d.width || y >= d.height) return;
  for (int z = blockIdx.z; z < d.depth; z += gridDim.z) {
    T acc = CombineIdentity<T, kDilate>();
    for (int c = 0; c < chord_count; ++c) {
      const int4 ch = chords[c];
      const int yy = y + ch.y;
      const int zz = z + ch.z;
      if (yy < 0 || yy >= d.height || zz < 0 || zz >= d.depth) {
        acc = Combine<T, kDilate>(acc, outside);
        continue;
      }
      const T* row = in + (static_cast<std::int64_t>(zz) * d.height + yy) * d.width;
      const int x0 = x + ch.x;
      const int x1 = x0 + ch.w;
      if (x0 < 0 || x1 > d.width) acc = Combine<T, kDilate>(acc, outside);
      for (int xx = max(x0, 0); xx < min(x1, d.width); ++xx) {
        acc = Combine<T, kDilate>(acc, row[xx]);
      }
    }
    out[(static_cast<std::int64_t>(z) * d.height + y) * d.width + x] = acc;
  }
}

template <typename T>
__global__ void DifferenceKernel(const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = SaturatingSub(a[i], b[i]);
  }
}

template <typename T>
T OutsideValue(const MorphologyStep& step, bool dilate) {
  if (step.border == BorderMode::kConstant) return SaturateCast<T>(step.border_value);
  return dilate ? PixelLowest<T>() : PixelMax<T>();
}

// Executes one plan on one stream; holds the buffer routing of compound steps.
template <typename T>
class Executor {
 public:
  Executor(const Extent& e, const int4* d_chords, cudaStream_t stream)
      : dims_{static_cast<int>(e.width), static_cast<int>(e.height), static_cast<int>(e.depth)},
        n_(e.Pixels()),
        d_chords_(d_chords),
        stream_(stream) {}

  // `iterations` passes from src to dst, ping-ponging through scratch so the last lands in dst.
  absl::Status Iterate(const T* src, T* dst, T* scratch, const MorphologyStep& step, bool dilate,
                       std::size_t chord_offset, int chord_count) {
    const T* cur = src;
    for (int i = 0; i < step.iterations; ++i) {
      T* target = ((step.iterations - 1 - i) % 2 == 0) ? dst : scratch;
      CUIMG_RETURN_IF_ERROR(Pass(cur, target, step, dilate, chord_offset, chord_count));
      cur = target;
    }
    return absl::OkStatus();
  }

  absl::Status Difference(const T* a, const T* b, T* out) {
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<std::int64_t>((n_ + threads - 1) / threads, 65535));
    DifferenceKernel<T><<<blocks, threads, 0, stream_>>>(a, b, out, n_);
    CUIMG_CUDA_CHECK_LAUNCH(stream_, "DifferenceKernel");
    return absl::OkStatus();
  }

 private:
  absl::Status Pass(const T* src, T* dst, const MorphologyStep& step, bool dilate,
                    std::size_t chord_offset, int chord_count) {
    const dim3 block(32, 8);
    const dim3 grid((dims_.width + block.x - 1) / block.x, (dims_.height + block.y - 1) / block.y,
                    std::min(dims_.depth, 65535));
    const int4* chords = d_chords_ + chord_offset;
    const T outside = OutsideValue<T>(step, dilate);
    if (dilate) {
      ChordPassKernel<T, true><<<grid, block, 0, stream_>>>(src, dst, dims_, chords, chord_count,
                                                            outside);
    } else {
      ChordPassKernel<T, false><<<grid, block, 0, stream_>>>(src, dst, dims_, chords, chord_count,
                                                             outside);
    }
    CUIMG_CUDA_CHECK_LAUNCH(stream_, "ChordPassKernel");
    return absl::OkStatus();
  }

  Dims dims_;
  std::int64_t n_;
  const int4* d_chords_;
  cudaStream_t stream_;
};

}  // namespace

absl::StatusOr<MorphologyPlan> MorphologyPlan::Create(PixelType type, const Extent& extent,
                                                      std::vector<MorphologyStep> steps) {
  if (steps.empty()) return absl::InvalidArgumentError("steps: at least one step is required");
  if (extent.width < 1 || extent.height < 1 || extent.depth < 1) {
    return absl::InvalidArgumentError("extent: every dimension must be >= 1");
  }
  if (extent.width > (1 << 30) || extent.height > (1 << 30) || extent.depth > (1 << 30)) {
    return absl::InvalidArgumentError("extent: a dimension exceeds 2^30");
  }
  MorphologyPlan plan;
  plan.type_ = type;
  plan.extent_ = extent;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].iterations < 1) {
      return absl::InvalidArgumentError(absl::StrCat("steps[", i, "].iterations: must be >= 1"));
    }
    const std::vector<Chord> chords = steps[i].element.Chords();
    plan.chord_offset_.push_back(plan.chord_table_.size() / 4);
    plan.chord_count_.push_back(static_cast<int>(chords.size()));
    for (const Chord& c : chords) {
      plan.chord_table_.insert(plan.chord_table_.end(), {c.dx, c.dy, c.dz, c.length});
    }
  }
  plan.steps_ = std::move(steps);
  plan.table_bytes_ = AlignUp(plan.chord_table_.size() * sizeof(int));
  plan.image_bytes_ = AlignUp(static_cast<std::size_t>(extent.Pixels()) * PixelSize(type));
  // Two step-internal images (an intermediate and a ping-pong scratch), and two more to chain steps.
  plan.scratch_images_ = 2 + (plan.steps_.size() > 1 ? 2 : 0);
  plan.workspace_bytes_ = plan.table_bytes_ + plan.scratch_images_ * plan.image_bytes_;
  return plan;
}

int MorphologyPlan::LaunchCount() const {
  int launches = 0;
  for (const MorphologyStep& step : steps_) {
    launches += PrimitivePassCount(step);
    if (step.op == MorphOp::kGradient || step.op == MorphOp::kTopHat ||
        step.op == MorphOp::kBlackHat) {
      ++launches;
    }
  }
  return launches;
}

absl::Status MorphologyPlan::Run(const void* in, void* out, void* workspace,
                                 cudaStream_t stream) const {
  auto* base = static_cast<std::uint8_t*>(workspace);
  auto* d_chords = reinterpret_cast<int4*>(base);
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(d_chords, chord_table_.data(), chord_table_.size() * sizeof(int),
                      cudaMemcpyHostToDevice, stream),
      "copy chord table");
  std::uint8_t* images = base + table_bytes_;
  return VisitPixelType(type_, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    auto scratch = [&](int i) { return reinterpret_cast<T*>(images + i * image_bytes_); };
    T* x_buf = scratch(0);
    T* s_buf = scratch(1);
    Executor<T> ex(extent_, d_chords, stream);
    const T* cur = static_cast<const T*>(in);
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      const MorphologyStep& step = steps_[i];
      T* dst = (i + 1 == steps_.size()) ? static_cast<T*>(out) : scratch(2 + i % 2);
      const std::size_t off = chord_offset_[i];
      const int count = chord_count_[i];
      switch (step.op) {
        case MorphOp::kErode:
        case MorphOp::kDilate:
          CUIMG_RETURN_IF_ERROR(
              ex.Iterate(cur, dst, s_buf, step, step.op == MorphOp::kDilate, off, count));
          break;
        case MorphOp::kOpen:
        case MorphOp::kClose:
        case MorphOp::kTopHat:
        case MorphOp::kBlackHat: {
          // Open-like steps erode first; close-like steps dilate first.
          const bool dilate_first = step.op == MorphOp::kClose || step.op == MorphOp::kBlackHat;
          CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, x_buf, s_buf, step, dilate_first, off, count));
          CUIMG_RETURN_IF_ERROR(ex.Iterate(x_buf, dst, s_buf, step, !dilate_first, off, count));
          if (step.op == MorphOp::kTopHat) CUIMG_RETURN_IF_ERROR(ex.Difference(cur, dst, dst));
          if (step.op == MorphOp::kBlackHat) CUIMG_RETURN_IF_ERROR(ex.Difference(dst, cur, dst));
          break;
        }
        case MorphOp::kGradient:
          CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, x_buf, s_buf, step, true, off, count));
          CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, dst, s_buf, step, false, off, count));
          CUIMG_RETURN_IF_ERROR(ex.Difference(x_buf, dst, dst));
          break;
      }
      cur = dst;
    }
    return absl::OkStatus();
  });
}

}  // namespace cuimg
