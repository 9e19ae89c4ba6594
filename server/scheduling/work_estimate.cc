#include "server/scheduling/work_estimate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuimg/common/error.h"
#include "cuimg/kernels/structuring_element.h"

namespace cuimg {
namespace {

// One erosion or dilation by `se`, per pixel.
double PassCostPerPixel(const StructuringElement& se, WorkModel model) {
  if (model == WorkModel::kCpuReference) {
    return static_cast<double>(se.MemberCount());  // the definition: every member is read
  }
  if (se.IsBox()) {
    // A line pass per axis longer than 1: three min/max per pixel whatever the length.
    const int axes = (se.width() > 1) + (se.height() > 1) + (se.depth() > 1);
    return 3.0 * std::max(axes, 1);
  }
  // Chord kernels: up to two lookups per chord, plus the doubling tables along x.
  const double chords = static_cast<double>(se.Chords().size());
  return 2.0 * chords + std::ceil(std::log2(static_cast<double>(se.width()) + 1));
}

bool IsCompound(MorphOp op) { return op <= MorphOp::kBlackHat && op > MorphOp::kDilate; }

// Neighbours of a pixel under `c` on `extent` (kDefault resolved).
double Neighbours(Connectivity c, const Extent& extent) {
  return static_cast<double>(static_cast<int>(ResolveConnectivity(c, extent)));
}

}  // namespace

WorkModel WorkModelOf(absl::string_view backend_name) {
  return backend_name == "cuda" ? WorkModel::kCudaKernels : WorkModel::kCpuReference;
}

double MorphologyWork(const Extent& extent, const std::vector<MorphologyStep>& steps,
                      WorkModel model) {
  const double pixels = static_cast<double>(extent.Pixels());
  double per_pixel = 0;
  double global = 0;
  for (const MorphologyStep& step : steps) {
    per_pixel += PrimitivePassCount(step) * PassCostPerPixel(step.element, model);
    if (IsCompound(step.op)) per_pixel += 1;
    if (step.op > MorphOp::kBlackHat) global += SegmentationStepWork(extent, step);
  }
  return pixels * per_pixel + global;
}

double SegmentationStepWork(const Extent& extent, const MorphologyStep& step) {
  const double pixels = static_cast<double>(extent.Pixels());
  const double k = Neighbours(step.connectivity, extent);
  switch (step.op) {
    case MorphOp::kThreshold:
      return pixels;
    case MorphOp::kRemoveSmall:
    case MorphOp::kKeepLargest: {
      LabelSpec spec;
      spec.connectivity = step.connectivity;
      return LabelWork(extent, spec, false) + pixels;  // and the pass that clears the rest
    }
    default:
      break;
  }
  // Reconstruction; h-extrema add the shifted marker, open_rec/close_rec the copy of their input.
  const double sweeps = 2 * (k / 2 + 1);
  const double queue = 2 * (std::log2(std::max(pixels, 2.0)) + k);
  return pixels * (sweeps + queue + 1);
}

double LabelWork(const Extent& extent, const LabelSpec& spec, bool intensity) {
  const double k = Neighbours(spec.connectivity, extent);
  // Union-find over the earlier neighbours, root compression, numbering, the label pass, stats.
  const double per_pixel = k / 2 + 4 + (intensity ? 4 : 2);
  return static_cast<double>(extent.Pixels()) * per_pixel;
}

double GradientWork(const Extent& extent, const GradientSpec& spec) {
  return static_cast<double>(extent.Pixels()) * 4.0 * spec.kernel_length;
}

double PyramidWork(const std::vector<PyramidLevel>& levels) {
  double pixels = 0;
  for (const PyramidLevel& level : levels) {
    pixels += static_cast<double>(level.width) * static_cast<double>(level.height);
  }
  return 4.0 * pixels;
}

double DetectWork(const DetectGeometry& geometry, int descriptor_size) {
  double level_pixels = 0;
  for (const DetectLevel& level : geometry.levels) {
    level_pixels += static_cast<double>(level.width) * static_cast<double>(level.height);
  }
  return static_cast<double>(geometry.windows) * descriptor_size + 64.0 * level_pixels;
}

double DeformWork(std::uint64_t vertices, std::uint64_t triangles, std::size_t control_points) {
  return static_cast<double>(vertices) * 3.0 * static_cast<double>(control_points) +
         8.0 * static_cast<double>(triangles);
}

absl::Status CheckRequestWork(double work, double max_work) {
  if (max_work <= 0 || work <= max_work) return absl::OkStatus();
  return MakeError(
      absl::StatusCode::kResourceExhausted, ErrorReason::kWorkTooLarge, "",
      absl::StrFormat(
          "the request's estimated work is %.3g units, over the per-request cap of %.3g "
          "(--max_request_work; a unit is one operation per pixel, 1 to 4 ns on a CPU core): split "
          "it into smaller requests",
          work, max_work));
}

absl::Status CheckGroupedHits(std::size_t hits, const DetectSpec& spec, std::size_t max_hits) {
  if (max_hits == 0 || hits <= max_hits || spec.grouping != DetectGrouping::kGroupRectangles ||
      spec.group_threshold <= 0) {
    return absl::OkStatus();
  }
  return InvalidFieldError(
      ErrorReason::kLimitExceeded, "hit_threshold",
      absl::StrCat(hits, " windows scored at or above ", spec.hit_threshold,
                   "; grouping compares every pair of hits and takes at most ", max_hits,
                   " (--max_grouped_hits): raise hit_threshold or turn grouping off"));
}

}  // namespace cuimg
