// Small DICOM CT slices written with DCMTK for the client's tests, each element optional, so that
// a test can make what scanners, secondary captures and NM images write.
#ifndef CUIMG_TESTS_CLIENT_DICOM_TEST_FILES_H_
#define CUIMG_TESTS_CLIENT_DICOM_TEST_FILES_H_

#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dctk.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace cuimg::testing {

struct TestSlice {
  std::string file;
  std::string series_uid = "1.2.826.0.1.3680043.2.1125.9.1";
  int rows = 6;
  int columns = 5;
  double z = 0;
  // Left out of the file when false.
  bool position = true;     // ImagePositionPatient
  bool orientation = true;  // ImageOrientationPatient
  bool spacing = true;      // PixelSpacing 0.7 (rows) \ 0.6 (columns)
  double slope = 1;
  double intercept = -1024;
};

// Stored values of slice `seed`: rows * columns unsigned 12-bit values.
inline std::vector<std::uint16_t> TestSliceValues(const TestSlice& s, int seed) {
  std::vector<std::uint16_t> v(static_cast<std::size_t>(s.rows) * s.columns);
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<std::uint16_t>((seed * 97 + i * 31) % 4096);
  }
  return v;
}

inline void WriteTestSlice(const TestSlice& s, int seed) {
  DcmFileFormat format;
  DcmDataset* ds = format.getDataset();
  char uid[100];
  ds->putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
  ds->putAndInsertString(DCM_SOPInstanceUID,
                         dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT));
  ds->putAndInsertString(DCM_StudyInstanceUID, "1.2.826.0.1.3680043.2.1125.9.2");
  ds->putAndInsertString(DCM_SeriesInstanceUID, s.series_uid.c_str());
  ds->putAndInsertString(DCM_Modality, "CT");
  ds->putAndInsertString(DCM_SeriesNumber, "3");
  if (s.position) {
    ds->putAndInsertString(DCM_ImagePositionPatient, absl::StrFormat("-12\\-9\\%g", s.z).c_str());
  }
  if (s.orientation) ds->putAndInsertString(DCM_ImageOrientationPatient, "1\\0\\0\\0\\1\\0");
  if (s.spacing) ds->putAndInsertString(DCM_PixelSpacing, "0.7\\0.6");
  ds->putAndInsertUint16(DCM_Rows, static_cast<Uint16>(s.rows));
  ds->putAndInsertUint16(DCM_Columns, static_cast<Uint16>(s.columns));
  ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
  ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  ds->putAndInsertUint16(DCM_BitsAllocated, 16);
  ds->putAndInsertUint16(DCM_BitsStored, 12);
  ds->putAndInsertUint16(DCM_HighBit, 11);
  ds->putAndInsertUint16(DCM_PixelRepresentation, 0);
  ds->putAndInsertString(DCM_RescaleSlope, absl::StrCat(s.slope).c_str());
  ds->putAndInsertString(DCM_RescaleIntercept, absl::StrCat(s.intercept).c_str());
  const std::vector<std::uint16_t> stored = TestSliceValues(s, seed);
  ds->putAndInsertUint16Array(DCM_PixelData, stored.data(), stored.size());
  ASSERT_TRUE(format.saveFile(s.file.c_str(), EXS_LittleEndianExplicit).good()) << s.file;
}

// `slices` files slice_K.dcm in `dir`, 1.5 mm apart, from `like` (its file and z ignored).
inline void WriteTestSeries(const std::string& dir, int slices, TestSlice like = {}) {
  std::filesystem::create_directories(dir);
  for (int z = 0; z < slices; ++z) {
    like.file = absl::StrFormat("%s/slice_%d.dcm", dir, z);
    like.z = 1.5 * z;
    WriteTestSlice(like, z);
  }
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_CLIENT_DICOM_TEST_FILES_H_
