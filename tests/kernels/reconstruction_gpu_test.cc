// The GPU reconstruction and the segmentation steps of MorphologyPlan equal the CPU reference bit
// for bit (f32 by value) on the case families of the emulation test, on large adversarial images
// (a 1080p spiral and maze, a CT-like volume) where thousands of bricks race, and in chains.
// Labelled `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/kernels/reconstruction.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/reconstruction_cases.h"
#include "tests/testing/segmentation_cases.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

absl::StatusOr<DeviceBuffer> Upload(const Image& image) {
  absl::StatusOr<DeviceBuffer> d = DeviceBuffer::Allocate(image.size_bytes());
  if (!d.ok()) return d.status();
  if (cudaMemcpy(d->data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice) !=
      cudaSuccess) {
    return absl::InternalError("upload");
  }
  // cudaMemcpy/cudaMemset run on the legacy default stream and may return before they finish;
  // the plans run on non-blocking streams, which do not wait for it: finish them first.
  if (cudaDeviceSynchronize() != cudaSuccess) return absl::InternalError("upload");
  return d;
}

absl::Status Download(const DeviceBuffer& d, Image* image) {
  return cudaMemcpy(image->bytes(), d.data(), image->size_bytes(), cudaMemcpyDeviceToHost) ==
                 cudaSuccess
             ? absl::OkStatus()
             : absl::InternalError("download");
}

// ReconstructionPlan::Run on the device: `marker` in, the reconstruction out.
absl::StatusOr<Image> ReconstructOnGpu(const Image& mask, const Image& marker,
                                       ReconstructionMethod method, Connectivity c,
                                       ReconstructionRoute route,
                                       ReconstructionStats* stats = nullptr,
                                       const CancelToken& cancel = NeverCancelled()) {
  absl::StatusOr<ReconstructionPlan> plan =
      ReconstructionPlan::Create(mask.type(), mask.extent(), method, c, route);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<DeviceBuffer> d_mask = Upload(mask);
  absl::StatusOr<DeviceBuffer> d_r = Upload(marker);
  absl::StatusOr<DeviceBuffer> d_ws = DeviceBuffer::Allocate(plan->WorkspaceBytes());
  if (!d_mask.ok() || !d_r.ok() || !d_ws.ok()) return absl::ResourceExhaustedError("alloc");
  CUIMG_RETURN_IF_ERROR(
      plan->Run(d_mask->data(), d_r->data(), d_ws->data(), stream->get(), cancel, stats));
  CUIMG_RETURN_IF_ERROR(stream->Synchronize());
  Image out(mask.type(), mask.extent(), 1);
  CUIMG_RETURN_IF_ERROR(Download(*d_r, &out));
  return out;
}

// Both routes (the bricks, and the automatic choice that sends two-valued images to the
// union-find). `print`: say which route ran and its rounds (the large cases).
void ExpectReconstructionMatches(const testing::ReconstructionCase& c, bool print = false) {
  Image expected(c.mask.type(), c.mask.extent(), 1);
  ASSERT_TRUE(ReconstructionReferenceInto(c.marker.view(), c.mask.view(), expected.view(), c.method,
                                          c.connectivity)
                  .ok());
  for (ReconstructionRoute route : {ReconstructionRoute::kBricks, ReconstructionRoute::kAuto}) {
    ReconstructionStats stats;
    absl::StatusOr<Image> got =
        ReconstructOnGpu(c.mask, c.marker, c.method, c.connectivity, route, &stats);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    const std::int64_t at = testing::FirstMismatch(*got, expected);
    EXPECT_EQ(at, -1) << c.name << (route == ReconstructionRoute::kAuto ? " auto " : " bricks ")
                      << (at >= 0 ? testing::DescribeMismatch(*got, expected, at) : "");
    if (print) {
      std::printf("%s %s: %s, %d rounds (%d launched), %lld brick runs\n", c.name.c_str(),
                  route == ReconstructionRoute::kAuto ? "auto" : "bricks",
                  stats.two_levels ? "union-find" : "bricks", stats.rounds, stats.launched_rounds,
                  static_cast<long long>(stats.bricks));
    }
  }
}

TEST(ReconstructionGpu, EqualsTheReferenceOnEveryCaseFamily) {
  CUIMG_SKIP_IF_NO_GPU();
  for (const testing::ReconstructionCase& c : testing::ReconstructionCases()) {
    ExpectReconstructionMatches(c);
  }
}

TEST(ReconstructionGpu, EqualsTheReferenceOnLargeAdversarialImages) {
  CUIMG_SKIP_IF_NO_GPU();
  const Extent hd{1920, 1080, 1};
  std::vector<testing::ReconstructionCase> cases;
  for (Connectivity c : {Connectivity::k4, Connectivity::k8}) {
    // fill_holes' reconstruction: the border's 0 runs the whole spiral or maze.
    for (const auto& [name, image] :
         {std::pair<std::string, Image>{"spiral", testing::OpenSpiral(PixelType::kU8, hd)},
          std::pair<std::string, Image>{"maze", testing::OpenMaze(PixelType::kU8, hd, 5)},
          std::pair<std::string, Image>{"blobs", BlobImage(PixelType::kU8, hd, 6)}}) {
      Image marker = image;
      std::uint8_t* m = marker.As<std::uint8_t>();
      for (std::int64_t y = 1; y + 1 < hd.height; ++y) {
        for (std::int64_t x = 1; x + 1 < hd.width; ++x) m[y * hd.width + x] = 255;
      }
      cases.push_back({absl::StrCat(name, "_fill_c", static_cast<int>(c)), image, marker,
                       ReconstructionMethod::kErosion, c});
    }
    const Image ramp = SpiralImage(PixelType::kF32, Extent{512, 384, 1}, /*ramp=*/true);
    cases.push_back({absl::StrCat("spiral_ramp_c", static_cast<int>(c)), ramp,
                     testing::SeedMarker(ramp, true, 0, 0, {512 + 1}),
                     ReconstructionMethod::kDilation, c});
  }
  const Extent ct{192, 160, 60};
  const Image volume = CtLikeVolume(ct, 3);
  for (Connectivity c : {Connectivity::k6, Connectivity::k26}) {
    Image marker = volume;
    std::int16_t* m = marker.As<std::int16_t>();
    for (std::int64_t i = 0; i < ct.Pixels(); ++i) m[i] = static_cast<std::int16_t>(m[i] - 10);
    cases.push_back({absl::StrCat("ct_hmax_c", static_cast<int>(c)), volume, marker,
                     ReconstructionMethod::kDilation, c});
  }
  const Image maze3d = testing::OpenMaze(PixelType::kU16, Extent{95, 63, 41}, 9);
  cases.push_back({"maze3d_erode_c18", maze3d, testing::SeedMarker(maze3d, false, 1, 4),
                   ReconstructionMethod::kErosion, Connectivity::k18});
  for (const testing::ReconstructionCase& c : cases) ExpectReconstructionMatches(c, true);
}

MorphologyStep Step(MorphOp op, Connectivity c = Connectivity::kDefault) {
  MorphologyStep s;
  s.op = op;
  s.connectivity = c;
  return s;
}

absl::StatusOr<Image> ChainOnGpu(const Image& input, const std::vector<MorphologyStep>& steps,
                                 const Image* marker) {
  absl::StatusOr<MorphologyPlan> plan = MorphologyPlan::Create(input.type(), input.extent(), steps);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<DeviceBuffer> d_in = Upload(input);
  absl::StatusOr<DeviceBuffer> d_marker = Upload(marker != nullptr ? *marker : input);
  absl::StatusOr<DeviceBuffer> d_out = DeviceBuffer::Allocate(input.size_bytes());
  absl::StatusOr<DeviceBuffer> d_ws = DeviceBuffer::Allocate(plan->WorkspaceBytes());
  if (!d_in.ok() || !d_marker.ok() || !d_out.ok() || !d_ws.ok()) {
    return absl::ResourceExhaustedError("alloc");
  }
  // Poisoned, so a pixel left unwritten shows.
  if (cudaMemset(d_out->data(), 0xAB, input.size_bytes()) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess) {  // synchronized: see Upload
    return absl::InternalError("memset");
  }
  CUIMG_RETURN_IF_ERROR(plan->Run(d_in->data(), d_out->data(), d_ws->data(), stream->get(),
                                  NeverCancelled(),
                                  marker != nullptr ? d_marker->data() : nullptr));
  CUIMG_RETURN_IF_ERROR(stream->Synchronize());
  Image out(input.type(), input.extent(), 1);
  CUIMG_RETURN_IF_ERROR(Download(*d_out, &out));
  return out;
}

TEST(MorphologySegmentationGpu, ChainsEqualTheReference) {
  CUIMG_SKIP_IF_NO_GPU();
  for (PixelType t :
       {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32, PixelType::kU32}) {
    for (const Extent& e : {Extent{301, 203, 1}, Extent{67, 45, 23}}) {
      absl::StatusOr<Image> natural = testing::NaturalImage(e);
      ASSERT_TRUE(natural.ok()) << natural.status();
      const Image in = testing::FromU8(*natural, t);
      const Connectivity c = e.depth > 1 ? Connectivity::k26 : Connectivity::k8;
      MorphologyStep open = Step(MorphOp::kOpenRec, c);
      open.element =
          *StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 9, 9, 0, -1, -1, -1, {}});
      MorphologyStep close = Step(MorphOp::kCloseRec);
      close.element =
          *StructuringElement::Create(ElementSpec{ElementShape::kRect, 3, 3, 3, -1, -1, -1, {}});
      close.iterations = 2;
      MorphologyStep hmax = Step(MorphOp::kHMax, c);
      hmax.h = testing::LevelOf(t, 10) - testing::LevelOf(t, 0);
      MorphologyStep hmin = hmax;
      hmin.op = MorphOp::kHMin;
      MorphologyStep threshold = Step(MorphOp::kThreshold);
      threshold.lo = testing::LevelOf(t, 100);
      threshold.hi = testing::LevelOf(t, 255);
      const Image marker = testing::SeedMarker(in, true, 5, 7);
      MorphologyStep small = Step(MorphOp::kRemoveSmall, c);
      small.min_voxels = 50;
      std::vector<std::pair<std::string, std::vector<MorphologyStep>>> chains = {
          {"fill_holes", {Step(MorphOp::kFillHoles, c)}},
          {"hmax", {hmax}},
          {"hmin", {hmin}},
          {"threshold_fill", {threshold, Step(MorphOp::kFillHoles)}},
          {"reconstruct_then_hmin", {Step(MorphOp::kReconstructDilate, c), hmin}},
          {"threshold_remove_small", {threshold, small}},
          {"threshold_fill_keep_largest",
           {threshold, Step(MorphOp::kFillHoles, c), Step(MorphOp::kKeepLargest, c)}},
      };
      if (IsFilterPixelType(t)) {
        chains.push_back({"open_rec", {open}});
        chains.push_back({"close_rec", {close}});
        chains.push_back({"threshold_open_fill", {threshold, open, Step(MorphOp::kFillHoles, c)}});
      }
      for (const auto& [name, steps] : chains) {
        const std::string what =
            absl::StrCat(name, " ", PixelTypeName(t), " ", e.width, "x", e.height, "x", e.depth);
        absl::StatusOr<Image> want = MorphologyReference(in, steps, 0, NeverCancelled(), &marker);
        ASSERT_TRUE(want.ok()) << what << ": " << want.status();
        absl::StatusOr<Image> got = ChainOnGpu(in, steps, &marker);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        const std::int64_t at = testing::FirstMismatch(*got, *want);
        EXPECT_EQ(at, -1) << what << " "
                          << (at >= 0 ? testing::DescribeMismatch(*got, *want, at) : "");
      }
    }
  }
}

TEST(MorphologySegmentationGpu, RefusesAMissingMarker) {
  CUIMG_SKIP_IF_NO_GPU();
  const Image in = testing::RandomImage(PixelType::kU8, Extent{40, 30, 1}, 1);
  EXPECT_THAT(ChainOnGpu(in, {Step(MorphOp::kReconstructErode)}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ReconstructionGpu, StopsWhenCancelled) {
  CUIMG_SKIP_IF_NO_GPU();
  const Image spiral = testing::OpenSpiral(PixelType::kU8, Extent{1920, 1080, 1});
  CancelToken cancel;
  cancel.Cancel();
  EXPECT_THAT(ReconstructOnGpu(spiral, spiral, ReconstructionMethod::kErosion, Connectivity::k4,
                               ReconstructionRoute::kAuto, nullptr, cancel),
              StatusIs(absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace cuimg
