// What a batch relies on, on the CUDA backend: same-shape 2D images stacked as the slices of one
// volume give, slice for slice, what each image gives alone, for Morphology with 2D elements of
// every kernel family (fused box, line passes, nested rows, chords) and for Gradient, in every
// pixel type. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "server/backend/backend.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

constexpr int kSlices = 5;

// kSlices random images of `extent` (2D) and the volume that stacks them.
struct Stack {
  std::vector<Image> images;
  Image volume;
};

Stack MakeStack(PixelType type, const Extent& extent, std::uint64_t seed) {
  Stack s;
  s.volume = Image(type, Extent{extent.width, extent.height, kSlices}, 1);
  const std::size_t slice = ImageView{type, extent, 1, nullptr}.Bytes();
  for (int k = 0; k < kSlices; ++k) {
    s.images.push_back(testing::RandomImage(type, extent, seed + static_cast<std::uint64_t>(k)));
    std::memcpy(s.volume.bytes() + k * slice, s.images.back().bytes(), slice);
  }
  return s;
}

MorphologyStep Step(MorphOp op, ElementShape shape, int width, int height) {
  absl::StatusOr<StructuringElement> e =
      StructuringElement::Create(ElementSpec{shape, width, height, 0, -1, -1, -1, {}});
  EXPECT_TRUE(e.ok()) << e.status();
  MorphologyStep step;
  step.op = op;
  step.element = *e;
  return step;
}

TEST(BatchGpu, MorphologyOfStackedImagesEqualsEachImageAlone) {
  CUIMG_SKIP_IF_NO_GPU();
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateCudaBackend(ServerOptions());
  ASSERT_TRUE(backend.ok()) << backend.status();
  const std::vector<std::pair<std::string, std::vector<MorphologyStep>>> chains = {
      {"box 3x3 (fused)", {Step(MorphOp::kDilate, ElementShape::kRect, 3, 3)}},
      {"line 31x1 (line passes)", {Step(MorphOp::kErode, ElementShape::kRect, 31, 1)}},
      {"disk 9 (nested rows)", {Step(MorphOp::kOpen, ElementShape::kEllipse, 9, 9)}},
      {"ellipse 21x13 and cross (chords)",
       {Step(MorphOp::kTopHat, ElementShape::kEllipse, 21, 13),
        Step(MorphOp::kGradient, ElementShape::kCross, 5, 7)}},
  };
  const Extent extent{67, 45, 1};
  for (const PixelType type : {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32}) {
    const Stack stack = MakeStack(type, extent, 70);
    for (const auto& [name, steps] : chains) {
      SCOPED_TRACE(name + " " + std::string(PixelTypeName(type)));
      Image together(type, stack.volume.extent(), 1);
      StageTimes times;
      ASSERT_TRUE((*backend)
                      ->Morphology(stack.volume.view(), together.view(), steps, nullptr, &times,
                                   NeverCancelled())
                      .ok());
      const std::size_t slice = stack.images[0].size_bytes();
      for (int k = 0; k < kSlices; ++k) {
        Image alone(type, extent, 1);
        ASSERT_TRUE((*backend)
                        ->Morphology(stack.images[k].view(), alone.view(), steps, nullptr, &times,
                                     NeverCancelled())
                        .ok());
        EXPECT_EQ(std::memcmp(alone.bytes(), together.bytes() + k * slice, slice), 0)
            << "slice " << k;
      }
    }
  }
}

TEST(BatchGpu, GradientOfStackedImagesEqualsEachImageAlone) {
  CUIMG_SKIP_IF_NO_GPU();
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateCudaBackend(ServerOptions());
  ASSERT_TRUE(backend.ok()) << backend.status();
  // 120x5 strips for short radii (length 7), the tile kernel for long ones (length 15).
  for (const int length : {7, 15}) {
    for (const PixelType type : {PixelType::kU8, PixelType::kI16, PixelType::kF32}) {
      SCOPED_TRACE(std::to_string(length) + " " + std::string(PixelTypeName(type)));
      const Extent extent{131, 37, 1};
      const Stack stack = MakeStack(type, extent, 90);
      GradientSpec spec;
      spec.kernel_length = length;
      spec.magnitude = true;
      spec.angle = true;
      const std::size_t plane = static_cast<std::size_t>(extent.Pixels());
      std::vector<float> together(4 * plane * kSlices);
      float* t = together.data();
      const std::size_t volume = plane * kSlices;
      StageTimes times;
      ASSERT_TRUE((*backend)
                      ->Gradient(stack.volume.view(), spec,
                                 GradientOutputs{t, t + volume, t + 2 * volume, t + 3 * volume},
                                 &times, NeverCancelled())
                      .ok());
      for (int k = 0; k < kSlices; ++k) {
        std::vector<float> alone(4 * plane);
        float* a = alone.data();
        ASSERT_TRUE((*backend)
                        ->Gradient(stack.images[k].view(), spec,
                                   GradientOutputs{a, a + plane, a + 2 * plane, a + 3 * plane},
                                   &times, NeverCancelled())
                        .ok());
        for (int p = 0; p < 4; ++p) {
          EXPECT_EQ(std::memcmp(a + p * plane, t + p * volume + k * plane, plane * sizeof(float)),
                    0)
              << "plane " << p << " slice " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace cuimg
