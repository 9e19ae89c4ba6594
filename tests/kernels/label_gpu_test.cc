// The GPU labelling and mask steps equal their CPU references bit for bit (labels, every region
// statistic, every output pixel), on random, adversarial (spirals, mazes, checkerboards, one
// giant component, all and no foreground, single pixels) and blob masks, sizes from 1x1 to
// 1080p and volumes, each connectivity, each pixel type and intensity type; and they are
// deterministic. Labelled `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/label.h"
#include "cuimg/kernels/mask_steps.h"
#include "cuimg/reference/label_reference.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/segmentation_images.h"

namespace cuimg {
namespace {

constexpr PixelType kTypes[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kU32,
                                PixelType::kF32};

absl::StatusOr<DeviceBuffer> Upload(const Image& image) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(image.size_bytes()));
  if (cudaMemcpy(d.data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice) !=
      cudaSuccess) {
    return absl::InternalError("upload");
  }
  // cudaMemcpy/cudaMemset run on the legacy default stream and may return before they finish;
  // the plans run on non-blocking streams, which do not wait for it: finish them first.
  if (cudaDeviceSynchronize() != cudaSuccess) return absl::InternalError("upload");
  return d;
}

absl::Status Download(const void* device, Image* image) {
  if (cudaMemcpy(image->bytes(), device, image->size_bytes(), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return absl::InternalError("download");
  }
  return absl::OkStatus();
}

// Poisoned so that nothing can rely on zeroed memory.
absl::StatusOr<DeviceBuffer> Poisoned(std::size_t bytes) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(bytes));
  if (cudaMemset(d.data(), 0xAB, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    return absl::InternalError("memset");  // synchronized: see Upload
  }
  return d;
}

absl::StatusOr<LabelResult> LabelOnGpu(const Image& input, const LabelSpec& spec,
                                       const Image* intensity, const LabelPhaseMark& mark = {}) {
  std::optional<PixelType> itype;
  if (intensity != nullptr) itype = intensity->type();
  CUIMG_ASSIGN_OR_RETURN(LabelPlan plan,
                         LabelPlan::Create(input.type(), input.extent(), spec, itype));
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, Upload(input));
  std::optional<DeviceBuffer> d_intensity;
  if (intensity != nullptr) {
    CUIMG_ASSIGN_OR_RETURN(d_intensity, Upload(*intensity));
  }
  LabelResult result;
  result.labels = Image(PixelType::kU32, input.extent());
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_labels, Poisoned(result.labels.size_bytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, Poisoned(plan.WorkspaceBytes()));
  CUIMG_RETURN_IF_ERROR(plan.Run(d_in.data(), d_intensity ? d_intensity->data() : nullptr,
                                 static_cast<std::uint32_t*>(d_labels.data()), ws.data(),
                                 stream.get(), NeverCancelled(), mark));
  CUIMG_ASSIGN_OR_RETURN(result.regions, plan.ReadRegions(ws.data(), stream.get()));
  std::uint32_t count = 0;
  if (cudaMemcpy(&count, plan.DeviceRegionCount(ws.data()), 4, cudaMemcpyDeviceToHost) !=
          cudaSuccess ||
      count != result.regions.size()) {
    return absl::InternalError("DeviceRegionCount disagrees with ReadRegions");
  }
  CUIMG_RETURN_IF_ERROR(Download(d_labels.data(), &result.labels));
  return result;
}

bool SameBits(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

void ExpectSameRegions(const std::vector<RegionStats>& got, const std::vector<RegionStats>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k) {
    const RegionStats& g = got[k];
    const RegionStats& w = want[k];
    const std::string at = absl::StrCat(what, " region ", k + 1);
    ASSERT_EQ(g.voxels, w.voxels) << at;
    ASSERT_EQ(g.bbox_begin, w.bbox_begin) << at;
    ASSERT_EQ(g.bbox_end, w.bbox_end) << at;
    for (int a = 0; a < 3; ++a) ASSERT_TRUE(SameBits(g.centroid[a], w.centroid[a])) << at;
    ASSERT_TRUE(SameBits(g.min, w.min)) << at << " min " << g.min << " vs " << w.min;
    ASSERT_TRUE(SameBits(g.max, w.max)) << at << " max " << g.max << " vs " << w.max;
    ASSERT_TRUE(SameBits(g.sum, w.sum)) << at << " sum " << g.sum << " vs " << w.sum;
    ASSERT_TRUE(SameBits(g.mean, w.mean)) << at;
  }
}

void ExpectLabelMatches(const Image& input, const LabelSpec& spec, const Image* intensity,
                        const std::string& what) {
  const ImageView iv = intensity != nullptr ? intensity->view() : ImageView{};
  absl::StatusOr<LabelResult> want =
      LabelReference(input.view(), spec, intensity != nullptr ? &iv : nullptr);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<LabelResult> got = LabelOnGpu(input, spec, intensity);
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  const std::int64_t i = testing::FirstMismatch(got->labels, want->labels);
  ASSERT_EQ(i, -1) << what << " labels " << testing::DescribeMismatch(got->labels, want->labels, i);
  ExpectSameRegions(got->regions, want->regions, what);
}

struct NamedMask {
  std::string name;
  Image mask;
};

std::vector<NamedMask> Masks(Extent e, std::uint64_t seed) {
  std::vector<NamedMask> masks;
  for (double density : {0.1, 0.45, 0.6, 0.9}) {
    masks.push_back({absl::StrCat("noise ", density), testing::NoiseMask(e, density, seed++)});
  }
  masks.push_back({"spiral", testing::SpiralMask(e, false)});
  masks.push_back({"spiral gaps", testing::SpiralMask(e, true)});
  masks.push_back({"maze", testing::MazeMask(e, seed++)});
  masks.push_back({"checkerboard", testing::Checkerboard(e)});
  masks.push_back({"all", testing::NoiseMask(e, 1.0, seed)});
  masks.push_back({"none", testing::NoiseMask(e, 0.0, seed)});
  Image dots(PixelType::kU8, e);  // single pixels on even coordinates
  for (std::int64_t i = 0; i < e.Pixels(); ++i) {
    const std::int64_t x = i % e.width, y = i / e.width % e.height, z = i / e.SlicePixels();
    dots.As<std::uint8_t>()[i] = x % 2 == 0 && y % 2 == 0 && z % 2 == 0;
  }
  masks.push_back({"dots", std::move(dots)});
  return masks;
}

std::vector<Connectivity> ConnectivitiesOf(const Extent& e) {
  if (e.depth > 1) return {Connectivity::k6, Connectivity::k18, Connectivity::k26};
  return {Connectivity::k4, Connectivity::k8};
}

TEST(LabelGpuTest, EqualsReferenceOnEveryMaskSizeTypeAndConnectivity) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent extents[] = {{1, 1, 1},    {1, 37, 1}, {29, 1, 1},  {37, 29, 1},
                            {300, 77, 1}, {1, 1, 5},  {33, 17, 9}, {70, 41, 19}};
  int n = 0;
  for (const Extent& e : extents) {
    for (const NamedMask& m : Masks(e, 100 + n)) {
      for (Connectivity c : ConnectivitiesOf(e)) {
        const PixelType type = kTypes[n % 5];
        const Image input = testing::ValuesOn(m.mask, type, n);
        LabelSpec spec;
        spec.connectivity = c;
        spec.min_voxels = n % 3 == 0 ? 3 : 0;
        const bool with_intensity = n % 4 != 3;
        // Random values of every type with infinities; every sixth an f32 image with NaN too.
        const Image intensity =
            n % 6 == 5 ? testing::ValuesOn(testing::NoiseMask(e, 0.5, n), PixelType::kF32, n)
                       : testing::RandomImage(kTypes[(n / 5) % 5], e, 7 * n, 0, false);
        const std::string what = absl::StrCat(
            m.name, " ", e.width, "x", e.height, "x", e.depth, " conn ", static_cast<int>(c), " ",
            PixelTypeName(type), " min_voxels ", spec.min_voxels, " intensity ",
            with_intensity ? PixelTypeName(intensity.type()) : "none");
        ExpectLabelMatches(input, spec, with_intensity ? &intensity : nullptr, what);
        ++n;
      }
    }
  }
}

TEST(LabelGpuTest, EqualsReferenceOnLargeImagesAndThresholds) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent hd{1920, 1080, 1};
  const Image blobs = testing::BlobMask(hd, 300, 5, 60, true, 1);
  const Image f32 = testing::RandomImage(PixelType::kF32, hd, 2);
  LabelSpec spec;
  spec.connectivity = Connectivity::k8;
  ExpectLabelMatches(blobs, spec, &f32, "1080p blobs conn 8");
  const Image maze = testing::MazeMask(hd, 3);
  spec.connectivity = Connectivity::k4;
  ExpectLabelMatches(maze, spec, nullptr, "1080p maze conn 4");
  // The most regions a 4-connected 1080p image can have, with f32 sums for each.
  const Image board = testing::Checkerboard(hd);
  ExpectLabelMatches(board, spec, &f32, "1080p checkerboard conn 4");
  // A threshold on i16 values, a CT-like volume of blobs.
  const Extent ct{128, 96, 64};
  const Image volume =
      testing::ValuesOn(testing::BlobMask(ct, 40, 3, 20, true, 4), PixelType::kI16, 5);
  const Image u16 = testing::RandomImage(PixelType::kU16, ct, 6);
  for (Connectivity c : {Connectivity::k6, Connectivity::k26}) {
    spec.connectivity = c;
    spec.threshold = std::array<double, 2>{-1000.5, 20000};
    spec.min_voxels = 10;
    ExpectLabelMatches(volume, spec, &u16,
                       absl::StrCat("ct blobs thresholded conn ", static_cast<int>(c)));
  }
}

TEST(LabelGpuTest, EqualsReferenceBeyondTheSegmentsTheNumberingSums) {
  CUIMG_SKIP_IF_NO_GPU();
  // 4,100 segments of 4,096 pixels: a scan kernel numbers them (up to 4,096 the numbering
  // blocks sum the counts before them).
  const Extent e{4096, 4100, 1};
  const Image blobs = testing::BlobMask(e, 3000, 3, 40, true, 7);
  LabelSpec spec;
  spec.connectivity = Connectivity::k8;
  ExpectLabelMatches(blobs, spec, nullptr, "4096x4100 blobs conn 8");
  spec.min_voxels = 50;
  ExpectLabelMatches(blobs, spec, nullptr, "4096x4100 blobs conn 8 min_voxels 50");
}

TEST(LabelGpuTest, IsDeterministic) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent e{200, 150, 40};
  const Image input = testing::NoiseMask(e, 0.3, 9);
  const Image f32 = testing::RandomImage(PixelType::kF32, e, 10);
  LabelSpec spec;
  spec.connectivity = Connectivity::k26;
  absl::StatusOr<LabelResult> a = LabelOnGpu(input, spec, &f32);
  absl::StatusOr<LabelResult> b = LabelOnGpu(input, spec, &f32);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(testing::FirstMismatch(a->labels, b->labels), -1);
  ExpectSameRegions(a->regions, b->regions, "second run");
}

TEST(LabelGpuTest, MarksEachPhaseInOrderWithoutChangingTheResult) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent e{70, 41, 19};
  const Image input = testing::BlobMask(e, 12, 2, 9, true, 3);
  const Image u16 = testing::RandomImage(PixelType::kU16, e, 4);
  LabelSpec spec;
  spec.connectivity = Connectivity::k26;
  for (std::int64_t min_voxels : {0, 20}) {
    spec.min_voxels = min_voxels;
    std::vector<std::string> phases;
    absl::StatusOr<LabelResult> got =
        LabelOnGpu(input, spec, &u16, [&](const char* phase) { phases.push_back(phase); });
    ASSERT_TRUE(got.ok()) << got.status();
    // 14 segments: the numbering sums the counts itself, no scan. With counts a flatten pass
    // finds the roots; without, the local pass's marks do, and the local roots take numbers.
    const std::vector<std::string> want =
        min_voxels > 0
            ? std::vector<std::string>{"local", "merge", "flatten", "count", "number", "resolve"}
            : std::vector<std::string>{"local",  "merge",       "count",
                                       "number", "local roots", "resolve"};
    EXPECT_EQ(phases, want);
    const ImageView iv = u16.view();
    absl::StatusOr<LabelResult> reference = LabelReference(input.view(), spec, &iv);
    ASSERT_TRUE(reference.ok()) << reference.status();
    ASSERT_EQ(testing::FirstMismatch(got->labels, reference->labels), -1);
    ExpectSameRegions(got->regions, reference->regions, "marked");
  }
}

enum class Step { kRemoveSmall, kKeepLargest, kFillHoles, kFillByMarker };

absl::StatusOr<Image> StepOnGpu(Step step, const Image& input, Connectivity c,
                                std::int64_t min_voxels, const Image* marker, bool in_place) {
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, Upload(input));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_out, Poisoned(input.size_bytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, Poisoned(MaskStepWorkspaceBytes(input.extent())));
  std::optional<DeviceBuffer> d_marker;
  if (marker != nullptr) {
    CUIMG_ASSIGN_OR_RETURN(d_marker, Upload(*marker));
  }
  void* out = in_place ? d_in.data() : d_out.data();
  const PixelType t = input.type();
  const Extent& e = input.extent();
  SeededFillSpec fill;
  fill.connectivity = c;
  switch (step) {
    case Step::kRemoveSmall:
      CUIMG_RETURN_IF_ERROR(
          RemoveSmallOnDevice(t, e, c, min_voxels, d_in.data(), out, ws.data(), stream.get()));
      break;
    case Step::kKeepLargest:
      CUIMG_RETURN_IF_ERROR(
          KeepLargestOnDevice(t, e, c, d_in.data(), out, ws.data(), stream.get()));
      break;
    case Step::kFillHoles:
      fill.range = std::array<double, 2>{0, 0};
      fill.seed_border = true;
      fill.fill = 77;
      CUIMG_RETURN_IF_ERROR(FillUnseededComponentsOnDevice(t, e, fill, d_in.data(), nullptr, t, out,
                                                           ws.data(), stream.get()));
      break;
    case Step::kFillByMarker:
      fill.seed_marker = true;
      fill.seed_border = min_voxels % 2 == 1;
      fill.fill = -3;
      CUIMG_RETURN_IF_ERROR(FillUnseededComponentsOnDevice(
          t, e, fill, d_in.data(), d_marker->data(), marker->type(), out, ws.data(), stream.get()));
      break;
  }
  CUIMG_RETURN_IF_ERROR(stream.Synchronize());
  Image result(t, e);
  CUIMG_RETURN_IF_ERROR(Download(out, &result));
  return result;
}

absl::Status StepOnCpu(Step step, const Image& input, Connectivity c, std::int64_t min_voxels,
                       const Image* marker, Image* out) {
  SeededFillSpec fill;
  fill.connectivity = c;
  switch (step) {
    case Step::kRemoveSmall:
      return RemoveSmallReference(input.view(), out->view(), c, min_voxels);
    case Step::kKeepLargest:
      return KeepLargestReference(input.view(), out->view(), c);
    case Step::kFillHoles:
      fill.range = std::array<double, 2>{0, 0};
      fill.seed_border = true;
      fill.fill = 77;
      return FillUnseededComponentsReference(input.view(), nullptr, out->view(), fill);
    case Step::kFillByMarker:
      break;
  }
  fill.seed_marker = true;
  fill.seed_border = min_voxels % 2 == 1;
  fill.fill = -3;
  const ImageView mv = marker->view();
  return FillUnseededComponentsReference(input.view(), &mv, out->view(), fill);
}

TEST(LabelGpuTest, MaskStepsEqualReference) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent extents[] = {{1, 1, 1},     {41, 1, 1}, {67, 45, 1},
                            {513, 300, 1}, {1, 3, 7},  {35, 18, 11}};
  int n = 0;
  for (const Extent& e : extents) {
    for (const NamedMask& m : Masks(e, 500 + n)) {
      for (Connectivity c : ConnectivitiesOf(e)) {
        for (Step step :
             {Step::kRemoveSmall, Step::kKeepLargest, Step::kFillHoles, Step::kFillByMarker}) {
          const PixelType type = kTypes[n % 5];
          const Image input = testing::ValuesOn(m.mask, type, n);
          const Image marker =
              testing::ValuesOn(testing::NoiseMask(e, 0.01, n), kTypes[(n + 2) % 5], n);
          const std::int64_t min_voxels = 1 + n % 7;
          Image want(type, e);
          ASSERT_TRUE(StepOnCpu(step, input, c, min_voxels, &marker, &want).ok());
          const bool in_place = n % 2 == 1;
          absl::StatusOr<Image> got = StepOnGpu(step, input, c, min_voxels, &marker, in_place);
          const std::string what = absl::StrCat(
              m.name, " ", e.width, "x", e.height, "x", e.depth, " conn ", static_cast<int>(c), " ",
              PixelTypeName(type), " step ", static_cast<int>(step), " min_voxels ", min_voxels,
              in_place ? " in place" : "");
          ASSERT_TRUE(got.ok()) << what << ": " << got.status();
          const std::int64_t i = testing::FirstMismatch(*got, want);
          ASSERT_EQ(i, -1) << what << " " << testing::DescribeMismatch(*got, want, i);
          ++n;
        }
      }
    }
  }
}

TEST(LabelGpuTest, FillHolesOfLargeMasksEqualsReference) {
  CUIMG_SKIP_IF_NO_GPU();
  for (const Extent& e : {Extent{1920, 1080, 1}, Extent{160, 128, 96}}) {
    for (const Image& mask : {testing::BlobMask(e, 200, 4, 40, true, 12),
                              testing::SpiralMask(e, true), testing::MazeMask(e, 13)}) {
      const Image input = testing::ValuesOn(mask, PixelType::kU8, 14);
      for (Connectivity c : ConnectivitiesOf(e)) {
        Image want(PixelType::kU8, e);
        ASSERT_TRUE(StepOnCpu(Step::kFillHoles, input, c, 0, nullptr, &want).ok());
        absl::StatusOr<Image> got = StepOnGpu(Step::kFillHoles, input, c, 0, nullptr, false);
        ASSERT_TRUE(got.ok()) << got.status();
        const std::int64_t i = testing::FirstMismatch(*got, want);
        ASSERT_EQ(i, -1) << e.width << "x" << e.height << "x" << e.depth << " conn "
                         << static_cast<int>(c) << " " << testing::DescribeMismatch(*got, want, i);
      }
    }
  }
}

}  // namespace
}  // namespace cuimg
