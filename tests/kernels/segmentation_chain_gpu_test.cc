// The segmentation steps of MorphologyPlan on the GPU, in chains with the element steps, equal
// the CPU reference (MorphologyReference) bit for bit on every type, 2D and 3D. Labelled `gpu`;
// skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/reference/morphology_reference.h"
#include "tests/testing/device_images.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/segmentation_cases.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

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
  absl::StatusOr<DeviceBuffer> d_in = testing::UploadImage(input);
  absl::StatusOr<DeviceBuffer> d_marker = testing::UploadImage(marker != nullptr ? *marker : input);
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
  CUIMG_RETURN_IF_ERROR(testing::DownloadImage(*d_out, &out));
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
      MorphologyStep everything = threshold;  // every pixel the maximum: one value
      everything.lo = testing::LevelOf(t, 0);
      const Image marker = testing::SeedMarker(in, true, 5, 7);
      MorphologyStep small = Step(MorphOp::kRemoveSmall, c);
      small.min_voxels = 50;
      std::vector<std::pair<std::string, std::vector<MorphologyStep>>> chains = {
          {"fill_holes", {Step(MorphOp::kFillHoles, c)}},
          {"hmax", {hmax}},
          {"hmin", {hmin}},
          {"threshold_fill", {threshold, Step(MorphOp::kFillHoles)}},
          {"one_value_fill", {everything, Step(MorphOp::kFillHoles, c)}},
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

}  // namespace
}  // namespace cuimg
