// The client's volume formats: .npy, NRRD and NIfTI round trips per pixel type, and DICOM series
// read (sorted by position, rescaled, checked) and written back as a new series. The DICOM inputs
// are made here with DCMTK, slice files named in an order unrelated to their positions.
#include "client/io/volume_file.h"

#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dctk.h>
#include <nifti2_io.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/io/dicom_series.h"
#include "client/io/image_file.h"
#include "client/io/nifti_file.h"
#include "client/io/npy_file.h"
#include "client/io/nrrd_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::RandomImage;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

using ::cuimg::testing::TempDir;

bool SamePixels(const Image& a, const Image& b) {
  return a.type() == b.type() && a.extent() == b.extent() && a.channels() == b.channels() &&
         a.storage() == b.storage();
}

constexpr PixelType kTypes[] = {PixelType::kU8, PixelType::kU16, PixelType::kI16, PixelType::kF32};

TEST(NpyFile, RoundTripsEveryTypeIn2DAnd3D) {
  for (PixelType type : kTypes) {
    for (Extent extent : {Extent{7, 5, 1}, Extent{3, 4, 6}, Extent{1, 1, 1}}) {
      const Image image = RandomImage(type, extent, 11);
      absl::StatusOr<std::vector<std::uint8_t>> bytes = EncodeNpy(image.view());
      ASSERT_THAT(bytes.status(), IsOk());
      // np.save's layout: data starts at a multiple of 64.
      EXPECT_EQ((bytes->size() - image.size_bytes()) % 64, 0u);
      absl::StatusOr<Image> back = ParseNpy(*bytes, "t.npy");
      ASSERT_THAT(back.status(), IsOk());
      EXPECT_TRUE(SamePixels(image, *back)) << PixelTypeName(type) << " " << extent.depth;
    }
  }
}

std::vector<std::uint8_t> NpyBytes(const std::string& header_dict, const std::string& data) {
  std::string header = header_dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  const std::string blob =
      std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header + data;
  return std::vector<std::uint8_t>(blob.begin(), blob.end());
}

TEST(NpyFile, ReadsBigEndianAndSwapsToHost) {
  // (2, 1) big-endian int16: 0x0102 = 258 and 0xfffe = -2.
  absl::StatusOr<Image> image =
      ParseNpy(NpyBytes("{'descr': '>i2', 'fortran_order': False, 'shape': (2, 1), }",
                        std::string("\x01\x02\xff\xfe", 4)),
               "be.npy");
  ASSERT_THAT(image.status(), IsOk());
  EXPECT_EQ(image->type(), PixelType::kI16);
  EXPECT_EQ(image->extent(), (Extent{1, 2, 1}));
  EXPECT_EQ(image->As<std::int16_t>()[0], 258);
  EXPECT_EQ(image->As<std::int16_t>()[1], -2);
}

TEST(NpyFile, RejectsWhatItCannotRepresent) {
  const std::string four(4, '\0');
  EXPECT_THAT(ParseNpy(NpyBytes("{'descr': '<u1', 'fortran_order': True, 'shape': (2, 2), }", four),
                       "f.npy")
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Fortran")));
  EXPECT_THAT(
      ParseNpy(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", four),
               "d.npy")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<f8")));
  EXPECT_THAT(
      ParseNpy(NpyBytes("{'descr': '<u1', 'fortran_order': False, 'shape': (4,), }", four), "r.npy")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
  EXPECT_THAT(
      ParseNpy(NpyBytes("{'descr': '<u1', 'fortran_order': False, 'shape': (3, 2), }", four),
               "s.npy")
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4 data bytes")));
  EXPECT_THAT(
      ParseNpy(std::vector<std::uint8_t>{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}, "z.npy").status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("magic")));
  EXPECT_THAT(EncodeNpy(Image(PixelType::kU8, Extent{2, 2, 1}, 3).view()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(NrrdFile, RoundTripsEveryTypeWithSpacingRawAndGzip) {
  TempDir dir;
  for (NrrdEncoding encoding : {NrrdEncoding::kRaw, NrrdEncoding::kGzip}) {
    for (PixelType type : kTypes) {
      for (Extent extent : {Extent{9, 4, 1}, Extent{5, 3, 7}}) {
        const Image image = RandomImage(type, extent, 5);
        const VoxelSpacing spacing{0.5, 0.75, extent.depth > 1 ? 2.5 : 0};
        const std::string path = dir / "v.nrrd";
        ASSERT_THAT(WriteNrrd(path, image.view(), spacing, encoding), IsOk());
        absl::StatusOr<NrrdVolume> back = ReadNrrd(path);
        ASSERT_THAT(back.status(), IsOk());
        EXPECT_TRUE(SamePixels(image, back->image)) << PixelTypeName(type);
        EXPECT_DOUBLE_EQ(back->spacing.x_mm, 0.5);
        EXPECT_DOUBLE_EQ(back->spacing.y_mm, 0.75);
        EXPECT_DOUBLE_EQ(back->spacing.z_mm, spacing.z_mm);
      }
    }
  }
}

TEST(NrrdFile, GzipCompressesAndRejectsOtherTypes) {
  TempDir dir;
  const Image flat(PixelType::kU16, Extent{64, 64, 8});  // zeros compress well
  ASSERT_THAT(WriteNrrd(dir / "raw.nrrd", flat.view(), {}, NrrdEncoding::kRaw), IsOk());
  ASSERT_THAT(WriteNrrd(dir / "gz.nrrd", flat.view(), {}, NrrdEncoding::kGzip), IsOk());
  EXPECT_GT(fs::file_size(dir / "raw.nrrd"), flat.size_bytes());
  EXPECT_LT(fs::file_size(dir / "gz.nrrd"), flat.size_bytes() / 10);
  const std::string header = "NRRD0004\ntype: double\ndimension: 2\nsizes: 1 1\nencoding: raw\n\n";
  std::vector<std::uint8_t> bytes(header.begin(), header.end());
  bytes.resize(bytes.size() + 8, 0);
  ASSERT_THAT(WriteFileBytes(dir / "d.nrrd", bytes), IsOk());
  EXPECT_THAT(ReadNrrd(dir / "d.nrrd").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("double")));
}

TEST(NrrdFile, RefusesFilesWithoutANrrdMagic) {
  TempDir dir;
  // A malformed magic (Teem's parser leaks on it), Teem's other formats, and a short file.
  for (const std::string text :
       {"NRRD00nan04\ntype: uchar\ndimension: 2\nsizes: 1 1\nencoding: ascii\n\n7\n",
        "NRRD0009\ntype: uchar\ndimension: 2\nsizes: 1 1\nencoding: ascii\n\n7\n",
        "P2\n1 1\n255\n7\n", "NRRD"}) {
    ASSERT_THAT(WriteFileBytes(dir / "m.nrrd", std::vector<std::uint8_t>(text.begin(), text.end())),
                IsOk());
    EXPECT_THAT(ReadNrrd(dir / "m.nrrd").status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a NRRD file")))
        << text;
  }
  const std::string good =
      "NRRD0005\ntype: uchar\ndimension: 2\nsizes: 1 1\nencoding: ascii\n\n7\n";
  ASSERT_THAT(WriteFileBytes(dir / "g.nrrd", std::vector<std::uint8_t>(good.begin(), good.end())),
              IsOk());
  absl::StatusOr<NrrdVolume> read = ReadNrrd(dir / "g.nrrd");
  ASSERT_THAT(read.status(), IsOk());
  EXPECT_EQ(read->image.bytes()[0], 7);
}

// One CT slice as a scanner would store it: unsigned 12-bit in 16 with junk in the top bits,
// slope 1, intercept -1024, axial, with patient fields.
struct SliceSpec {
  std::string file;
  std::string series_uid;
  double z = 0;
  std::vector<std::uint16_t> stored;
  double slope = 1;
  double intercept = -1024;
  int pixel_representation = 0;
  int bits_stored = 12;
};
constexpr int kRows = 6, kColumns = 5;
constexpr char kPatientName[] = "Doe^Jane";

void WriteSlice(const SliceSpec& s) {
  DcmFileFormat format;
  DcmDataset* ds = format.getDataset();
  char uid[100];
  ds->putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
  ds->putAndInsertString(DCM_SOPInstanceUID,
                         dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT));
  ds->putAndInsertString(DCM_StudyInstanceUID, "1.2.826.0.1.3680043.2.1125.1.1");
  ds->putAndInsertString(DCM_SeriesInstanceUID, s.series_uid.c_str());
  ds->putAndInsertString(DCM_FrameOfReferenceUID, "1.2.826.0.1.3680043.2.1125.1.2");
  ds->putAndInsertString(DCM_PatientName, kPatientName);
  ds->putAndInsertString(DCM_PatientID, "PID-0042");
  ds->putAndInsertString(DCM_Modality, "CT");
  ds->putAndInsertString(DCM_SeriesNumber, "3");
  ds->putAndInsertString(DCM_SeriesDescription, "Chest 1mm");
  ds->putAndInsertString(DCM_ImageType, "ORIGINAL\\PRIMARY\\AXIAL");
  ds->putAndInsertString(DCM_ImagePositionPatient,
                         absl::StrFormat("-120.5\\-99.25\\%g", s.z).c_str());
  ds->putAndInsertString(DCM_ImageOrientationPatient, "1\\0\\0\\0\\1\\0");
  ds->putAndInsertString(DCM_PixelSpacing, "0.7\\0.6");
  ds->putAndInsertUint16(DCM_Rows, kRows);
  ds->putAndInsertUint16(DCM_Columns, kColumns);
  ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
  ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  ds->putAndInsertUint16(DCM_BitsAllocated, 16);
  ds->putAndInsertUint16(DCM_BitsStored, static_cast<Uint16>(s.bits_stored));
  ds->putAndInsertUint16(DCM_HighBit, static_cast<Uint16>(s.bits_stored - 1));
  ds->putAndInsertUint16(DCM_PixelRepresentation, static_cast<Uint16>(s.pixel_representation));
  ds->putAndInsertString(DCM_RescaleSlope, absl::StrCat(s.slope).c_str());
  ds->putAndInsertString(DCM_RescaleIntercept, absl::StrCat(s.intercept).c_str());
  ds->putAndInsertUint16Array(DCM_PixelData, s.stored.data(), s.stored.size());
  ASSERT_TRUE(format.saveFile(s.file.c_str(), EXS_LittleEndianExplicit).good());
}

std::vector<std::uint16_t> SliceValues(int z) {
  std::vector<std::uint16_t> v(kRows * kColumns);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<std::uint16_t>((z * 97 + i * 31) % 4096 | 0xf000);  // junk above bit 11
  }
  return v;
}

// Slice z lies at 10 - 1.25 z (so position order is the reverse of z), in a file whose name
// sorts in neither order.
void WriteSeries(const std::string& dir, int slices, const std::string& series_uid) {
  fs::create_directories(dir);
  for (int z = 0; z < slices; ++z) {
    WriteSlice({absl::StrFormat("%s/img%d.dcm", dir, (z * 7) % slices), series_uid, 10 - 1.25 * z,
                SliceValues(z)});
  }
}

std::string Tag(const std::string& file, const DcmTagKey& tag) {
  DcmFileFormat format;
  EXPECT_TRUE(format.loadFile(file.c_str()).good());
  OFString value;
  DcmItem* item =
      tag.getGroup() == 0x0002 ? static_cast<DcmItem*>(format.getMetaInfo()) : format.getDataset();
  item->findAndGetOFStringArray(tag, value);
  return value.c_str();
}

TEST(DicomSeries, ReadsSlicesSortedAlongTheNormalAndRescaled) {
  TempDir dir;
  constexpr int kSlices = 5;
  WriteSeries(dir / "in", kSlices, "1.2.826.0.1.3680043.2.1125.1.3");
  ASSERT_THAT(WriteFileBytes(dir / "in/README", {'h', 'i'}), IsOk());  // not DICOM: skipped

  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "in");

  ASSERT_THAT(series.status(), IsOk());
  EXPECT_EQ(series->volume.extent(), (Extent{kColumns, kRows, kSlices}));
  EXPECT_EQ(series->volume.type(), PixelType::kI16);
  EXPECT_DOUBLE_EQ(series->spacing.x_mm, 0.6);
  EXPECT_DOUBLE_EQ(series->spacing.y_mm, 0.7);
  EXPECT_DOUBLE_EQ(series->spacing.z_mm, 1.25);
  EXPECT_DOUBLE_EQ(series->gap_deviation_mm, 0);
  for (int k = 0; k < kSlices; ++k) {  // volume slice k is z = kSlices - 1 - k
    const std::vector<std::uint16_t> stored = SliceValues(kSlices - 1 - k);
    for (int i = 0; i < kRows * kColumns; ++i) {
      ASSERT_EQ(series->volume.As<std::int16_t>()[k * kRows * kColumns + i],
                (stored[i] & 0x0fff) - 1024)
          << "slice " << k << " pixel " << i;
    }
  }
}

TEST(DicomSeries, SignExtendsSignedStoredValues) {
  TempDir dir;
  fs::create_directories(dir / "in");
  std::vector<std::uint16_t> stored(kRows * kColumns, 0xfff);  // 12-bit -1, top bits clear
  stored[0] = 0x7ff;                                           // 12-bit +2047
  stored[1] = 0xf000;                                          // junk only: 0
  WriteSlice({dir / "in/a.dcm", "1.2.3.4", 0, stored, 2, 10, 1, 12});
  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "in");
  ASSERT_THAT(series.status(), IsOk());
  EXPECT_EQ(series->volume.As<std::int16_t>()[0], 2047 * 2 + 10);
  EXPECT_EQ(series->volume.As<std::int16_t>()[1], 10);
  EXPECT_EQ(series->volume.As<std::int16_t>()[2], -2 + 10);
}

TEST(DicomSeries, RefusesValuesOutsideI16MixedSeriesAndMissingFiles) {
  TempDir dir;
  fs::create_directories(dir / "big");
  WriteSlice(
      {dir / "big/a.dcm", "1.2.3.4", 0, std::vector<std::uint16_t>(kRows * kColumns, 4000), 10, 0});
  EXPECT_THAT(ReadDicomSeries(dir / "big").status(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("does not fit i16")));

  WriteSeries(dir / "mixed", 2, "1.2.3.5");
  WriteSlice({dir / "mixed/other.dcm", "1.2.3.6", 50, SliceValues(0)});
  EXPECT_THAT(ReadDicomSeries(dir / "mixed").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("more than one series")));

  fs::create_directories(dir / "dup");
  WriteSlice({dir / "dup/a.dcm", "1.2.3.7", 4, SliceValues(0)});
  WriteSlice({dir / "dup/b.dcm", "1.2.3.7", 4, SliceValues(1)});
  EXPECT_THAT(ReadDicomSeries(dir / "dup").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("same position")));

  fs::create_directories(dir / "empty");
  EXPECT_THAT(ReadDicomSeries(dir / "empty").status(), StatusIs(absl::StatusCode::kNotFound));
}

TEST(DicomSeries, RefusesRowsAndColumnsLargerThanThePixelDataBeforeAllocating) {
  TempDir dir;
  WriteSeries(dir / "s", 2, "1.2.3.8");
  DcmFileFormat format;
  ASSERT_TRUE(format.loadFile((dir / "s/img1.dcm").c_str()).good());
  // 40000 x 40000 would be a 3.2 GB volume from a file of a few hundred bytes.
  format.getDataset()->putAndInsertUint16(DCM_Rows, 40000);
  format.getDataset()->putAndInsertUint16(DCM_Columns, 40000);
  ASSERT_TRUE(format.saveFile((dir / "s/img1.dcm").c_str(), EXS_LittleEndianExplicit).good());
  EXPECT_THAT(ReadDicomSeries(dir / "s").status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("40000x40000x1 pixels need")));
}

TEST(DicomSeries, WritesANewSeriesWithTheSourceGeometryAndTags) {
  TempDir dir;
  constexpr int kSlices = 4;
  const std::string source_uid = "1.2.826.0.1.3680043.2.1125.1.4";
  WriteSeries(dir / "in", kSlices, source_uid);
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(dir / "in");
  ASSERT_THAT(input.status(), IsOk());
  ASSERT_NE(input->dicom, nullptr);
  Image result = input->image;
  for (std::int64_t i = 0; i < result.extent().Pixels(); ++i) {
    result.As<std::int16_t>()[i] = static_cast<std::int16_t>(i % 2 == 0 ? -3000 : 30000 - i);
  }

  ASSERT_THAT(WriteVolumeFile(dir / "out", result.view(), input->spacing, *input,
                              {NrrdEncoding::kRaw, "cuimg morphology dilate:rect:3x3x3"}),
              IsOk());

  absl::StatusOr<DicomSeries> back = ReadDicomSeries(dir / "out");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_TRUE(SamePixels(back->volume, result));
  EXPECT_DOUBLE_EQ(back->spacing.x_mm, input->spacing.x_mm);
  EXPECT_DOUBLE_EQ(back->spacing.z_mm, input->spacing.z_mm);
  std::set<std::string> sop_uids;
  std::string new_series;
  for (int k = 0; k < kSlices; ++k) {
    const std::string out = back->files[k];
    const std::string in = input->dicom->files[k];
    EXPECT_EQ(Tag(out, DCM_ImagePositionPatient), Tag(in, DCM_ImagePositionPatient));
    EXPECT_EQ(Tag(out, DCM_ImageOrientationPatient), Tag(in, DCM_ImageOrientationPatient));
    EXPECT_EQ(Tag(out, DCM_PixelSpacing), Tag(in, DCM_PixelSpacing));
    EXPECT_EQ(Tag(out, DCM_FrameOfReferenceUID), Tag(in, DCM_FrameOfReferenceUID));
    EXPECT_EQ(Tag(out, DCM_StudyInstanceUID), Tag(in, DCM_StudyInstanceUID));
    EXPECT_EQ(Tag(out, DCM_PatientName), kPatientName);
    EXPECT_EQ(Tag(out, DCM_RescaleSlope), "1");
    EXPECT_EQ(Tag(out, DCM_RescaleIntercept), "0");
    EXPECT_EQ(Tag(out, DCM_PixelRepresentation), "1");
    EXPECT_EQ(Tag(out, DCM_ImageType), "DERIVED\\SECONDARY\\AXIAL");
    EXPECT_EQ(Tag(out, DCM_SeriesNumber), "1003");
    EXPECT_EQ(Tag(out, DCM_SeriesDescription), "Chest 1mm cuimg morphology dilate:rect:3x3x3");
    EXPECT_EQ(Tag(out, DCM_MediaStorageSOPInstanceUID), Tag(out, DCM_SOPInstanceUID));
    sop_uids.insert(Tag(out, DCM_SOPInstanceUID));
    sop_uids.insert(Tag(in, DCM_SOPInstanceUID));
    if (k == 0) new_series = Tag(out, DCM_SeriesInstanceUID);
    EXPECT_EQ(Tag(out, DCM_SeriesInstanceUID), new_series);
  }
  EXPECT_NE(new_series, source_uid);
  EXPECT_EQ(sop_uids.size(), 2u * kSlices);  // all new, all distinct

  EXPECT_THAT(WriteVolumeFile(dir / "out", result.view(), input->spacing, *input, {}),
              StatusIs(absl::StatusCode::kAlreadyExists));
  EXPECT_THAT(WriteVolumeFile(dir / "other/", result.view(), input->spacing, VolumeFile{}, {}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
}

// --- NIfTI ---

// A qform (a rotation about z with an offset) and a different sform, as scanners' converters
// write them; both must come back as they were.
NiftiTransforms SomeTransforms(int version) {
  NiftiTransforms t;
  t.version = version;
  t.qform_code = 1;
  t.sform_code = 2;
  t.quatern_b = 0;
  t.quatern_c = 0;
  t.quatern_d = 0.25881904510252074;  // 30 degrees about z
  t.qoffset_x = -90.5;
  t.qoffset_y = 12.25;
  t.qoffset_z = -70;
  t.qfac = -1;
  t.srow = {{{0.9, -0.5, 0, -91}, {0.5, 0.9, 0, 13}, {0, 0, -2.5, -69}}};
  return t;
}

TEST(NiftiFile, RoundTripsTypesVersionsCompressionAndTransforms) {
  TempDir dir;
  for (PixelType type : kTypes) {
    for (int version : {1, 2}) {
      for (const char* ext : {".nii", ".nii.gz"}) {
        const Image image = RandomImage(type, Extent{7, 5, 4}, 3);
        const std::string path = dir / absl::StrCat("v", version, ext);
        const NiftiTransforms t = SomeTransforms(version);
        ASSERT_THAT(WriteNifti(path, image.view(), {0.9, 1.1, 2.5}, {}, &t), IsOk());
        absl::StatusOr<NiftiVolume> back = ReadNifti(path);
        ASSERT_THAT(back.status(), IsOk()) << path;
        EXPECT_TRUE(SamePixels(back->image, image)) << PixelTypeName(type) << " " << path;
        EXPECT_FLOAT_EQ(back->spacing.x_mm, 0.9);
        EXPECT_FLOAT_EQ(back->spacing.y_mm, 1.1);
        EXPECT_FLOAT_EQ(back->spacing.z_mm, 2.5);
        const NiftiTransforms& r = back->transforms;
        EXPECT_EQ(r.version, version);
        EXPECT_EQ(r.qform_code, 1);
        EXPECT_EQ(r.sform_code, 2);
        EXPECT_FLOAT_EQ(r.quatern_d, t.quatern_d);
        EXPECT_FLOAT_EQ(r.qoffset_x, t.qoffset_x);
        EXPECT_FLOAT_EQ(r.qoffset_z, t.qoffset_z);
        EXPECT_EQ(r.qfac, -1);
        for (int i = 0; i < 3; ++i) {
          for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(r.srow[i][j], t.srow[i][j]) << i << j;
        }
        // The sform places the volume (LPS): its first axis is (0.9, 0.5, 0) in RAS.
        ASSERT_TRUE(back->geometry.known);
        EXPECT_NEAR(back->geometry.axes[0][0], -0.9 / std::hypot(0.9, 0.5), 1e-6);
        EXPECT_NEAR(back->geometry.origin[0], 91, 1e-4);
        EXPECT_NEAR(back->geometry.origin[2], -69, 1e-4);
      }
    }
  }
}

// A NIfTI-1 file with a data type and scaling of its own, written by nifticlib directly.
void WriteScaledNifti(const std::string& path, int datatype, const void* data, double slope,
                      double inter) {
  const int64_t dims[8] = {3, 4, 3, 2, 1, 1, 1, 1};
  nifti_image* nim = nifti_make_new_nim(dims, datatype, 0);
  ASSERT_NE(nim, nullptr);
  nim->scl_slope = slope;
  nim->scl_inter = inter;
  ASSERT_EQ(nifti_set_filenames(nim, path.c_str(), 0, 1), 0);  // NIfTI-1 from the .nii name
  nim->data = const_cast<void*>(data);
  nifti_image_write(nim);
  nim->data = nullptr;
  nifti_image_free(nim);
}

TEST(NiftiFile, ScalingFollowsTheDicomRuleAndOtherTypesAreConvertedOrRefused) {
  TempDir dir;
  std::int16_t values[24];
  for (int i = 0; i < 24; ++i) values[i] = static_cast<std::int16_t>(i * 100 - 1000);
  // A fractional slope: f32, never rounded.
  WriteScaledNifti(dir / "pet.nii", DT_INT16, values, 0.001, 0);
  absl::StatusOr<NiftiVolume> pet = ReadNifti(dir / "pet.nii");
  ASSERT_THAT(pet.status(), IsOk());
  ASSERT_EQ(pet->image.type(), PixelType::kF32);
  for (int i = 0; i < 24; ++i) EXPECT_FLOAT_EQ(pet->image.As<float>()[i], values[i] * 0.001f);
  // Integer slope and intercept: i16, range-checked.
  WriteScaledNifti(dir / "ct.nii", DT_INT16, values, 2, -24);
  absl::StatusOr<NiftiVolume> ct = ReadNifti(dir / "ct.nii");
  ASSERT_THAT(ct.status(), IsOk());
  ASSERT_EQ(ct->image.type(), PixelType::kI16);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(ct->image.As<std::int16_t>()[i], values[i] * 2 - 24);
  WriteScaledNifti(dir / "big.nii", DT_INT16, values, 100, 0);
  EXPECT_THAT(ReadNifti(dir / "big.nii").status(),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("outside i16")));
  // int8 widens to i16; int32 is refused by name.
  std::int8_t small[24];
  for (int i = 0; i < 24; ++i) small[i] = static_cast<std::int8_t>(i * 10 - 120);
  WriteScaledNifti(dir / "i8.nii", DT_INT8, small, 0, 0);
  absl::StatusOr<NiftiVolume> i8 = ReadNifti(dir / "i8.nii");
  ASSERT_THAT(i8.status(), IsOk());
  ASSERT_EQ(i8->image.type(), PixelType::kI16);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(i8->image.As<std::int16_t>()[i], small[i]);
  std::int32_t wide[24] = {};
  WriteScaledNifti(dir / "i32.nii", DT_INT32, wide, 0, 0);
  EXPECT_THAT(ReadNifti(dir / "i32.nii").status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("INT32")));
  // A header claiming more voxels than the file holds; a file that is not NIfTI.
  std::vector<std::uint8_t> bytes;
  {
    std::ifstream in(dir / "ct.nii", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes.resize(bytes.size() - 10);
  ASSERT_THAT(WriteFileBytes(dir / "short.nii", bytes), IsOk());
  EXPECT_THAT(ReadNifti(dir / "short.nii").status(), StatusIs(absl::StatusCode::kDataLoss));
  ASSERT_THAT(WriteFileBytes(dir / "text.nii", {'h', 'i'}), IsOk());
  EXPECT_THAT(ReadNifti(dir / "text.nii").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a NIfTI")));
}

// DICOM in, NIfTI and NRRD out: the series' placement becomes the sform/qform and NRRD's space
// fields; the NIfTI reads back to the same placement.
TEST(NiftiFile, DicomGeometryBecomesNiftiTransformsAndNrrdSpace) {
  TempDir dir;
  WriteSeries(dir / "in", 3, "1.2.826.0.1.3680043.2.1125.1.9");
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(dir / "in");
  ASSERT_THAT(input.status(), IsOk());
  ASSERT_TRUE(input->geometry.known);
  ASSERT_THAT(WriteVolumeFile(dir / "ct.nii.gz", input->image.view(), input->spacing, *input, {}),
              IsOk());
  absl::StatusOr<VolumeFile> nifti = ReadVolumeFile(dir / "ct.nii.gz");
  ASSERT_THAT(nifti.status(), IsOk());
  EXPECT_TRUE(SamePixels(nifti->image, input->image));
  EXPECT_EQ(nifti->nifti->sform_code, 1);
  EXPECT_EQ(nifti->nifti->qform_code, 1);
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(nifti->geometry.origin[k], input->geometry.origin[k], 1e-4);
    for (int a = 0; a < 3; ++a) {
      EXPECT_NEAR(nifti->geometry.axes[a][k], input->geometry.axes[a][k], 1e-6);
    }
  }
  // Slices lie at 10 - 1.25 z: the volume starts at the lowest, 7.5, and the normal is +z.
  EXPECT_DOUBLE_EQ(input->geometry.origin[2], 7.5);
  EXPECT_NEAR(nifti->spacing.z_mm, 1.25, 1e-6);
  // A NIfTI source's transforms pass through a NIfTI output unchanged.
  ASSERT_THAT(WriteVolumeFile(dir / "again.nii", nifti->image.view(), nifti->spacing, *nifti, {}),
              IsOk());
  absl::StatusOr<NiftiVolume> again = ReadNifti(dir / "again.nii");
  ASSERT_THAT(again.status(), IsOk());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(again->transforms.srow[i][j], nifti->nifti->srow[i][j]);
  }

  ASSERT_THAT(WriteVolumeFile(dir / "ct.nrrd", input->image.view(), input->spacing, *input, {}),
              IsOk());
  std::ifstream in(dir / "ct.nrrd", std::ios::binary);
  std::string header((std::istreambuf_iterator<char>(in)), {});
  header = header.substr(0, header.find("\n\n"));
  EXPECT_THAT(header, HasSubstr("space: left-posterior-superior"));
  EXPECT_THAT(
      header,
      HasSubstr(
          "space directions: (0.59999999999999998,0,0) (0,0.69999999999999996,0) (0,0,1.25)"));
  EXPECT_THAT(header, HasSubstr("space origin: (-120.5,-99.25,7.5)"));
  absl::StatusOr<VolumeFile> nrrd = ReadVolumeFile(dir / "ct.nrrd");
  ASSERT_THAT(nrrd.status(), IsOk());
  EXPECT_TRUE(nrrd->geometry.known);
  EXPECT_DOUBLE_EQ(nrrd->spacing.z_mm, 1.25);
  EXPECT_DOUBLE_EQ(nrrd->geometry.origin[1], -99.25);
}

TEST(VolumeFile, UnknownExtensionsListEveryFormat) {
  TempDir dir;
  const Image image = RandomImage(PixelType::kU8, Extent{3, 3, 1}, 1);
  EXPECT_THAT(WriteVolumeFile(dir / "x.bmp", image.view(), {}, VolumeFile{}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(".npy"), HasSubstr(".nrrd"), HasSubstr(".nii"))));
  ASSERT_THAT(WriteFileBytes(dir / "x.bmp", {'B', 'M'}), IsOk());
  EXPECT_THAT(ReadVolumeFile(dir / "x.bmp").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(".nii.gz")));
}

}  // namespace
}  // namespace cuimg
