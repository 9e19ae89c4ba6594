// MorphologyPlan: chains, iterations and compound operations over the primitive passes
// (morphology_box.cu, morphology_chords.cu).
#include "cuimg/kernels/morphology.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cuimg/common/cuda_status.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/mask_steps.h"
#include "device_ops.cuh"
#include "element_plan.h"
#include "morphology_kernels.h"
#include "segmentation/segmentation_steps.h"

namespace cuimg {

struct MorphologyPlan::Impl {
  PixelType type = PixelType::kU8;
  Extent extent;
  std::vector<MorphologyStep> steps;
  std::vector<internal::ElementPlan> elements;  // one per step
  // One per step: the reconstruction of a global step, empty for the others.
  std::vector<std::optional<ReconstructionPlan>> reconstructions;
  std::size_t reconstruction_offset = 0;  // in the workspace, after the images
  std::vector<int> chord_table;           // int2 entries, all steps and bands
  std::size_t table_bytes = 0;
  std::size_t image_bytes = 0;
  int scratch_images = 0;
  std::size_t workspace_bytes = 0;
};

namespace {

constexpr std::size_t kAlign = 256;
std::size_t AlignUp(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

template <typename T>
__global__ void DifferenceKernel(const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = SaturatingSub(a[i], b[i]);
  }
}

int PassLaunches(const internal::ElementPlan& e) {
  if (e.separable) return std::max<int>(1, static_cast<int>(e.box.size()));
  if (!e.nested.empty()) return static_cast<int>(e.nested.size());
  return static_cast<int>(e.bands.size());
}

// Runs the passes of one plan on one stream.
template <typename T>
class Executor {
 public:
  Executor(const MorphologyPlan::Impl& plan, const int* d_chords, T* box_scratch,
           cudaStream_t stream)
      : plan_(plan), d_chords_(d_chords), box_scratch_(box_scratch), stream_(stream) {}

  // `iterations` passes from src to dst, ping-ponging through scratch so the last lands in dst.
  absl::Status Iterate(const T* src, T* dst, T* scratch, std::size_t step_index, bool dilate) {
    const MorphologyStep& step = plan_.steps[step_index];
    const T* cur = src;
    for (int i = 0; i < step.iterations; ++i) {
      T* target = ((step.iterations - 1 - i) % 2 == 0) ? dst : scratch;
      CUIMG_RETURN_IF_ERROR(Pass(cur, target, step_index, dilate));
      cur = target;
    }
    return absl::OkStatus();
  }

  absl::Status Difference(const T* a, const T* b, T* out) {
    const std::int64_t n = plan_.extent.Pixels();
    const int threads = 256;
    const int blocks = static_cast<int>(std::min<std::int64_t>((n + threads - 1) / threads, 65535));
    DifferenceKernel<T><<<blocks, threads, 0, stream_>>>(a, b, out, n);
    CUIMG_CUDA_CHECK_LAUNCH(stream_, "DifferenceKernel");
    return absl::OkStatus();
  }

 private:
  // One erosion or dilation of src into dst (dst must not be src).
  absl::Status Pass(const T* src, T* dst, std::size_t step_index, bool dilate) {
    const internal::ElementPlan& e = plan_.elements[step_index];
    const T border = MorphologyOutsideValue<T>(plan_.steps[step_index], dilate);
    if (e.separable) {
      if (e.box.empty()) {  // the 1x1 element
        CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, plan_.extent.Pixels() * sizeof(T),
                                                   cudaMemcpyDeviceToDevice, stream_),
                                   "identity copy");
        return absl::OkStatus();
      }
      const T* cur = src;
      const int n = static_cast<int>(e.box.size());
      for (int i = 0; i < n; ++i) {
        T* target = ((n - 1 - i) % 2 == 0) ? dst : box_scratch_;
        CUIMG_RETURN_IF_ERROR(
            internal::LaunchBoxPass(cur, target, plan_.extent, e.box[i], dilate, border, stream_));
        cur = target;
      }
      return absl::OkStatus();
    }
    for (const internal::NestedPass& n : e.nested) {
      CUIMG_RETURN_IF_ERROR(
          internal::LaunchNestedPass(src, dst, plan_.extent, n, dilate, border, stream_));
    }
    for (std::size_t b = 0; b < e.bands.size(); ++b) {
      CUIMG_RETURN_IF_ERROR(internal::LaunchChordBand(src, dst, plan_.extent, e.bands[b], d_chords_,
                                                      dilate, border, b > 0, stream_));
    }
    return absl::OkStatus();
  }

  const MorphologyPlan::Impl& plan_;
  const int* d_chords_;
  T* box_scratch_;
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
  auto impl = std::make_shared<Impl>();
  impl->type = type;
  impl->extent = extent;
  bool needs_box_scratch = false;
  std::size_t reconstruction_bytes = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].iterations < 1) {
      return absl::InvalidArgumentError(absl::StrCat("steps[", i, "].iterations: must be >= 1"));
    }
    const MorphologyStep& step = steps[i];
    CUIMG_RETURN_IF_ERROR(CheckStepPixelType(step, type, i));
    CUIMG_RETURN_IF_ERROR(ValidateMorphologyStep(step, extent, absl::StrCat("steps[", i, "]")));
    impl->reconstructions.emplace_back();
    if (step.op == MorphOp::kRemoveSmall || step.op == MorphOp::kKeepLargest) {
      reconstruction_bytes = std::max(reconstruction_bytes, MaskStepWorkspaceBytes(extent));
    }
    if (internal::Reconstructs(step.op)) {
      absl::StatusOr<ReconstructionPlan> r =
          ReconstructionPlan::Create(type, extent, internal::MethodOf(step.op), step.connectivity);
      if (!r.ok()) return WithFieldPrefix(r.status(), absl::StrCat("steps[", i, "]."));
      reconstruction_bytes = std::max(reconstruction_bytes, r->WorkspaceBytes());
      impl->reconstructions.back() = *std::move(r);
    }
    if (PrimitivePassCount(step) == 0) {
      internal::ElementPlan none;  // no element pass: the identity, never run
      none.separable = true;
      impl->elements.push_back(std::move(none));
      continue;
    }
    absl::StatusOr<internal::ElementPlan> element =
        internal::PlanElement(step.element, type, extent, &impl->chord_table);
    if (!element.ok()) {
      return absl::Status(element.status().code(),
                          absl::StrCat("steps[", i, "].", element.status().message()));
    }
    impl->elements.push_back(*std::move(element));
    needs_box_scratch |= impl->elements.back().box.size() > 1;
  }
  impl->steps = std::move(steps);
  impl->table_bytes = AlignUp(std::max<std::size_t>(impl->chord_table.size(), 1) * sizeof(int));
  impl->image_bytes = AlignUp(static_cast<std::size_t>(extent.Pixels()) * PixelSize(type));
  // An intermediate and a ping-pong image per step, two to chain steps, one for box passes.
  impl->scratch_images = 2 + (impl->steps.size() > 1 ? 2 : 0) + (needs_box_scratch ? 1 : 0);
  impl->reconstruction_offset = impl->table_bytes + impl->scratch_images * impl->image_bytes;
  impl->workspace_bytes = impl->reconstruction_offset + AlignUp(reconstruction_bytes);
  MorphologyPlan plan;
  plan.impl_ = std::move(impl);
  return plan;
}

std::size_t MorphologyPlan::WorkspaceBytes() const { return impl_->workspace_bytes; }
PixelType MorphologyPlan::type() const { return impl_->type; }
const Extent& MorphologyPlan::extent() const { return impl_->extent; }

int MorphologyPlan::LaunchCount() const {
  int launches = 0;
  for (std::size_t i = 0; i < impl_->steps.size(); ++i) {
    const MorphologyStep& step = impl_->steps[i];
    launches += PrimitivePassCount(step) * PassLaunches(impl_->elements[i]);
    if (step.op == MorphOp::kGradient || step.op == MorphOp::kTopHat ||
        step.op == MorphOp::kBlackHat || step.op == MorphOp::kThreshold) {
      ++launches;
    }
    // A reconstruction's marker (open_rec's is its element passes), clamp and the two passes
    // that choose its route; what follows (rounds, or the union-find) depends on the image. The
    // labelling's mask steps take up to five.
    if (internal::Reconstructs(step.op)) {
      launches += 3 + (step.op == MorphOp::kOpenRec || step.op == MorphOp::kCloseRec ? 0 : 1);
    } else if (IsGlobalStep(step)) {
      launches += 5;
    }
  }
  return launches;
}

bool MorphologyPlan::WritesOutputOnce() const {
  const Impl& plan = *impl_;
  if (plan.steps.size() != 1) return false;
  const MorphologyStep& step = plan.steps.front();
  const internal::ElementPlan& e = plan.elements.front();
  return (step.op == MorphOp::kErode || step.op == MorphOp::kDilate) &&
         PrimitivePassCount(step) == 1 && e.separable && e.box.size() == 1;
}

std::string MorphologyPlan::Describe() const {
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < impl_->steps.size(); ++i) {
    const internal::ElementPlan& e = impl_->elements[i];
    const MorphologyStep& step = impl_->steps[i];
    if (internal::IsSegmentationOp(step.op)) {
      const std::optional<ReconstructionPlan>& r = impl_->reconstructions[i];
      std::string what(MorphOpName(step.op));
      if (r) {
        absl::StrAppend(
            &what, "(reconstruction by ",
            internal::MethodOf(step.op) == ReconstructionMethod::kDilation ? "dilation" : "erosion",
            ", connectivity ",
            static_cast<int>(ResolveConnectivity(step.connectivity, impl_->extent)), ", ",
            r->Bricks(), " bricks)");
      }
      parts.push_back(std::move(what));
      if (PrimitivePassCount(step) == 0) continue;  // else its element passes follow
    }
    if (e.separable) {
      std::vector<std::string> passes;
      for (const internal::BoxPass& b : e.box) {
        passes.push_back(
            b.xy ? absl::StrCat("xy ", b.length, "x", b.length_y, " tile ", b.tile_w, "x", b.tile_h)
                 : absl::StrCat("vhgw axis ", b.axis, " length ", b.length));
      }
      parts.push_back(absl::StrCat("box(", absl::StrJoin(passes, ", "), ")"));
    } else if (!e.nested.empty()) {
      const internal::NestedPass& n = e.nested.front();
      parts.push_back(absl::StrCat(
          "nested(radius ", n.radius, ", half-widths ",
          absl::StrJoin(n.half_width, n.half_width + n.radius + 1, " "), ", ", e.nested.size(),
          e.nested.size() == 1 ? " pass" : " passes",
          n.point_dz > 0 ? absl::StrCat(", points +-", n.point_dz) : "",
          std::all_of(e.nested.begin(), e.nested.end(),
                      [](const internal::NestedPass& pass) { return pass.compiled >= 0; })
              ? ", compiled steps"
              : "",
          ")"));
    } else {
      const internal::ChordBand& b = e.bands.front();
      parts.push_back(absl::StrCat(
          "chords(", e.bands.size(), " bands, tile ", b.tile_w, "x", b.tile_h, "x", b.tile_d,
          b.mode == internal::PackMode::kStackedZ ? " stacked-z" : " sliding-y", ", ", b.levels,
          " levels, ", b.smem_bytes / 1024, " KiB)"));
    }
  }
  return absl::StrJoin(parts, " + ");
}

absl::Status MorphologyPlan::Run(const void* in, void* out, void* workspace, cudaStream_t stream,
                                 const CancelToken& cancel, const void* d_marker) const {
  const Impl& plan = *impl_;
  if (d_marker == nullptr && AnyStepUsesMarker(plan.steps)) {
    return InvalidFieldError(ErrorReason::kFieldRequired, "marker",
                             "a reconstruct step needs the marker image");
  }
  const bool sync_between_steps = &cancel != &NeverCancelled() && plan.steps.size() > 1 &&
                                  plan.extent.Pixels() >= kCancelSyncPixels;
  auto* base = static_cast<std::uint8_t*>(workspace);
  auto* d_chords = reinterpret_cast<int*>(base);
  if (!plan.chord_table.empty()) {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_chords, plan.chord_table.data(), plan.chord_table.size() * sizeof(int),
                        cudaMemcpyHostToDevice, stream),
        "copy chord table");
  }
  std::uint8_t* images = base + plan.table_bytes;
  void* reconstruction_workspace = base + plan.reconstruction_offset;
  // U32 reaches only the segmentation steps (Create: CheckStepPixelType); the element passes are
  // compiled for the filter types alone.
  return VisitAnyPixelType(plan.type, [&](auto tag) -> absl::Status {
    using T = decltype(tag);
    constexpr bool kFilter = !std::is_same_v<T, std::uint32_t>;
    auto scratch = [&](int i) { return reinterpret_cast<T*>(images + i * plan.image_bytes); };
    T* x_buf = scratch(0);
    T* s_buf = scratch(1);
    T* box_buf = scratch(plan.scratch_images - 1);
    const T* cur = static_cast<const T*>(in);
    for (std::size_t i = 0; i < plan.steps.size(); ++i) {
      if (sync_between_steps && i > 0) {
        CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "morphology step");
        CUIMG_RETURN_IF_ERROR(cancel.Check());
      }
      const MorphologyStep& step = plan.steps[i];
      T* dst = (i + 1 == plan.steps.size()) ? static_cast<T*>(out) : scratch(2 + i % 2);
      if (internal::IsSegmentationOp(step.op)) {
        if constexpr (kFilter) {
          if (step.op == MorphOp::kOpenRec || step.op == MorphOp::kCloseRec) {
            // The marker: the element's erosions (dilations) of the current image.
            CUIMG_RETURN_IF_ERROR(Executor<T>(plan, d_chords, box_buf, stream)
                                      .Iterate(cur, dst, s_buf, i, step.op == MorphOp::kCloseRec));
          }
        }
        const std::optional<ReconstructionPlan>& r = plan.reconstructions[i];
        CUIMG_RETURN_IF_ERROR(internal::RunSegmentationStep<T>(
            step, plan.extent, cur, dst, static_cast<const T*>(d_marker), r ? &*r : nullptr,
            reconstruction_workspace, stream, cancel));
      } else if constexpr (kFilter) {
        Executor<T> ex(plan, d_chords, box_buf, stream);
        switch (step.op) {
          case MorphOp::kErode:
          case MorphOp::kDilate:
            CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, dst, s_buf, i, step.op == MorphOp::kDilate));
            break;
          case MorphOp::kOpen:
          case MorphOp::kClose:
          case MorphOp::kTopHat:
          case MorphOp::kBlackHat: {
            // Open-like steps erode first; close-like steps dilate first.
            const bool dilate_first = step.op == MorphOp::kClose || step.op == MorphOp::kBlackHat;
            CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, x_buf, s_buf, i, dilate_first));
            CUIMG_RETURN_IF_ERROR(ex.Iterate(x_buf, dst, s_buf, i, !dilate_first));
            if (step.op == MorphOp::kTopHat) CUIMG_RETURN_IF_ERROR(ex.Difference(cur, dst, dst));
            if (step.op == MorphOp::kBlackHat) {
              CUIMG_RETURN_IF_ERROR(ex.Difference(dst, cur, dst));
            }
            break;
          }
          case MorphOp::kGradient:
            CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, x_buf, s_buf, i, true));
            CUIMG_RETURN_IF_ERROR(ex.Iterate(cur, dst, s_buf, i, false));
            CUIMG_RETURN_IF_ERROR(ex.Difference(x_buf, dst, dst));
            break;
          default:  // the segmentation steps, above
            break;
        }
      }
      cur = dst;
    }
    return absl::OkStatus();
  });
}

}  // namespace cuimg
