// The DICOM reader contract (docs/design.md) on files made here with DCMTK: each pixel module
// cuimg does not read is refused naming its attribute, with a code the CLI exits 3 for and the
// reason cuimg.dicom gives; a single slice may lack its geometry, a series of several may not;
// files that are not DICOM Part 10 are skipped; and the writer drops sequences holding pixel data
// (issue 46: a JPEG 2000 icon left a slice cut short).
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dctk.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/connection.h"
#include "client/io/dicom_series.h"
#include "client/io/volume_file.h"
#include "cuimg/common/error.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::cuimg::testing::TempDir;
using ::testing::HasSubstr;

constexpr int kRows = 4, kColumns = 3;

// A 4x3 CT slice at z, unsigned 12-bit, slope 1, intercept -1024, placed axially; `edit` changes
// it before it is saved (`meta` false: a bare dataset without preamble and meta header).
void WriteSlice(const std::string& path, double z,
                const std::function<void(DcmDataset*)>& edit = nullptr, bool meta = true) {
  DcmFileFormat format;
  DcmDataset* ds = format.getDataset();
  char uid[100];
  ds->putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
  ds->putAndInsertString(DCM_SOPInstanceUID, dcmGenerateUniqueIdentifier(uid));
  ds->putAndInsertString(DCM_SeriesInstanceUID, "1.2.826.0.1.3680043.2.1125.9.1");
  ds->putAndInsertString(DCM_Modality, "CT");
  ds->putAndInsertString(DCM_ImagePositionPatient, absl::StrCat("0\\0\\", z).c_str());
  ds->putAndInsertString(DCM_ImageOrientationPatient, "1\\0\\0\\0\\1\\0");
  ds->putAndInsertString(DCM_PixelSpacing, "0.5\\0.25");
  ds->putAndInsertUint16(DCM_Rows, kRows);
  ds->putAndInsertUint16(DCM_Columns, kColumns);
  ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
  ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  ds->putAndInsertUint16(DCM_BitsAllocated, 16);
  ds->putAndInsertUint16(DCM_BitsStored, 12);
  ds->putAndInsertUint16(DCM_HighBit, 11);
  ds->putAndInsertUint16(DCM_PixelRepresentation, 0);
  ds->putAndInsertString(DCM_RescaleSlope, "1");
  ds->putAndInsertString(DCM_RescaleIntercept, "-1024");
  std::vector<Uint16> stored(kRows * kColumns);
  for (std::size_t i = 0; i < stored.size(); ++i) stored[i] = static_cast<Uint16>(1000 + 7 * i);
  ds->putAndInsertUint16Array(DCM_PixelData, stored.data(), stored.size());
  if (edit) edit(ds);
  ASSERT_TRUE(format
                  .saveFile(path.c_str(), EXS_LittleEndianExplicit, EET_ExplicitLength,
                            EGL_recalcGL, EPD_noChange, 0, 0, meta ? EWM_fileformat : EWM_dataset)
                  .good());
}

TEST(DicomContract, RefusesEachPixelModuleItDoesNotReadNamingTheAttribute) {
  struct Case {
    const char* keyword;
    ErrorReason reason;
    std::function<void(DcmDataset*)> edit;
  };
  const Case cases[] = {
      {"SamplesPerPixel", ErrorReason::kUnsupportedPixelType,
       [](DcmDataset* ds) { ds->putAndInsertUint16(DCM_SamplesPerPixel, 3); }},
      {"PhotometricInterpretation", ErrorReason::kUnsupportedPixelType,
       [](DcmDataset* ds) {
         ds->putAndInsertString(DCM_PhotometricInterpretation, "PALETTE COLOR");
       }},
      {"BitsAllocated", ErrorReason::kUnsupportedPixelType,
       [](DcmDataset* ds) { ds->putAndInsertUint16(DCM_BitsAllocated, 32); }},
      {"BitsStored", ErrorReason::kValueOutOfRange,
       [](DcmDataset* ds) { ds->putAndInsertUint16(DCM_BitsStored, 17); }},
      {"HighBit", ErrorReason::kUnsupportedPixelType,
       [](DcmDataset* ds) { ds->putAndInsertUint16(DCM_HighBit, 15); }},
      {"PixelRepresentation", ErrorReason::kFieldRequired,
       [](DcmDataset* ds) { ds->findAndDeleteElement(DCM_PixelRepresentation); }},
      {"NumberOfFrames", ErrorReason::kValueOutOfRange,
       [](DcmDataset* ds) { ds->putAndInsertString(DCM_NumberOfFrames, "0"); }},
      {"ModalityLUTSequence", ErrorReason::kUnsupportedPixelType,
       [](DcmDataset* ds) {
         DcmItem* item = nullptr;
         ds->findOrCreateSequenceItem(DCM_ModalityLUTSequence, item, 0);
         item->putAndInsertString(DCM_ModalityLUTType, "HU");
       }},
      {"RescaleSlope", ErrorReason::kValueOutOfRange,
       [](DcmDataset* ds) { ds->putAndInsertString(DCM_RescaleSlope, "0"); }},
      {"PixelData", ErrorReason::kDataSizeMismatch,
       [](DcmDataset* ds) { ds->putAndInsertUint16(DCM_Rows, 400); }},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteSlice(dir / "a.dcm", 0, c.edit);

    const absl::Status status = ReadDicomSeries(dir / "a.dcm").status();

    EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("a.dcm: ", c.keyword, ": "))) << c.keyword;
    EXPECT_EQ(ErrorReasonOf(status), ErrorReasonName(c.reason)) << c.keyword;
    EXPECT_EQ(ExitCodeForReadError(status), 3) << c.keyword << ": " << status;
  }
}

TEST(DicomContract, ReadsOneSliceWithoutGeometryUnplacedButNotASeriesOfSeveral) {
  TempDir dir;
  fs::create_directories(dir / "one");
  WriteSlice(dir / "one/sc.dcm", 0, [](DcmDataset* ds) {
    ds->findAndDeleteElement(DCM_ImagePositionPatient);
    ds->findAndDeleteElement(DCM_ImageOrientationPatient);
    ds->findAndDeleteElement(DCM_PixelSpacing);
  });

  absl::StatusOr<DicomSeries> folder = ReadDicomSeries(dir / "one");
  absl::StatusOr<DicomSeries> file = ReadDicomSeries(dir / "one/sc.dcm");

  ASSERT_THAT(folder.status(), IsOk());
  ASSERT_THAT(file.status(), IsOk());
  EXPECT_FALSE(folder->geometry.known);
  EXPECT_FALSE(folder->spacing.Known());
  EXPECT_EQ(folder->volume.extent(), (Extent{kColumns, kRows, 1}));
  EXPECT_EQ(folder->volume.storage(), file->volume.storage());
  EXPECT_EQ(folder->volume.As<std::int16_t>()[1], 1007 - 1024);

  fs::create_directories(dir / "two");
  WriteSlice(dir / "two/a.dcm", 0);
  WriteSlice(dir / "two/b.dcm", 2,
             [](DcmDataset* ds) { ds->findAndDeleteElement(DCM_ImagePositionPatient); });
  EXPECT_THAT(ReadDicomSeries(dir / "two").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("b.dcm: ImagePositionPatient: missing for frame 1")));
}

TEST(DicomContract, SkipsFilesThatAreNotDicomPart10AndSaysWhenNoImageIsLeft) {
  TempDir dir;
  fs::create_directories(dir / "in");
  WriteSlice(dir / "in/bare.dcm", 0, nullptr, /*meta=*/false);  // no preamble, no DICM
  WriteSlice(dir / "in/report.dcm", 0, [](DcmDataset* ds) { ds->findAndDeleteElement(DCM_Rows); });

  EXPECT_THAT(ReadDicomSeries(dir / "in").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no DICOM image files")));

  WriteSlice(dir / "in/image.dcm", 0);
  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "in");
  ASSERT_THAT(series.status(), IsOk());
  EXPECT_EQ(series->files, std::vector<std::string>{dir / "in/image.dcm"});
}

TEST(DicomWriter, DropsSequencesHoldingPixelDataAndWritesFilesDcmtkReadsWhole) {
  TempDir dir;
  fs::create_directories(dir / "in");
  WriteSlice(dir / "in/a.dcm", 0, [](DcmDataset* ds) {
    DcmItem* icon = nullptr;
    ds->findOrCreateSequenceItem(DCM_IconImageSequence, icon, 0);
    icon->putAndInsertUint16(DCM_Rows, 2);
    icon->putAndInsertUint16(DCM_Columns, 2);
    const Uint8 pixels[4] = {1, 2, 3, 4};
    icon->putAndInsertUint8Array(DCM_PixelData, pixels, 4);
    DcmItem* reference = nullptr;
    ds->findOrCreateSequenceItem(DCM_ReferencedImageSequence, reference, 0);
    reference->putAndInsertString(DCM_ReferencedSOPInstanceUID, "1.2.3.4");
  });
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(dir / "in");
  ASSERT_THAT(input.status(), IsOk());

  ASSERT_THAT(WriteVolumeFile(dir / "out", input->image.view(), input->spacing, *input, {}),
              IsOk());

  DcmFileFormat written;
  ASSERT_TRUE(written.loadFile((dir / "out/slice_0000.dcm").c_str()).good());
  DcmDataset* ds = written.getDataset();
  EXPECT_FALSE(ds->tagExists(DCM_IconImageSequence));
  EXPECT_TRUE(ds->tagExists(DCM_ReferencedImageSequence));  // no pixels: kept
  EXPECT_TRUE(ds->tagExists(DCM_PixelData));
  absl::StatusOr<DicomSeries> back = ReadDicomSeries(dir / "out");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->volume.storage(), input->image.storage());
}

}  // namespace
}  // namespace cuimg
