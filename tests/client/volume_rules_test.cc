// What issue 46's real files showed the readers must do: NIfTI NaN and infinities read as stored
// (nifticlib's loader made them 0), in either byte order; NIfTI units kept by a derived file; a
// single .dcm file read as a one-file series; a 2D DICOM image without PixelSpacing,
// ImageOrientationPatient or ImagePositionPatient read with its spacing and placement unknown,
// while a series of several such slices, which cannot be ordered, is refused.
#include <nifti2_io.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/io/dicom_series.h"
#include "client/io/image_file.h"
#include "client/io/nifti_file.h"
#include "client/io/volume_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/dicom_test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::cuimg::testing::TempDir;
using ::testing::HasSubstr;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Image NonFinite() {
  Image image(PixelType::kF32, Extent{4, 3, 2});
  for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
    image.As<float>()[i] = static_cast<float>(i) - 5.5f;
  }
  image.As<float>()[0] = kNaN;
  image.As<float>()[7] = kInf;
  image.As<float>()[13] = -kInf;
  image.As<float>()[23] = kNaN;
  return image;
}

void ExpectSameValues(const Image& got, const Image& want) {
  ASSERT_EQ(got.type(), PixelType::kF32);
  ASSERT_EQ(got.extent(), want.extent());
  for (std::int64_t i = 0; i < want.extent().Pixels(); ++i) {
    const float g = got.As<float>()[i], w = want.As<float>()[i];
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << "voxel " << i << " is " << g;
    } else {
      EXPECT_EQ(g, w) << "voxel " << i;
    }
  }
}

TEST(NiftiNonFinite, NaNAndInfinitiesReadAsStored) {
  // Arrange
  TempDir dir;
  const Image image = NonFinite();
  for (const char* name : {"f.nii", "f.nii.gz"}) {
    ASSERT_THAT(WriteNifti(dir / name, image.view(), {1, 1, 1}, {}, nullptr), IsOk());

    // Act
    absl::StatusOr<NiftiVolume> back = ReadNifti(dir / name);

    // Assert
    ASSERT_THAT(back.status(), IsOk()) << name;
    ExpectSameValues(back->image, image);
  }
}

TEST(NiftiNonFinite, BigEndianFloatsAreSwappedWithTheirNaN) {
  // Arrange: a little-endian file turned big-endian by hand (header fields and data swapped),
  // as nibabel's resampled_anat_moved.nii is stored.
  TempDir dir;
  const Image image = NonFinite();
  ASSERT_THAT(WriteNifti(dir / "le.nii", image.view(), {1, 1, 1}, {}, nullptr), IsOk());
  std::ifstream in(dir / "le.nii", std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  ASSERT_GE(bytes.size(), 352u + image.size_bytes());
  swap_nifti_header(bytes.data(), 1);
  for (std::size_t at = 352; at + 4 <= bytes.size(); at += 4) {
    std::swap(bytes[at], bytes[at + 3]);
    std::swap(bytes[at + 1], bytes[at + 2]);
  }
  std::ofstream(dir / "be.nii", std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));

  // Act
  absl::StatusOr<NiftiVolume> back = ReadNifti(dir / "be.nii");

  // Assert
  ASSERT_THAT(back.status(), IsOk());
  ExpectSameValues(back->image, image);
}

TEST(NiftiNonFinite, ScalingCarriesNaNButRefusesFiniteOverflow) {
  TempDir dir;
  const Image image = NonFinite();
  ASSERT_THAT(WriteNifti(dir / "s.nii", image.view(), {1, 1, 1}, {}, nullptr), IsOk());
  // scl_slope 2 on the file nifticlib wrote (the header's float at byte 112).
  std::fstream f(dir / "s.nii", std::ios::in | std::ios::out | std::ios::binary);
  const float slope = 2;
  f.seekp(112);
  f.write(reinterpret_cast<const char*>(&slope), 4);
  f.close();
  absl::StatusOr<NiftiVolume> back = ReadNifti(dir / "s.nii");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_TRUE(std::isnan(back->image.As<float>()[0]));
  EXPECT_EQ(back->image.As<float>()[7], kInf);
  EXPECT_EQ(back->image.As<float>()[13], -kInf);
  EXPECT_EQ(back->image.As<float>()[1], 2 * (1 - 5.5f));
}

TEST(NiftiUnits, ADerivedFileKeepsTheSourceUnitsAndSpacing) {
  // Arrange: a source in micrometres with seconds as its time unit.
  TempDir dir;
  const Image image = NonFinite();
  NiftiTransforms keep;
  keep.xyz_units = NIFTI_UNITS_MICRON;
  keep.time_units = NIFTI_UNITS_SEC;
  ASSERT_THAT(WriteNifti(dir / "um.nii", image.view(), {0.002, 0.003, 0.004}, {}, &keep), IsOk());

  // Act
  absl::StatusOr<VolumeFile> source = ReadVolumeFile(dir / "um.nii");
  ASSERT_THAT(source.status(), IsOk());
  ASSERT_THAT(WriteVolumeFile(dir / "out.nii", source->image.view(), source->spacing, *source, {}),
              IsOk());
  std::unique_ptr<nifti_image, void (*)(nifti_image*)> out(
      nifti_image_read((dir / "out.nii").c_str(), 0), nifti_image_free);

  // Assert: the spacing is read in millimetres and written back in the source's unit.
  EXPECT_NEAR(source->spacing.x_mm, 0.002, 1e-9);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->xyz_units, NIFTI_UNITS_MICRON);
  EXPECT_EQ(out->time_units, NIFTI_UNITS_SEC);
  EXPECT_NEAR(out->pixdim[1], 2, 1e-6);
  EXPECT_NEAR(out->pixdim[3], 4, 1e-6);
}

TEST(DicomFiles, OneDcmFileIsAOneSliceSeries) {
  // Arrange
  TempDir dir;
  testing::TestSlice slice;
  slice.file = dir / "one.dcm";
  testing::WriteTestSlice(slice, 3);

  // Act
  absl::StatusOr<VolumeFile> read = ReadVolumeFile(slice.file);

  // Assert
  ASSERT_THAT(read.status(), IsOk());
  EXPECT_EQ(read->image.extent(), (Extent{5, 6, 1}));
  ASSERT_NE(read->dicom, nullptr);
  EXPECT_EQ(read->image.As<std::int16_t>()[1], testing::TestSliceValues(slice, 3)[1] - 1024);
  EXPECT_TRUE(read->geometry.known);
  EXPECT_DOUBLE_EQ(read->spacing.x_mm, 0.6);
}

TEST(DicomFiles, ADcmFileThatIsNotDicomIsBadDataAndADcmOutputIsRefused) {
  TempDir dir;
  ASSERT_THAT(WriteFileBytes(dir / "text.dcm", {'h', 'i'}), IsOk());
  const absl::Status read = ReadVolumeFile(dir / "text.dcm").status();
  EXPECT_EQ(ExitCodeForReadError(read), 3) << read;
  const Image image(PixelType::kI16, Extent{2, 2, 1});
  EXPECT_THAT(WriteVolumeFile(dir / "out.dcm", image.view(), {}, VolumeFile{}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("folder")));
}

TEST(DicomFiles, A2DImageWithoutSpacingOrPlacementReadsWithThemUnknown) {
  // Arrange: a secondary capture: no PixelSpacing, ImageOrientationPatient or position.
  TempDir dir;
  testing::TestSlice slice;
  slice.file = dir / "sc.dcm";
  slice.position = slice.orientation = slice.spacing = false;
  testing::WriteTestSlice(slice, 1);

  // Act
  absl::StatusOr<VolumeFile> read = ReadVolumeFile(slice.file);

  // Assert
  ASSERT_THAT(read.status(), IsOk());
  EXPECT_FALSE(read->spacing.Known());
  EXPECT_FALSE(read->geometry.known);
  // A derived series of it is written as the tags say (nothing invented).
  ASSERT_THAT(WriteVolumeFile(dir / "out", read->image.view(), read->spacing, *read, {}), IsOk());
  absl::StatusOr<VolumeFile> back = ReadVolumeFile(dir / "out");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->image.storage(), read->image.storage());
  EXPECT_FALSE(back->geometry.known);
}

TEST(DicomFiles, SeveralSlicesWithoutPositionsAreRefusedAsUnordered) {
  TempDir dir;
  testing::TestSlice like;
  like.position = false;
  testing::WriteTestSeries(dir / "nm", 3, like);
  EXPECT_THAT(ReadVolumeFile(dir / "nm").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ImagePositionPatient: missing for frame 1")));
  // Without PixelSpacing alone too: the derived series' geometry would be invented (the one
  // reader contract of the CLI and Python, docs/design.md), so the field is named.
  like = {};
  like.spacing = false;
  testing::WriteTestSeries(dir / "nospacing", 3, like);
  EXPECT_THAT(ReadVolumeFile(dir / "nospacing").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("PixelSpacing: missing")));
}

}  // namespace
}  // namespace cuimg
