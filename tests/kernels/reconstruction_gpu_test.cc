// The GPU reconstruction equals the CPU reference bit for bit (f32 by value) on the case families
// of the emulation test and on large adversarial images (a 1080p spiral and maze, a CT-like
// volume) where thousands of bricks race, in every variant of the bricks. The segmentation steps'
// chains: segmentation_chain_gpu_test. Labelled `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/reconstruction.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/device_images.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/reconstruction_cases.h"
#include "tests/testing/segmentation_cases.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

// ReconstructionPlan::Run on the device: `marker` in, the reconstruction out.
absl::StatusOr<Image> ReconstructOnGpu(const Image& mask, const Image& marker,
                                       ReconstructionMethod method, Connectivity c,
                                       ReconstructionRoute route,
                                       ReconstructionStats* stats = nullptr,
                                       const CancelToken& cancel = NeverCancelled(),
                                       const ReconstructionTuning& tuning = {}) {
  absl::StatusOr<ReconstructionPlan> plan =
      ReconstructionPlan::Create(mask.type(), mask.extent(), method, c, route, tuning);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<CudaStream> stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<DeviceBuffer> d_mask = testing::UploadImage(mask);
  absl::StatusOr<DeviceBuffer> d_r = testing::UploadImage(marker);
  absl::StatusOr<DeviceBuffer> d_ws = DeviceBuffer::Allocate(plan->WorkspaceBytes());
  if (!d_mask.ok() || !d_r.ok() || !d_ws.ok()) return absl::ResourceExhaustedError("alloc");
  CUIMG_RETURN_IF_ERROR(
      plan->Run(d_mask->data(), d_r->data(), d_ws->data(), stream->get(), cancel, stats));
  CUIMG_RETURN_IF_ERROR(stream->Synchronize());
  Image out(mask.type(), mask.extent(), 1);
  CUIMG_RETURN_IF_ERROR(testing::DownloadImage(*d_r, &out));
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

// Every tuning (both schedules, either first order) on every case family and a CT-like
// volume's hmax, where thousands of bricks race.
TEST(ReconstructionGpu, EveryTuningEqualsTheReference) {
  CUIMG_SKIP_IF_NO_GPU();
  std::vector<testing::ReconstructionCase> cases = testing::ReconstructionCases(false);
  const Extent ct{192, 160, 60};
  const Image volume = CtLikeVolume(ct, 3);
  Image marker = volume;
  std::int16_t* m = marker.As<std::int16_t>();
  for (std::int64_t i = 0; i < ct.Pixels(); ++i) m[i] = static_cast<std::int16_t>(m[i] - 10);
  cases.push_back(
      {"ct_hmax_c6", volume, marker, ReconstructionMethod::kDilation, Connectivity::k6});
  for (const testing::ReconstructionCase& c : cases) {
    Image expected(c.mask.type(), c.mask.extent(), 1);
    ASSERT_TRUE(ReconstructionReferenceInto(c.marker.view(), c.mask.view(), expected.view(),
                                            c.method, c.connectivity)
                    .ok());
    for (const auto& [name, tuning] : testing::ReconstructionTunings()) {
      absl::StatusOr<Image> got =
          ReconstructOnGpu(c.mask, c.marker, c.method, c.connectivity, ReconstructionRoute::kBricks,
                           nullptr, NeverCancelled(), tuning);
      ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
      const std::int64_t at = testing::FirstMismatch(*got, expected);
      EXPECT_EQ(at, -1) << c.name << " " << name
                        << (at >= 0 ? testing::DescribeMismatch(*got, expected, at) : "");
    }
  }
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
