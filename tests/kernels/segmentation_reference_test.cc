// The CPU reference's segmentation steps against scikit-image's `reconstruction` and SciPy's
// `binary_fill_holes` (segmentation_oracle.py, run by Debian's python3 with python3-skimage and
// python3-scipy): every type, 2D and 3D, each connectivity, on random images, adversarial
// spirals and mazes whose geodesic paths cover the image, and opencv-doc's basketball1.png.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cuimg/common/error.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/reference/morphology_reference.h"
#include "cuimg/reference/reconstruction_reference.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/random_image.h"
#include "tests/testing/segmentation_cases.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;

const PixelType kTypes[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32,
                            PixelType::kU32};

struct OracleCase {
  std::string name;
  Image input;
  std::optional<Image> marker;
  std::vector<MorphologyStep> steps;
};

const char* DtypeOf(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return "uint8";
    case PixelType::kU16:
      return "uint16";
    case PixelType::kI16:
      return "int16";
    case PixelType::kU32:
      return "uint32";
    case PixelType::kF32:
      break;
  }
  return "float32";
}

std::string Number(double v) { return absl::StrFormat("\"%.17g\"", v); }

// The element as nested lists of 0/1, z outermost (only for a volume), as SciPy's footprint.
std::string FootprintJson(const StructuringElement& se, bool volume) {
  std::vector<std::string> slices;
  for (int z = 0; z < se.depth(); ++z) {
    std::vector<std::string> rows;
    for (int y = 0; y < se.height(); ++y) {
      std::vector<std::string> row;
      for (int x = 0; x < se.width(); ++x) row.push_back(se.Contains(x, y, z) ? "1" : "0");
      rows.push_back(absl::StrCat("[", absl::StrJoin(row, ","), "]"));
    }
    slices.push_back(absl::StrCat("[", absl::StrJoin(rows, ","), "]"));
  }
  return volume ? absl::StrCat("[", absl::StrJoin(slices, ","), "]") : slices.front();
}

std::string StepJson(const MorphologyStep& s, const Extent& e) {
  return absl::StrCat("{\"op\":\"", MorphOpName(s.op),
                      "\",\"conn\":", static_cast<int>(ResolveConnectivity(s.connectivity, e)),
                      ",\"h\":", Number(s.h), ",\"lo\":", Number(s.lo), ",\"hi\":", Number(s.hi),
                      ",\"iterations\":", s.iterations, ",\"min_voxels\":", s.min_voxels,
                      ",\"footprint\":", FootprintJson(s.element, e.depth > 1), "}");
}

void WriteRaw(const std::string& path, const Image& image) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(image.bytes()), image.size_bytes());
}

std::optional<Image> ReadRaw(const std::string& path, PixelType type, const Extent& e) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  Image image(type, e, 1);
  in.read(reinterpret_cast<char*>(image.bytes()), image.size_bytes());
  return image;
}

struct Expected {
  std::optional<Image> out;
  std::optional<Image> scipy;  // binary_fill_holes, for a lone fill_holes on a 0/max mask
};

// Every case through the oracle in one Python process.
std::vector<Expected> RunOracle(const std::vector<OracleCase>& cases) {
  testing::TempDir dir;
  std::vector<std::string> entries;
  for (const OracleCase& c : cases) {
    const Extent& e = c.input.extent();
    std::vector<std::string> steps;
    for (const MorphologyStep& s : c.steps) steps.push_back(StepJson(s, e));
    const std::string shape = e.depth > 1 ? absl::StrCat(e.depth, ",", e.height, ",", e.width)
                                          : absl::StrCat(e.height, ",", e.width);
    entries.push_back(absl::StrCat("{\"name\":\"", c.name, "\",\"dtype\":\"",
                                   DtypeOf(c.input.type()), "\",\"shape\":[", shape,
                                   "],\"marker\":", c.marker ? "true" : "false", ",\"steps\":[",
                                   absl::StrJoin(steps, ","), "]}"));
    WriteRaw(dir / (c.name + ".in"), c.input);
    if (c.marker) WriteRaw(dir / (c.name + ".marker"), *c.marker);
  }
  {
    std::ofstream manifest(dir / "manifest.json");
    manifest << "{\"cases\":[" << absl::StrJoin(entries, ",\n") << "]}";
  }
  const std::string command =
      absl::StrCat(CUIMG_TEST_PYTHON, " ", CUIMG_SEGMENTATION_ORACLE, " ", dir / "");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::vector<Expected> expected;
  for (const OracleCase& c : cases) {
    const PixelType t = c.input.type();
    const Extent& e = c.input.extent();
    expected.push_back(
        {ReadRaw(dir / (c.name + ".out"), t, e), ReadRaw(dir / (c.name + ".scipy"), t, e)});
  }
  return expected;
}

// Returns how many cases were also held to SciPy's binary_fill_holes.
int ExpectReferenceMatchesOracle(const std::vector<OracleCase>& cases) {
  // Arrange
  const std::vector<Expected> expected = RunOracle(cases);
  int scipy_checked = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const OracleCase& c = cases[i];
    if (!expected[i].out) {
      ADD_FAILURE() << c.name << ": the oracle wrote nothing";
      continue;
    }
    // Act
    absl::StatusOr<Image> actual =
        MorphologyReference(c.input, c.steps, 0, NeverCancelled(), c.marker ? &*c.marker : nullptr);
    // Assert
    if (!actual.ok()) {
      ADD_FAILURE() << c.name << ": " << actual.status();
      continue;
    }
    const std::int64_t at = testing::FirstMismatch(*actual, *expected[i].out);
    EXPECT_EQ(at, -1) << c.name << " differs from scikit-image "
                      << (at >= 0 ? testing::DescribeMismatch(*actual, *expected[i].out, at) : "");
    if (expected[i].scipy) {
      ++scipy_checked;
      const std::int64_t s = testing::FirstMismatch(*actual, *expected[i].scipy);
      EXPECT_EQ(s, -1) << c.name << " differs from scipy's binary_fill_holes "
                       << (s >= 0 ? testing::DescribeMismatch(*actual, *expected[i].scipy, s) : "");
    }
  }
  return scipy_checked;
}

MorphologyStep Step(MorphOp op, Connectivity c = Connectivity::kDefault) {
  MorphologyStep s;
  s.op = op;
  s.connectivity = c;
  return s;
}

MorphologyStep ElementStep(MorphOp op, ElementShape shape, int w, int h, int d, Connectivity c,
                           int iterations = 1) {
  MorphologyStep s = Step(op, c);
  s.element = *StructuringElement::Create(ElementSpec{shape, w, h, d, -1, -1, -1, {}});
  s.iterations = iterations;
  return s;
}

MorphologyStep HeightStep(MorphOp op, double h, Connectivity c) {
  MorphologyStep s = Step(op, c);
  s.h = h;
  return s;
}

MorphologyStep ThresholdStep(double lo, double hi) {
  MorphologyStep s = Step(MorphOp::kThreshold);
  s.lo = lo;
  s.hi = hi;
  return s;
}

std::vector<Connectivity> ConnectivitiesOf(const Extent& e) {
  if (e.depth > 1) return {Connectivity::k6, Connectivity::k18, Connectivity::k26};
  return {Connectivity::k4, Connectivity::k8};
}

std::string NameOf(PixelType t, const Extent& e, Connectivity c, absl::string_view what) {
  return absl::StrCat(what, "_", PixelTypeName(t), "_", e.width, "x", e.height, "x", e.depth, "_c",
                      static_cast<int>(c));
}

// 10 grey levels of u8 in `type` (FromU8's scale).
double Levels(PixelType t, double u8_levels) {
  switch (t) {
    case PixelType::kU8:
      return u8_levels;
    case PixelType::kU16:
      return u8_levels * 257;
    case PixelType::kI16:
      return u8_levels * 256;
    case PixelType::kU32:
      return u8_levels * 16843009.0;  // (2^32 - 1) / 255
    case PixelType::kF32:
      break;
  }
  return u8_levels / 255;
}

TEST(SegmentationReference, ReconstructionMatchesScikitImageOnRandomImages) {
  std::vector<OracleCase> cases;
  std::uint64_t seed = 1;
  for (PixelType t : kTypes) {
    for (const Extent& e : {Extent{37, 23, 1}, Extent{13, 11, 6}}) {
      for (Connectivity c : ConnectivitiesOf(e)) {
        for (MorphOp op : {MorphOp::kReconstructDilate, MorphOp::kReconstructErode}) {
          const bool dilate = op == MorphOp::kReconstructDilate;
          // Plateaus (5 levels) make ties; the marker is unclamped, or a few seeds.
          Image mask = testing::RandomImage(t, e, ++seed, 5, /*finite=*/false);
          cases.push_back({NameOf(t, e, c, absl::StrCat(MorphOpName(op), "_random")),
                           mask,
                           testing::RandomImage(t, e, ++seed, 5),
                           {Step(op, c)}});
          cases.push_back({NameOf(t, e, c, absl::StrCat(MorphOpName(op), "_seeds")),
                           mask,
                           testing::SeedMarker(mask, dilate, 3, ++seed),
                           {Step(op, c)}});
        }
      }
    }
  }
  ExpectReferenceMatchesOracle(cases);
}

TEST(SegmentationReference, StepsMatchScikitImageOnRandomAndBlobImages) {
  std::vector<OracleCase> cases;
  std::uint64_t seed = 100;
  for (PixelType t : kTypes) {
    for (const Extent& e : {Extent{40, 30, 1}, Extent{16, 14, 9}}) {
      const bool volume = e.depth > 1;
      for (Connectivity c : ConnectivitiesOf(e)) {
        const Image blobs = BlobImage(t, e, ++seed, 7);
        const Image grey = testing::RandomImage(t, e, ++seed, 7, /*finite=*/true);
        auto add = [&](const char* what, const Image& in, std::vector<MorphologyStep> steps) {
          cases.push_back({NameOf(t, e, c, what), in, std::nullopt, std::move(steps)});
        };
        add("fill_holes_blobs", blobs, {Step(MorphOp::kFillHoles, c)});
        add("fill_holes_grey", grey, {Step(MorphOp::kFillHoles, c)});
        add("hmax", grey, {HeightStep(MorphOp::kHMax, Levels(t, 40), c)});
        add("hmin", grey, {HeightStep(MorphOp::kHMin, Levels(t, 40), c)});
        if (IsFilterPixelType(t)) {  // the element steps take no U32
          add("open_rec", grey,
              {ElementStep(MorphOp::kOpenRec, ElementShape::kEllipse, 5, 5, volume ? 3 : 0, c)});
          add("close_rec", grey,
              {ElementStep(MorphOp::kCloseRec, ElementShape::kRect, 3, 3, 0, c, 2)});
        }
        add("threshold", grey, {ThresholdStep(Levels(t, 50), Levels(t, 180))});
        MorphologyStep small = Step(MorphOp::kRemoveSmall, c);
        small.min_voxels = 30;
        add("remove_small", blobs, {small});
        add("keep_largest", grey,
            {ThresholdStep(Levels(t, 120), Levels(t, 255)), Step(MorphOp::kKeepLargest, c)});
      }
    }
  }
  EXPECT_EQ(ExpectReferenceMatchesOracle(cases), 5 * 5);  // the blob masks
}

TEST(SegmentationReference, MatchesScikitImageOnSpiralsAndMazes) {
  std::vector<OracleCase> cases;
  for (PixelType t : kTypes) {
    for (const Extent& e : {Extent{61, 47, 1}, Extent{21, 17, 4}}) {
      for (Connectivity c : ConnectivitiesOf(e)) {
        // A grey reconstruction from the spiral's entrance must follow its whole corridor.
        const Image ramp = SpiralImage(t, e, /*ramp=*/true);
        cases.push_back({NameOf(t, e, c, "spiral_ramp"),
                         ramp,
                         testing::SeedMarker(ramp, true, 0, 0, {e.width + 1}),
                         {Step(MorphOp::kReconstructDilate, c)}});
        cases.push_back({NameOf(t, e, c, "spiral_open"),
                         testing::OpenSpiral(t, e),
                         std::nullopt,
                         {Step(MorphOp::kFillHoles, c)}});
        cases.push_back({NameOf(t, e, c, "spiral_closed"),
                         testing::OpenSpiral(t, e, true),
                         std::nullopt,
                         {Step(MorphOp::kFillHoles, c)}});
      }
    }
    for (const Extent& e : {Extent{63, 41, 1}, Extent{15, 13, 11}}) {
      for (Connectivity c : ConnectivitiesOf(e)) {
        cases.push_back({NameOf(t, e, c, "maze_fill"),
                         testing::OpenMaze(t, e, 7),
                         std::nullopt,
                         {Step(MorphOp::kFillHoles, c)}});
        const Image maze = MazeImage(t, e, 8);
        cases.push_back({NameOf(t, e, c, "maze_erode"),
                         maze,
                         testing::SeedMarker(maze, false, 2, 9),
                         {Step(MorphOp::kReconstructErode, c)}});
      }
    }
  }
  // Every spiral and maze fill is a 0/max mask: also held to binary_fill_holes.
  EXPECT_EQ(ExpectReferenceMatchesOracle(cases), 5 * 5 * 3);
}

TEST(SegmentationReference, MatchesScikitImageOnANaturalImage) {
  std::vector<OracleCase> cases;
  for (const Extent& e : {Extent{96, 72, 1}, Extent{48, 36, 6}}) {
    absl::StatusOr<Image> natural = testing::NaturalImage(e);
    ASSERT_TRUE(natural.ok()) << natural.status();
    const bool volume = e.depth > 1;
    for (PixelType t : kTypes) {
      const Image in = testing::FromU8(*natural, t);
      for (Connectivity c : ConnectivitiesOf(e)) {
        auto add = [&](const char* what, std::vector<MorphologyStep> steps) {
          cases.push_back({NameOf(t, e, c, what), in, std::nullopt, std::move(steps)});
        };
        add("hmax", {HeightStep(MorphOp::kHMax, Levels(t, 10), c)});
        add("hmin", {HeightStep(MorphOp::kHMin, Levels(t, 10), c)});
        add("fill_holes", {Step(MorphOp::kFillHoles, c)});
        if (!IsFilterPixelType(t)) continue;  // the element steps take no U32
        add("open_rec", {ElementStep(MorphOp::kOpenRec, ElementShape::kEllipse, 9, 9, 0, c)});
        add("close_rec",
            {ElementStep(MorphOp::kCloseRec, ElementShape::kEllipse, 5, 5, volume ? 5 : 0, c)});
        // The clean-up: threshold, open, fill the holes, keep the largest component.
        add("chain", {ThresholdStep(Levels(t, 100), Levels(t, 255)),
                      ElementStep(MorphOp::kOpenRec, ElementShape::kRect, 3, 3, 0, c),
                      Step(MorphOp::kFillHoles, c), Step(MorphOp::kKeepLargest, c)});
      }
    }
  }
  ExpectReferenceMatchesOracle(cases);
}

// f32 with NaN in the mask and the marker: NaN mask pixels stay NaN and block; NaN marker
// pixels seed nothing (the oracle applies the same documented rule around scikit-image).
TEST(SegmentationReference, NaNFollowsTheDocumentedRule) {
  std::vector<OracleCase> cases;
  std::uint64_t seed = 500;
  auto with_nan = [&](Image image) {
    std::mt19937_64 rng(++seed);
    float* p = image.As<float>();
    for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
      if (rng() % 9 == 0) p[i] = std::numeric_limits<float>::quiet_NaN();
    }
    return image;
  };
  for (const Extent& e : {Extent{33, 25, 1}, Extent{11, 9, 7}}) {
    for (Connectivity c : ConnectivitiesOf(e)) {
      const Image mask = with_nan(testing::RandomImage(PixelType::kF32, e, ++seed, 0, true));
      for (MorphOp op : {MorphOp::kReconstructDilate, MorphOp::kReconstructErode}) {
        cases.push_back({NameOf(PixelType::kF32, e, c, absl::StrCat(MorphOpName(op), "_nan")),
                         mask,
                         with_nan(testing::RandomImage(PixelType::kF32, e, ++seed, 0, true)),
                         {Step(op, c)}});
      }
      cases.push_back({NameOf(PixelType::kF32, e, c, "hmax_nan"),
                       mask,
                       std::nullopt,
                       {HeightStep(MorphOp::kHMax, 50, c)}});
      cases.push_back({NameOf(PixelType::kF32, e, c, "fill_holes_nan"),
                       mask,
                       std::nullopt,
                       {Step(MorphOp::kFillHoles, c)}});
    }
  }
  ExpectReferenceMatchesOracle(cases);
}

TEST(SegmentationReference, ReconstructionInPlaceEqualsIntoAnotherImage) {
  // Arrange
  const Extent e{29, 19, 1};
  const Image mask = testing::RandomImage(PixelType::kU16, e, 3, 6);
  Image marker = testing::RandomImage(PixelType::kU16, e, 4, 6);
  Image out(PixelType::kU16, e, 1);
  // Act
  CUIMG_ASSERT_OK(ReconstructionReferenceInto(marker.view(), mask.view(), out.view(),
                                              ReconstructionMethod::kErosion, Connectivity::k8));
  CUIMG_ASSERT_OK(ReconstructionReferenceInto(marker.view(), mask.view(), marker.view(),
                                              ReconstructionMethod::kErosion, Connectivity::k8));
  // Assert
  EXPECT_EQ(testing::FirstMismatch(out, marker), -1);
}

TEST(SegmentationReference, RefusesAMissingOrMismatchedMarker) {
  // Arrange
  const Image in = testing::RandomImage(PixelType::kU8, Extent{8, 8, 1}, 1);
  const Image wrong = testing::RandomImage(PixelType::kU16, Extent{8, 8, 1}, 2);
  const std::vector<MorphologyStep> steps{Step(MorphOp::kReconstructDilate)};
  // Act
  const absl::Status missing = MorphologyReference(in, steps).status();
  const absl::Status mismatched =
      MorphologyReference(in, steps, 0, NeverCancelled(), &wrong).status();
  // Assert
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorFieldOf(missing), "marker");
  EXPECT_EQ(ErrorReasonOf(missing), "FIELD_REQUIRED");
  EXPECT_THAT(mismatched, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorReasonOf(mismatched), "SHAPE_MISMATCH");
}

TEST(SegmentationReference, U32TakesOnlyTheSegmentationSteps) {
  // Arrange
  const Image labels = testing::RandomImage(PixelType::kU32, Extent{9, 7, 1}, 5, 4);
  // Act
  const absl::Status open =
      MorphologyReference(
          labels, {Step(MorphOp::kFillHoles), ElementStep(MorphOp::kOpenRec, ElementShape::kRect, 3,
                                                          3, 0, Connectivity::kDefault)})
          .status();
  const absl::Status threshold = MorphologyReference(labels, {ThresholdStep(1, 9)}).status();
  // Assert
  EXPECT_THAT(open, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorReasonOf(open), "UNSUPPORTED_PIXEL_TYPE");
  EXPECT_THAT(std::string(open.message()), ::testing::HasSubstr("steps[1] (open_rec)"));
  CUIMG_EXPECT_OK(threshold);
}

TEST(SegmentationReference, StopsWhenCancelled) {
  // Arrange
  const Image in = testing::OpenSpiral(PixelType::kU8, Extent{301, 201, 1});
  CancelToken cancel;
  cancel.Cancel();
  // Act
  const absl::Status status =
      MorphologyReference(in, {Step(MorphOp::kFillHoles)}, 0, cancel).status();
  // Assert
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace cuimg
