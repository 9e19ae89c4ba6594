// GPU morphology equals the CPU reference bit for bit (integer types; f32 by value), on random
// inputs over types, 2D/3D, shapes, sizes (1..255, even/odd), anchors, ops, iterations, borders
// and chains. Labelled `gpu`; skips without a device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/staged_copy.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/reference/morphology_reference.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

// Runs the plan on the device; the output buffer is poisoned first so unwritten pixels show.
absl::StatusOr<Image> RunOnGpu(const Image& input, const std::vector<MorphologyStep>& steps) {
  auto plan = MorphologyPlan::Create(input.type(), input.extent(), steps);
  if (!plan.ok()) return plan.status();
  auto stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  auto d_in = DeviceBuffer::Allocate(input.size_bytes());
  auto d_out = DeviceBuffer::Allocate(input.size_bytes());
  auto d_ws = DeviceBuffer::Allocate(plan->WorkspaceBytes());
  if (!d_in.ok() || !d_out.ok() || !d_ws.ok()) return absl::ResourceExhaustedError("alloc");
  if (cudaMemcpy(d_in->data(), input.bytes(), input.size_bytes(), cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMemset(d_out->data(), 0xAB, input.size_bytes()) != cudaSuccess ||
      // Legacy-stream copies and memsets may return early; the plan's stream does not wait.
      cudaDeviceSynchronize() != cudaSuccess) {
    return absl::InternalError("copy");
  }
  absl::Status run = plan->Run(d_in->data(), d_out->data(), d_ws->data(), stream->get());
  if (!run.ok()) return run;
  if (absl::Status s = stream->Synchronize(); !s.ok()) return s;
  Image out(input.type(), input.extent(), 1);
  if (cudaMemcpy(out.bytes(), d_out->data(), out.size_bytes(), cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return absl::InternalError("copy back");
  }
  return out;
}

void ExpectGpuMatchesReference(const Image& input, const std::vector<MorphologyStep>& steps,
                               const std::string& what) {
  absl::StatusOr<Image> want = MorphologyReference(input, steps);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<Image> got = RunOnGpu(input, steps);
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  const std::int64_t i = testing::FirstMismatch(*got, *want);
  ASSERT_EQ(i, -1) << what << " " << testing::DescribeMismatch(*got, *want, i);
}

MorphologyStep RandomStep(std::mt19937& rng, bool volume, int max_extent, std::string* what) {
  const MorphOp ops[] = {MorphOp::kErode,    MorphOp::kDilate, MorphOp::kOpen,    MorphOp::kClose,
                         MorphOp::kGradient, MorphOp::kTopHat, MorphOp::kBlackHat};
  ElementSpec spec;
  spec.shape = static_cast<ElementShape>(rng() % 4);
  spec.width = 1 + static_cast<int>(rng() % max_extent);
  spec.height = 1 + static_cast<int>(rng() % max_extent);
  spec.depth = volume && rng() % 2 ? 1 + static_cast<int>(rng() % 7) : 0;
  const int depth = spec.depth == 0 ? 1 : spec.depth;
  if (rng() % 3 == 0) {
    spec.anchor_x = static_cast<int>(rng() % spec.width);
    spec.anchor_y = static_cast<int>(rng() % spec.height);
    spec.anchor_z = static_cast<int>(rng() % depth);
  }
  if (spec.shape == ElementShape::kCustom) {
    spec.mask.resize(static_cast<std::size_t>(spec.width) * spec.height * depth);
    for (auto& m : spec.mask) m = rng() % 4 == 0;
    spec.mask[rng() % spec.mask.size()] = 1;
  }
  MorphologyStep step;
  step.op = ops[rng() % 7];
  step.element = *StructuringElement::Create(spec);
  step.iterations = rng() % 4 == 0 ? 2 : 1;
  step.border = rng() % 3 == 0 ? BorderMode::kConstant : BorderMode::kNeutral;
  step.border_value = static_cast<double>(static_cast<int>(rng() % 600) - 100);
  *what += " op=" + std::to_string(static_cast<int>(step.op)) +
           " se=" + std::to_string(static_cast<int>(spec.shape)) + ":" +
           std::to_string(spec.width) + "x" + std::to_string(spec.height) + "x" +
           std::to_string(spec.depth) + " it=" + std::to_string(step.iterations) +
           (step.border == BorderMode::kConstant ? " const" : " neutral");
  return step;
}

TEST(MorphologyGpu, MatchesReferenceOn2DRandomCases) {
  CUIMG_SKIP_IF_NO_GPU();
  std::mt19937 rng(1);
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  for (int n = 0; n < 400; ++n) {
    const PixelType type = types[n % 4];
    const Extent e{1 + static_cast<int>(rng() % 200), 1 + static_cast<int>(rng() % 120), 1};
    std::string what = "case " + std::to_string(n) + " " + std::string(PixelTypeName(type)) + " " +
                       std::to_string(e.width) + "x" + std::to_string(e.height);
    std::vector<MorphologyStep> steps = {RandomStep(rng, false, 31, &what)};
    if (n % 5 == 0) steps.push_back(RandomStep(rng, false, 15, &what));
    ExpectGpuMatchesReference(testing::RandomImage(type, e, n, n % 2 ? 6 : 0), steps, what);
  }
}

TEST(MorphologyGpu, MatchesReferenceOn3DRandomCases) {
  CUIMG_SKIP_IF_NO_GPU();
  std::mt19937 rng(2);
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  for (int n = 0; n < 160; ++n) {
    const PixelType type = types[n % 4];
    const Extent e{1 + static_cast<int>(rng() % 60), 1 + static_cast<int>(rng() % 50),
                   1 + static_cast<int>(rng() % 30)};
    std::string what = "case " + std::to_string(n) + " " + std::string(PixelTypeName(type)) + " " +
                       std::to_string(e.width) + "x" + std::to_string(e.height) + "x" +
                       std::to_string(e.depth);
    std::vector<MorphologyStep> steps = {RandomStep(rng, true, 11, &what)};
    ExpectGpuMatchesReference(testing::RandomImage(type, e, 1000 + n), steps, what);
  }
}

TEST(MorphologyGpu, MatchesReferenceWithLargeElements) {
  CUIMG_SKIP_IF_NO_GPU();
  for (PixelType type : {PixelType::kU8, PixelType::kI16, PixelType::kF32}) {
    for (int size : {63, 64, 127, 255}) {
      for (ElementShape shape :
           {ElementShape::kRect, ElementShape::kEllipse, ElementShape::kCross}) {
        const Extent e{300, 70, 1};
        auto se =
            StructuringElement::Create(ElementSpec{shape, size, size / 4 + 1, 0, -1, -1, -1, {}});
        ASSERT_TRUE(se.ok());
        for (MorphOp op : {MorphOp::kErode, MorphOp::kDilate}) {
          ExpectGpuMatchesReference(testing::RandomImage(type, e, size),
                                    {{op, *se, 1, BorderMode::kNeutral, 0}},
                                    "size " + std::to_string(size));
        }
      }
    }
  }
}

// Boxes run the fused x/y kernel (small windows) or van Herk/Gil-Werman line passes (larger
// windows, and z): every size class, anchor and border, all types.
TEST(MorphologyGpu, BoxesOfEverySizeClassMatchReference) {
  CUIMG_SKIP_IF_NO_GPU();
  struct Box {
    int w, h, d;
  };
  const Box boxes[] = {{2, 1, 0},   {1, 2, 0},       {3, 3, 0},   {2, 5, 0},   {63, 63, 0},
                       {64, 1, 0},  {1, 64, 0},      {127, 3, 0}, {3, 127, 0}, {5, 300, 0},
                       {600, 2, 0}, {1023, 1023, 0}, {5, 5, 5},   {1, 1, 4},   {9, 1, 3},
                       {7, 7, 0},   {8, 7, 0},       {9, 9, 0},   {15, 15, 0}, {16, 15, 0},
                       {17, 33, 0}, {31, 1, 0},      {3, 3, 40}};
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  std::mt19937 rng(11);
  int n = 0;
  for (const Box& b : boxes) {
    for (PixelType type : types) {
      // Half the windows small enough for the (per-member) reference also on an extent of
      // several line-pass blocks each way (128 lines, outputs a multiple of L).
      const bool many_blocks = n % 2 == 0 && b.w * b.h <= 63 * 63;
      const Extent e = b.d > 0       ? Extent{37, 29, 91}
                       : many_blocks ? Extent{701, 389, 1}
                                     : Extent{333, 77, 1};
      ElementSpec spec{ElementShape::kRect, b.w, b.h, b.d, -1, -1, -1, {}};
      if (rng() % 2) {
        spec.anchor_x = static_cast<int>(rng() % b.w);
        spec.anchor_y = static_cast<int>(rng() % b.h);
        spec.anchor_z = static_cast<int>(rng() % std::max(b.d, 1));
      }
      auto se = StructuringElement::Create(spec);
      ASSERT_TRUE(se.ok()) << se.status();
      const BorderMode border = rng() % 2 ? BorderMode::kConstant : BorderMode::kNeutral;
      const MorphOp op = rng() % 2 ? MorphOp::kErode : MorphOp::kDilate;
      ++n;
      ExpectGpuMatchesReference(testing::RandomImage(type, e, 300 + n, n % 3 ? 0 : 5),
                                {{op, *se, 1, border, 17}},
                                "box " + std::to_string(b.w) + "x" + std::to_string(b.h) + "x" +
                                    std::to_string(b.d) + " " + std::string(PixelTypeName(type)));
    }
  }
}

TEST(MorphologyGpu, MatchesReferenceWithHugeElementsSplitIntoBands) {
  CUIMG_SKIP_IF_NO_GPU();
  struct Case {
    PixelType type;
    Extent extent;
    ElementSpec spec;
  };
  const Case cases[] = {
      {PixelType::kU8, Extent{90, 70, 1}, {ElementShape::kEllipse, 601, 301, 0, -1, -1, -1, {}}},
      {PixelType::kF32, Extent{90, 70, 1}, {ElementShape::kEllipse, 301, 601, 0, 10, 500, -1, {}}},
      {PixelType::kI16, Extent{50, 40, 1}, {ElementShape::kCross, 1023, 1023, 0, -1, -1, -1, {}}},
      {PixelType::kU16, Extent{40, 30, 9}, {ElementShape::kEllipse, 255, 255, 0, -1, -1, -1, {}}},
      {PixelType::kU8, Extent{70, 50, 1}, {ElementShape::kRect, 1023, 3, 0, -1, -1, -1, {}}},
      {PixelType::kI16, Extent{30, 26, 20}, {ElementShape::kEllipse, 31, 31, 31, -1, -1, -1, {}}},
  };
  for (const Case& c : cases) {
    auto se = StructuringElement::Create(c.spec);
    ASSERT_TRUE(se.ok()) << se.status();
    for (MorphOp op : {MorphOp::kErode, MorphOp::kDilate}) {
      ExpectGpuMatchesReference(
          testing::RandomImage(c.type, c.extent, 5), {{op, *se, 1, BorderMode::kNeutral, 0}},
          "huge " + std::to_string(c.spec.width) + "x" + std::to_string(c.spec.height));
    }
  }
}

// Elements of centred, nested rows (odd ellipses, crosses, diamonds; per-slice and 3D) run the
// nested-rows kernel: widths that are and are not multiples of 4 (vector and scalar accesses),
// odd heights and depths (half-filled words), every radius up to the kernel's limit, both borders.
TEST(MorphologyGpu, NestedRowElementsMatchReference) {
  CUIMG_SKIP_IF_NO_GPU();
  struct Case {
    ElementSpec spec;
    Extent extent;
  };
  std::vector<std::uint8_t> diamond(7 * 7);
  for (int y = 0; y < 7; ++y) {
    for (int x = 0; x < 7; ++x) diamond[y * 7 + x] = std::abs(x - 3) + std::abs(y - 3) <= 3;
  }
  const Case cases[] = {
      {{ElementShape::kEllipse, 9, 9, 0, -1, -1, -1, {}}, Extent{64, 40, 7}},
      {{ElementShape::kEllipse, 9, 9, 0, -1, -1, -1, {}}, Extent{131, 67, 1}},
      {{ElementShape::kEllipse, 15, 15, 0, -1, -1, -1, {}}, Extent{260, 33, 3}},
      {{ElementShape::kEllipse, 33, 5, 0, -1, -1, -1, {}}, Extent{300, 41, 1}},
      {{ElementShape::kEllipse, 3, 13, 0, -1, -1, -1, {}}, Extent{97, 120, 2}},
      {{ElementShape::kEllipse, 5, 3, 0, -1, -1, -1, {}}, Extent{1, 1, 1}},
      {{ElementShape::kEllipse, 7, 7, 0, -1, -1, -1, {}}, Extent{5, 3, 4}},
      {{ElementShape::kCross, 11, 7, 0, -1, -1, -1, {}}, Extent{128, 50, 5}},
      {{ElementShape::kCustom, 7, 7, 0, -1, -1, -1, diamond}, Extent{203, 90, 1}},
      {{ElementShape::kEllipse, 9, 9, 9, -1, -1, -1, {}}, Extent{60, 44, 21}},
      {{ElementShape::kEllipse, 7, 5, 3, -1, -1, -1, {}}, Extent{33, 20, 1}},
      {{ElementShape::kCross, 5, 5, 7, -1, -1, -1, {}}, Extent{48, 31, 16}},
      // Sections that are the anchor pixel alone (poles) fold into the first pass.
      {{ElementShape::kEllipse, 7, 5, 3, -1, -1, -1, {}}, Extent{64, 21, 9}},
      {{ElementShape::kEllipse, 3, 3, 9, -1, -1, -1, {}}, Extent{37, 29, 23}},
      // Compiled step lists (nested_steps.h): every disk and ball in the list.
      {{ElementShape::kEllipse, 3, 3, 0, -1, -1, -1, {}}, Extent{70, 19, 3}},
      {{ElementShape::kEllipse, 5, 5, 0, -1, -1, -1, {}}, Extent{129, 30, 1}},
      {{ElementShape::kEllipse, 11, 11, 0, -1, -1, -1, {}}, Extent{96, 45, 2}},
      {{ElementShape::kEllipse, 13, 13, 0, -1, -1, -1, {}}, Extent{150, 52, 1}},
      {{ElementShape::kEllipse, 5, 5, 5, -1, -1, -1, {}}, Extent{40, 26, 12}},
      {{ElementShape::kEllipse, 7, 7, 7, -1, -1, -1, {}}, Extent{52, 33, 15}},
  };
  const PixelType types[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};
  int n = 0;
  for (const Case& c : cases) {
    auto se = StructuringElement::Create(c.spec);
    ASSERT_TRUE(se.ok()) << se.status();
    for (PixelType type : types) {
      for (MorphOp op : {MorphOp::kErode, MorphOp::kDilate, MorphOp::kOpen}) {
        ++n;
        const std::vector<MorphologyStep> steps = {
            {op, *se, 1, n % 3 == 0 ? BorderMode::kConstant : BorderMode::kNeutral, 40}};
        auto plan = MorphologyPlan::Create(type, c.extent, steps);
        ASSERT_TRUE(plan.ok()) << plan.status();
        const std::string what =
            "nested " + std::to_string(c.spec.width) + "x" + std::to_string(c.spec.height) + "x" +
            std::to_string(c.spec.depth) + " on " + std::to_string(c.extent.width) + "x" +
            std::to_string(c.extent.height) + "x" + std::to_string(c.extent.depth) + " " +
            std::string(PixelTypeName(type)) + " op " + std::to_string(static_cast<int>(op));
        ASSERT_EQ(plan->Describe().rfind("nested(", 0), 0u) << what << ": " << plan->Describe();
        ExpectGpuMatchesReference(testing::RandomImage(type, c.extent, 700 + n, n % 2 ? 0 : 9),
                                  steps, what);
      }
    }
  }
}

// The server's shared-memory path: a plan that WritesOutputOnce() writes its result straight into
// registered (page-locked, mapped) host memory. Every type, even and odd widths (word stores and
// per-pixel stores), the fused x/y and one-axis box passes; every pixel checked against the
// reference after poisoning.
TEST(MorphologyGpu, WritesMappedHostMemoryInPlace) {
  CUIMG_SKIP_IF_NO_GPU();
  auto stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  for (PixelType type : {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32}) {
    for (Extent e : {Extent{640, 480, 1}, Extent{203, 97, 1}, Extent{66, 35, 3}}) {
      for (ElementSpec spec : {ElementSpec{ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}},
                               ElementSpec{ElementShape::kRect, 5, 1, 0, -1, -1, -1, {}},
                               ElementSpec{ElementShape::kRect, 1, 7, 0, -1, -1, -1, {}}}) {
        const std::string what = absl::StrCat(PixelTypeName(type), " ", e.width, "x", e.height, "x",
                                              e.depth, " rect ", spec.width, "x", spec.height);
        const Image input = testing::RandomImage(type, e, e.width + spec.width);
        MorphologyStep dilate;
        dilate.op = MorphOp::kDilate;
        dilate.element = *StructuringElement::Create(spec);
        auto plan = MorphologyPlan::Create(type, e, {dilate});
        ASSERT_TRUE(plan.ok()) << what;
        ASSERT_TRUE(plan->WritesOutputOnce()) << what << " " << plan->Describe();
        // Registered as the server registers a client's shared-memory region.
        std::vector<std::uint8_t> host(input.size_bytes());
        auto pin = HostRegistration::Register(host.data(), host.size());
        auto d_in = DeviceBuffer::Allocate(input.size_bytes());
        auto ws = DeviceBuffer::Allocate(plan->WorkspaceBytes());
        ASSERT_TRUE(pin.ok() && d_in.ok() && ws.ok()) << what;
        void* mapped = MappedDevicePointer(host.data());
        ASSERT_NE(mapped, nullptr) << what;
        ASSERT_EQ(
            cudaMemcpy(d_in->data(), input.bytes(), input.size_bytes(), cudaMemcpyHostToDevice),
            cudaSuccess);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the upload may return before its DMA
        std::fill(host.begin(), host.end(), 0xAB);
        ASSERT_TRUE(plan->Run(d_in->data(), mapped, ws->data(), stream->get()).ok()) << what;
        ASSERT_TRUE(stream->Synchronize().ok()) << what;
        absl::StatusOr<Image> want = MorphologyReference(input, {dilate});
        ASSERT_TRUE(want.ok()) << want.status();
        Image got(type, e, 1);
        std::copy(host.begin(), host.end(), got.bytes());
        const std::int64_t i = testing::FirstMismatch(got, *want);
        ASSERT_EQ(i, -1) << what << " " << testing::DescribeMismatch(got, *want, i);
      }
    }
  }
  std::vector<std::uint8_t> pageable(64);
  EXPECT_EQ(MappedDevicePointer(pageable.data()), nullptr);
}

// f32 images with NaN patches inside and over every border (issue 46): every kernel class (fused
// and line-pass boxes, nested rows with compiled and run-time steps, chords, bands, 3D), every op,
// against the reference, whose NaN rule morphology_nan_test checks. A window whose in-image pixels
// are all NaN must give NaN, never the border's value.
Image NaNPatched(const Extent& e, std::uint64_t seed) {
  Image image = testing::RandomImage(PixelType::kF32, e, seed, 0, /*finite=*/true);
  float* p = image.As<float>();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937 rng(static_cast<std::uint32_t>(seed));
  for (std::int64_t z = 0; z < e.depth; ++z) {
    for (std::int64_t y = 0; y < e.height; ++y) {
      for (std::int64_t x = 0; x < e.width; ++x) {
        const bool corner = (x < 20 && y < 12) || (x >= e.width - 9 && y >= e.height - 17);
        const bool inside =
            x >= e.width / 3 && x < e.width / 3 + 21 && y >= e.height / 3 && y < e.height / 3 + 19;
        const bool face = e.depth > 1 && z == e.depth - 1 && x < e.width / 2;
        if (corner || inside || face || rng() % 31 == 0) p[(z * e.height + y) * e.width + x] = nan;
      }
    }
  }
  return image;
}

TEST(MorphologyGpu, NaNPatchesMatchReferenceInEveryKernel) {
  CUIMG_SKIP_IF_NO_GPU();
  struct Case {
    ElementSpec spec;
    Extent extent;
  };
  const Case cases[] = {
      {{ElementShape::kRect, 3, 3, 0, -1, -1, -1, {}}, Extent{131, 67, 1}},       // fused x/y
      {{ElementShape::kRect, 15, 9, 0, -1, -1, -1, {}}, Extent{203, 97, 1}},      // line passes
      {{ElementShape::kRect, 3, 3, 5, -1, -1, -1, {}}, Extent{45, 33, 11}},       // z line pass
      {{ElementShape::kEllipse, 5, 5, 0, -1, -1, -1, {}}, Extent{128, 64, 1}},    // compiled steps
      {{ElementShape::kEllipse, 9, 7, 0, -1, -1, -1, {}}, Extent{131, 67, 3}},    // run-time steps
      {{ElementShape::kEllipse, 7, 7, 7, -1, -1, -1, {}}, Extent{52, 33, 15}},    // nested 3D ball
      {{ElementShape::kEllipse, 31, 31, 0, -1, -1, -1, {}}, Extent{203, 97, 1}},  // chords
      {{ElementShape::kCustom, 5, 1, 0, 0, 0, -1, {0, 0, 1, 0, 1}}, Extent{77, 41, 2}},
      {{ElementShape::kEllipse, 301, 601, 0, 10, 500, -1, {}}, Extent{40, 30, 1}},  // bands
  };
  const MorphOp ops[] = {MorphOp::kErode,    MorphOp::kDilate, MorphOp::kOpen,    MorphOp::kClose,
                         MorphOp::kGradient, MorphOp::kTopHat, MorphOp::kBlackHat};
  int n = 0;
  for (const Case& c : cases) {
    auto se = StructuringElement::Create(c.spec);
    ASSERT_TRUE(se.ok()) << se.status();
    const Image input = NaNPatched(c.extent, 900 + n);
    for (const MorphOp op : ops) {
      const std::vector<MorphologyStep> steps = {
          {op, *se, n % 2 == 0 ? 1 : 2, BorderMode::kNeutral, 0}};
      auto plan = MorphologyPlan::Create(PixelType::kF32, c.extent, steps);
      ASSERT_TRUE(plan.ok()) << plan.status();
      ExpectGpuMatchesReference(
          input, steps,
          absl::StrCat("NaN case ", n, " op ", static_cast<int>(op), " ", plan->Describe()));
      ++n;
    }
  }
}

TEST(MorphologyGpu, IsDeterministic) {
  CUIMG_SKIP_IF_NO_GPU();
  const Image input = testing::RandomImage(PixelType::kF32, Extent{257, 131, 3}, 99);
  auto se =
      StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 9, 7, 3, -1, -1, -1, {}});
  ASSERT_TRUE(se.ok());
  const std::vector<MorphologyStep> steps = {{MorphOp::kGradient, *se, 2, BorderMode::kNeutral, 0}};
  auto a = RunOnGpu(input, steps);
  auto b = RunOnGpu(input, steps);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(std::memcmp(a->bytes(), b->bytes(), a->size_bytes()), 0);
}

}  // namespace
}  // namespace cuimg
