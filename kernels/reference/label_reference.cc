#include "cuimg/reference/label_reference.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "segmentation/region_stats.h"
#include "segmentation/segmentation_math.h"

namespace cuimg {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
// Pixels between looks at the cancel token.
constexpr std::int64_t kCancelStride = std::int64_t{1} << 16;

absl::Status CheckView(const ImageView& view, const Extent& extent, const char* field) {
  if (view.channels != 1 || view.extent != extent) {
    return InvalidFieldError(
        ErrorReason::kShapeMismatch, field,
        absl::StrCat("is ", view.extent.width, "x", view.extent.height, "x", view.extent.depth,
                     " with ", view.channels, " channels; expected one channel of ", extent.width,
                     "x", extent.height, "x", extent.depth));
  }
  return absl::OkStatus();
}

absl::Status CheckOutput(const ImageView& input, const ImageView& output) {
  CUIMG_RETURN_IF_ERROR(CheckView(output, input.extent, "output"));
  if (output.type != input.type) {
    return InvalidFieldError(
        ErrorReason::kShapeMismatch, "output",
        absl::StrCat("is ", PixelTypeName(output.type), "; expected ", PixelTypeName(input.type)));
  }
  return absl::OkStatus();
}

// 1 where the pixel is in the set: in [lo, hi] compared as doubles when `range` is set, else
// non-zero and not NaN.
absl::StatusOr<std::vector<std::uint8_t>> SetMask(const ImageView& image,
                                                  const std::optional<std::array<double, 2>>& range,
                                                  const CancelToken& cancel) {
  const std::int64_t n = image.extent.Pixels();
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n));
  VisitAnyPixelType(image.type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = image.As<T>();
    for (std::int64_t p = 0; p < n; ++p) {
      const double v = static_cast<double>(in[p]);
      mask[p] =
          range.has_value() ? (v >= (*range)[0] && v <= (*range)[1]) : (v != 0.0 && !std::isnan(v));
    }
    return 0;
  });
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  return mask;
}

// The components of the pixels where `mask` is 1: root[p] is the smallest raster index of p's
// component, kNone outside the set. A raster union-find: each pixel joins its neighbours before
// it (BackwardOffset); a union links the larger root under the smaller, so every root is the
// smallest index of its tree.
absl::StatusOr<std::vector<std::uint32_t>> ComponentRoots(const std::vector<std::uint8_t>& mask,
                                                          const Extent& e, Connectivity c,
                                                          const CancelToken& cancel) {
  const Connectivity conn = ResolveConnectivity(c, e);
  const int count = seg::BackwardCount(conn);
  std::vector<std::uint32_t> parent(mask.size());
  auto find = [&](std::uint32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];  // path halving keeps parent[x] <= x
      x = parent[x];
    }
    return x;
  };
  std::int64_t p = 0;
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      for (std::int64_t x = 0; x < e.width; ++x, ++p) {
        if ((p & (kCancelStride - 1)) == 0) CUIMG_RETURN_IF_ERROR(cancel.Check());
        if (!mask[p]) {
          parent[p] = kNone;
          continue;
        }
        parent[p] = static_cast<std::uint32_t>(p);
        for (int i = 0; i < count; ++i) {
          const seg::Offset o = seg::BackwardOffset(conn, i);
          const std::int64_t qx = x + o.dx, qy = y + o.dy, qz = z + o.dz;
          if (qx < 0 || qx >= e.width || qy < 0 || qy >= e.height || qz < 0) continue;
          const std::int64_t q = (qz * e.height + qy) * e.width + qx;
          if (!mask[q] || parent[q] == parent[p]) continue;  // the same parent: already joined
          const std::uint32_t a = find(static_cast<std::uint32_t>(p));
          const std::uint32_t b = find(static_cast<std::uint32_t>(q));
          if (a < b) parent[b] = a;
          if (b < a) parent[a] = b;
        }
      }
    }
  }
  for (std::size_t i = 0; i < parent.size(); ++i) {
    if ((i & (kCancelStride - 1)) == 0) CUIMG_RETURN_IF_ERROR(cancel.Check());
    if (parent[i] != kNone) parent[i] = find(static_cast<std::uint32_t>(i));
  }
  return parent;
}

// Voxels per component, at each root's index (0 elsewhere).
std::vector<std::uint32_t> RootCounts(const std::vector<std::uint32_t>& roots) {
  std::vector<std::uint32_t> counts(roots.size(), 0);
  for (std::uint32_t r : roots) {
    if (r != kNone) ++counts[r];
  }
  return counts;
}

// Writes `input` to `output` with the pixels of the components where keep(root) is false set
// to 0.
template <typename Keep>
void WriteKept(const ImageView& input, const ImageView& output,
               const std::vector<std::uint32_t>& roots, const Keep& keep) {
  VisitAnyPixelType(input.type, [&](auto tag) {
    using T = decltype(tag);
    const T* in = input.As<T>();
    T* out = output.As<T>();
    for (std::size_t p = 0; p < roots.size(); ++p) {
      out[p] = (roots[p] != kNone && !keep(roots[p])) ? T{0} : in[p];
    }
    return 0;
  });
}

template <typename T>
void AccumulateIntensity(const ImageView& intensity, const std::uint32_t* labels,
                         std::vector<seg::RegionAccumulator>& acc,
                         std::vector<seg::SumLimbs>& limbs) {
  const T* v = intensity.As<T>();
  const std::int64_t n = intensity.extent.Pixels();
  for (std::int64_t p = 0; p < n; ++p) {
    if (labels[p] == 0) continue;
    const std::size_t k = labels[p] - 1;
    acc[k].AddIntensity(v[p], limbs.empty() ? nullptr : &limbs[k]);
  }
}

}  // namespace

absl::StatusOr<std::vector<RegionStats>> LabelReferenceInto(const ImageView& input,
                                                            const LabelSpec& spec,
                                                            const ImageView& labels,
                                                            const ImageView* intensity,
                                                            const CancelToken& cancel) {
  const Extent& e = input.extent;
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, e, ""));
  CUIMG_RETURN_IF_ERROR(CheckView(input, e, "input"));
  CUIMG_RETURN_IF_ERROR(CheckView(labels, e, "labels"));
  if (labels.type != PixelType::kU32) {
    return InvalidFieldError(ErrorReason::kUnsupportedPixelType, "labels",
                             absl::StrCat("is ", PixelTypeName(labels.type), "; labels are u32"));
  }
  if (intensity != nullptr) CUIMG_RETURN_IF_ERROR(CheckView(*intensity, e, "intensity"));

  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> mask, SetMask(input, spec.threshold, cancel));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint32_t> roots,
                         ComponentRoots(mask, e, spec.connectivity, cancel));
  mask = {};
  // Number the kept roots in raster order; a root comes before the rest of its component.
  std::vector<std::uint32_t> number = RootCounts(roots);
  std::uint32_t regions = 0;
  std::uint32_t* out = labels.As<std::uint32_t>();
  for (std::size_t p = 0; p < roots.size(); ++p) {
    if (roots[p] == kNone) {
      out[p] = 0;
    } else if (roots[p] == p) {
      number[p] = number[p] >= static_cast<std::uint64_t>(spec.min_voxels) ? ++regions : 0;
      out[p] = number[p];
    } else {
      out[p] = number[roots[p]];
    }
  }
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  roots = {};
  number = {};

  std::vector<seg::RegionAccumulator> acc(regions);
  std::int64_t p = 0;
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      for (std::int64_t x = 0; x < e.width; ++x, ++p) {
        if (out[p] != 0) acc[out[p] - 1].AddVoxel(x, y, z);
      }
    }
  }
  std::optional<PixelType> intensity_type;
  std::vector<seg::SumLimbs> limbs;
  if (intensity != nullptr) {
    intensity_type = intensity->type;
    if (intensity->type == PixelType::kF32) limbs.assign(regions, seg::SumLimbs{});
    VisitAnyPixelType(intensity->type, [&](auto tag) {
      AccumulateIntensity<decltype(tag)>(*intensity, out, acc, limbs);
      return 0;
    });
  }
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  std::vector<RegionStats> stats;
  stats.reserve(regions);
  for (std::uint32_t k = 0; k < regions; ++k) {
    stats.push_back(seg::FinishRegion(acc[k], intensity_type, limbs.empty() ? nullptr : &limbs[k]));
  }
  return stats;
}

absl::StatusOr<LabelResult> LabelReference(const ImageView& input, const LabelSpec& spec,
                                           const ImageView* intensity, const CancelToken& cancel) {
  LabelResult result;
  CUIMG_RETURN_IF_ERROR(ValidateLabelExtent(input.extent, "input"));
  result.labels = Image(PixelType::kU32, input.extent, 1, Image::kUninitialized);
  CUIMG_ASSIGN_OR_RETURN(result.regions,
                         LabelReferenceInto(input, spec, result.labels.view(), intensity, cancel));
  return result;
}

absl::Status RemoveSmallReference(const ImageView& input, const ImageView& output,
                                  Connectivity connectivity, std::int64_t min_voxels,
                                  const CancelToken& cancel) {
  LabelSpec spec;
  spec.connectivity = connectivity;
  spec.min_voxels = min_voxels;
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, input.extent, ""));
  CUIMG_RETURN_IF_ERROR(CheckView(input, input.extent, "input"));
  CUIMG_RETURN_IF_ERROR(CheckOutput(input, output));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> mask, SetMask(input, std::nullopt, cancel));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint32_t> roots,
                         ComponentRoots(mask, input.extent, connectivity, cancel));
  const std::vector<std::uint32_t> counts = RootCounts(roots);
  WriteKept(input, output, roots,
            [&](std::uint32_t r) { return static_cast<std::int64_t>(counts[r]) >= min_voxels; });
  return cancel.Check();
}

absl::Status KeepLargestReference(const ImageView& input, const ImageView& output,
                                  Connectivity connectivity, const CancelToken& cancel) {
  LabelSpec spec;
  spec.connectivity = connectivity;
  CUIMG_RETURN_IF_ERROR(ValidateLabelSpec(spec, input.extent, ""));
  CUIMG_RETURN_IF_ERROR(CheckView(input, input.extent, "input"));
  CUIMG_RETURN_IF_ERROR(CheckOutput(input, output));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> mask, SetMask(input, std::nullopt, cancel));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint32_t> roots,
                         ComponentRoots(mask, input.extent, connectivity, cancel));
  const std::vector<std::uint32_t> counts = RootCounts(roots);
  std::uint32_t largest = kNone;
  for (std::size_t r = 0; r < counts.size(); ++r) {  // raster order: the first of a tie wins
    if (counts[r] > 0 && (largest == kNone || counts[r] > counts[largest])) {
      largest = static_cast<std::uint32_t>(r);
    }
  }
  WriteKept(input, output, roots, [&](std::uint32_t r) { return r == largest; });
  return cancel.Check();
}

absl::Status FillUnseededComponentsReference(const ImageView& input, const ImageView* marker,
                                             const ImageView& output, const SeededFillSpec& spec,
                                             const CancelToken& cancel) {
  const Extent& e = input.extent;
  CUIMG_RETURN_IF_ERROR(ValidateSeededFillSpec(spec, e, ""));
  CUIMG_RETURN_IF_ERROR(CheckView(input, e, "input"));
  CUIMG_RETURN_IF_ERROR(CheckOutput(input, output));
  if (spec.seed_marker) {
    if (marker == nullptr) {
      return InvalidFieldError(ErrorReason::kFieldRequired, "marker",
                               "is required to seed components by a marker");
    }
    CUIMG_RETURN_IF_ERROR(CheckView(*marker, e, "marker"));
  }
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> mask, SetMask(input, spec.range, cancel));
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint32_t> roots,
                         ComponentRoots(mask, e, spec.connectivity, cancel));
  // seeded[r]: a seed reached the component of root r.
  std::vector<std::uint8_t> seeded(roots.size(), 0);
  if (spec.seed_marker) {
    CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> marked,
                           SetMask(*marker, std::nullopt, cancel));
    for (std::size_t p = 0; p < roots.size(); ++p) {
      if (roots[p] != kNone && marked[p]) seeded[roots[p]] = 1;
    }
  }
  if (spec.seed_border) {
    std::int64_t p = 0;
    for (std::int64_t z = 0; z < e.depth; ++z) {
      for (std::int64_t y = 0; y < e.height; ++y) {
        for (std::int64_t x = 0; x < e.width; ++x, ++p) {
          const bool border = x == 0 || x == e.width - 1 || y == 0 || y == e.height - 1 ||
                              (e.depth > 1 && (z == 0 || z == e.depth - 1));
          if (border && roots[p] != kNone) seeded[roots[p]] = 1;
        }
      }
    }
  }
  CUIMG_RETURN_IF_ERROR(cancel.Check());
  VisitAnyPixelType(input.type, [&](auto tag) {
    using T = decltype(tag);
    const T fill = SaturateCast<T>(spec.fill);
    const T* in = input.As<T>();
    T* out = output.As<T>();
    for (std::size_t p = 0; p < roots.size(); ++p) {
      out[p] = (roots[p] != kNone && !seeded[roots[p]]) ? fill : in[p];
    }
    return 0;
  });
  return cancel.Check();
}

}  // namespace cuimg
