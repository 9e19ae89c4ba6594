// DICOM series in every transfer syntax a PACS sends, read by ReadDicomSeries (GDCM decodes) and
// compared bit for bit with an independent decoder's output: DCMTK's dcmdjpeg, dcmdjpls, dcmdrle
// and dcmconv, and OpenJPEG's opj_decompress on the JPEG 2000 codestream itself. The compressed
// files are made here by the real tools (dcmcjpeg, dcmcjpls, dcmcrle, dcmconv +td, gdcmconv
// --j2k). Also: enhanced multi-frame objects, fractional rescale (PET- and MR-like series read as
// f32 and written back without loss), the derived series' source references, --uid_root and
// --series_uid.
#include <dcmtk/config/osconfig.h>
#include <dcmtk/dcmdata/dcpixel.h>
#include <dcmtk/dcmdata/dcpixseq.h>
#include <dcmtk/dcmdata/dcpxitem.h>
#include <dcmtk/dcmdata/dctk.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/io/dicom_series.h"
#include "client/io/volume_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

using ::cuimg::testing::TempDir;

constexpr int kRows = 64, kColumns = 64, kSlices = 4;

struct SliceSpec {
  int bits_allocated = 16;
  int bits_stored = 12;
  bool is_signed = false;
  std::string slope = "1";
  std::string intercept = "-1024";
  std::string series_uid = "1.2.826.0.1.3680043.2.1125.7.1";
};

// A smooth image with an edge and noise-like texture, so every codec has work to do; values fit
// BitsStored (signed: around zero).
std::vector<std::uint16_t> SliceValues(const SliceSpec& spec, int z) {
  std::vector<std::uint16_t> v(kRows * kColumns);
  const int range = 1 << spec.bits_stored;
  for (int y = 0; y < kRows; ++y) {
    for (int x = 0; x < kColumns; ++x) {
      const int texture = (x * 37 + y * 91 + z * 53) % 97;
      int value = (x + y < 64 ? range / 5 : range / 2) + texture * (range / 512 + 1) + z * 3;
      value %= range;
      if (spec.is_signed) value -= range / 2;
      v[y * kColumns + x] = static_cast<std::uint16_t>(value & (range - 1));
    }
  }
  return v;
}

void WriteSlice(const std::string& file, const SliceSpec& spec, int z,
                const std::vector<std::uint16_t>& stored) {
  DcmFileFormat format;
  DcmDataset* ds = format.getDataset();
  char uid[100];
  ds->putAndInsertString(DCM_SOPClassUID, UID_CTImageStorage);
  ds->putAndInsertString(DCM_SOPInstanceUID,
                         dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT));
  ds->putAndInsertString(DCM_StudyInstanceUID, "1.2.826.0.1.3680043.2.1125.7.9");
  ds->putAndInsertString(DCM_SeriesInstanceUID, spec.series_uid.c_str());
  ds->putAndInsertString(DCM_PatientName, "Doe^Jane");
  ds->putAndInsertString(DCM_Modality, "CT");
  ds->putAndInsertString(DCM_SeriesNumber, "5");
  ds->putAndInsertString(DCM_ImagePositionPatient,
                         absl::StrFormat("-10\\-20\\%g", 30 - 2.5 * z).c_str());
  ds->putAndInsertString(DCM_ImageOrientationPatient, "1\\0\\0\\0\\1\\0");
  ds->putAndInsertString(DCM_PixelSpacing, "0.8\\0.8");
  ds->putAndInsertUint16(DCM_Rows, kRows);
  ds->putAndInsertUint16(DCM_Columns, kColumns);
  ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
  ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  ds->putAndInsertUint16(DCM_BitsAllocated, static_cast<Uint16>(spec.bits_allocated));
  ds->putAndInsertUint16(DCM_BitsStored, static_cast<Uint16>(spec.bits_stored));
  ds->putAndInsertUint16(DCM_HighBit, static_cast<Uint16>(spec.bits_stored - 1));
  ds->putAndInsertUint16(DCM_PixelRepresentation, spec.is_signed ? 1 : 0);
  ds->putAndInsertString(DCM_RescaleSlope, spec.slope.c_str());
  ds->putAndInsertString(DCM_RescaleIntercept, spec.intercept.c_str());
  if (spec.bits_allocated == 8) {
    std::vector<Uint8> bytes(stored.begin(), stored.end());
    ds->putAndInsertUint8Array(DCM_PixelData, bytes.data(), bytes.size());
  } else {
    ds->putAndInsertUint16Array(DCM_PixelData, stored.data(), stored.size());
  }
  ASSERT_TRUE(format.saveFile(file.c_str(), EXS_LittleEndianExplicit).good());
}

void WriteSeries(const std::string& dir, const SliceSpec& spec) {
  fs::create_directories(dir);
  for (int z = 0; z < kSlices; ++z) {
    WriteSlice(absl::StrFormat("%s/s%d.dcm", dir, z), spec, z, SliceValues(spec, z));
  }
}

// Runs `command` with %IN and %OUT replaced for every file of `from` into `to`.
void ForEachFile(const std::string& from, const std::string& to, const std::string& command) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    std::string c = command;
    const std::string in = entry.path().string();
    const std::string out = (fs::path(to) / entry.path().filename()).string();
    c.replace(c.find("%IN"), 3, in);
    c.replace(c.find("%OUT"), 4, out);
    ASSERT_EQ(std::system((c + " > /dev/null 2>&1").c_str()), 0) << c;
  }
}

std::string TransferSyntax(const std::string& file) {
  DcmFileFormat format;
  EXPECT_TRUE(format.loadFile(file.c_str()).good());
  OFString uid;
  format.getMetaInfo()->findAndGetOFString(DCM_TransferSyntaxUID, uid);
  return uid.c_str();
}

// A native file's stored values as DCMTK reads them (no GDCM involved).
std::vector<std::uint16_t> NativeStored(const std::string& file) {
  DcmFileFormat format;
  EXPECT_TRUE(format.loadFile(file.c_str()).good()) << file;
  DcmDataset* ds = format.getDataset();
  EXPECT_FALSE(DcmXfer(ds->getOriginalXfer()).isEncapsulated()) << file;
  Uint16 bits_allocated = 16;
  ds->findAndGetUint16(DCM_BitsAllocated, bits_allocated);
  if (bits_allocated == 8) {
    const Uint8* p = nullptr;
    unsigned long n = 0;
    EXPECT_TRUE(ds->findAndGetUint8Array(DCM_PixelData, p, &n).good());
    return std::vector<std::uint16_t>(p, p + n);
  }
  const Uint16* p = nullptr;
  unsigned long n = 0;
  EXPECT_TRUE(ds->findAndGetUint16Array(DCM_PixelData, p, &n).good());
  return std::vector<std::uint16_t>(p, p + n);
}

std::string Tag(const std::string& file, const DcmTagKey& tag) {
  DcmFileFormat format;
  EXPECT_TRUE(format.loadFile(file.c_str()).good());
  OFString value;
  format.getDataset()->findAndGetOFStringArray(tag, value, OFTrue);  // searches sequences
  return value.c_str();
}

// Modality value of one stored value, as the DICOM standard defines it.
double Modality(std::uint16_t raw, const SliceSpec& spec, double slope, double intercept) {
  const int mask = (1 << spec.bits_stored) - 1;
  int v = raw & mask;
  if (spec.is_signed && (v & (1 << (spec.bits_stored - 1)))) v -= mask + 1;
  return v * slope + intercept;
}

// The JPEG 2000 codestream of a one-frame file, decoded by opj_decompress to little-endian raw.
std::vector<std::uint16_t> OpenJpegDecode(const std::string& file, const std::string& work) {
  DcmFileFormat format;
  EXPECT_TRUE(format.loadFile(file.c_str()).good());
  DcmElement* element = nullptr;
  EXPECT_TRUE(format.getDataset()->findAndGetElement(DCM_PixelData, element).good());
  DcmPixelSequence* sequence = nullptr;
  EXPECT_TRUE(
      static_cast<DcmPixelData*>(element)
          ->getEncapsulatedRepresentation(format.getDataset()->getOriginalXfer(), nullptr, sequence)
          .good());
  DcmPixelItem* item = nullptr;
  EXPECT_TRUE(sequence != nullptr && sequence->getItem(item, 1).good());  // 0: offset table
  Uint8* bytes = nullptr;
  EXPECT_TRUE(item->getUint8Array(bytes).good());
  const std::string j2k = work + ".j2k", raw = work + ".rawl";
  std::ofstream(j2k, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes), item->getLength());
  EXPECT_EQ(std::system(
                absl::StrCat("opj_decompress -i ", j2k, " -o ", raw, " > /dev/null 2>&1").c_str()),
            0);
  std::ifstream in(raw, std::ios::binary);
  std::vector<std::uint16_t> out(kRows * kColumns);
  in.read(reinterpret_cast<char*>(out.data()), out.size() * 2);
  EXPECT_EQ(in.gcount(), static_cast<std::streamsize>(out.size() * 2)) << raw;
  return out;
}

struct Codec {
  const char* name;
  const char* compress;    // %IN -> %OUT
  const char* decompress;  // the independent decoder, %IN -> %OUT; "opj" for JPEG 2000
  const char* transfer_syntax;
  SliceSpec spec;
  bool lossless;
};

const Codec kCodecs[] = {
    {"jpeg_lossless_sv1",
     "dcmcjpeg +e1 %IN %OUT",
     "dcmdjpeg %IN %OUT",
     "1.2.840.10008.1.2.4.70",
     {},
     true},
    {"jpeg_lossless_p14",
     "dcmcjpeg +el %IN %OUT",
     "dcmdjpeg %IN %OUT",
     "1.2.840.10008.1.2.4.57",
     {16, 16, true, "1", "0"},
     true},
    {"jpeg_baseline",
     "dcmcjpeg +eb %IN %OUT",
     "dcmdjpeg %IN %OUT",
     "1.2.840.10008.1.2.4.50",
     {8, 8, false, "1", "0"},
     false},
    {"jpeg_extended",
     "dcmcjpeg +ee %IN %OUT",
     "dcmdjpeg %IN %OUT",
     "1.2.840.10008.1.2.4.51",
     {},
     false},
    {"jpegls_lossless",
     "dcmcjpls +el %IN %OUT",
     "dcmdjpls %IN %OUT",
     "1.2.840.10008.1.2.4.80",
     {},
     true},
    {"jpegls_near_lossless",
     "dcmcjpls +en +md 3 %IN %OUT",
     "dcmdjpls %IN %OUT",
     "1.2.840.10008.1.2.4.81",
     {},
     false},
    {"rle",
     "dcmcrle %IN %OUT",
     "dcmdrle %IN %OUT",
     "1.2.840.10008.1.2.5",
     {16, 16, true, "1", "0"},
     true},
    {"rle_8bit",
     "dcmcrle %IN %OUT",
     "dcmdrle %IN %OUT",
     "1.2.840.10008.1.2.5",
     {8, 8, false, "1", "0"},
     true},
    {"deflated",
     "dcmconv +td %IN %OUT",
     "dcmconv +te %IN %OUT",
     "1.2.840.10008.1.2.1.99",
     {},
     true},
    {"big_endian", "dcmconv +tb %IN %OUT", "dcmconv +te %IN %OUT", "1.2.840.10008.1.2.2", {}, true},
    {"j2k_lossless", "gdcmconv --j2k %IN %OUT", "opj", "1.2.840.10008.1.2.4.90", {}, true},
    {"j2k_lossy",
     "gdcmconv --j2k --lossy -q 30 %IN %OUT",
     "opj",
     "1.2.840.10008.1.2.4.91",
     {},
     false},
};

class DicomCodecs : public ::testing::TestWithParam<Codec> {};

TEST_P(DicomCodecs, DecodeBitForBitLikeTheIndependentDecoder) {
  const Codec& codec = GetParam();
  TempDir dir;
  WriteSeries(dir / "native", codec.spec);
  ForEachFile(dir / "native", dir / "compressed", codec.compress);
  ASSERT_EQ(TransferSyntax(dir / "compressed/s0.dcm"), codec.transfer_syntax);

  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "compressed");
  ASSERT_THAT(series.status(), IsOk());
  ASSERT_EQ(series->volume.extent(), (Extent{kColumns, kRows, kSlices}));

  const double intercept = std::stod(codec.spec.intercept);
  bool lossy_changed_something = false;
  for (int k = 0; k < kSlices; ++k) {
    const std::string name = fs::path(series->files[k]).filename().string();
    const int z = kSlices - 1 - k;  // positions descend with z
    ASSERT_EQ(name, absl::StrFormat("s%d.dcm", z));
    std::vector<std::uint16_t> reference;
    if (std::string(codec.decompress) == "opj") {
      reference = OpenJpegDecode(series->files[k], dir / name);
    } else {
      if (k == 0) ForEachFile(dir / "compressed", dir / "reference", codec.decompress);
      reference = NativeStored(dir / ("reference/" + name));
    }
    ASSERT_EQ(reference.size(), std::size_t{kRows * kColumns});
    // Lossy JPEG encoders may map the values onto the codec's range and rewrite the rescale: the
    // compressed file's own header says how its stored values become modality values.
    const double file_slope = std::stod(Tag(series->files[k], DCM_RescaleSlope));
    const double file_intercept = std::stod(Tag(series->files[k], DCM_RescaleIntercept));
    ASSERT_EQ(series->volume.type(), file_slope == std::nearbyint(file_slope) &&
                                             file_intercept == std::nearbyint(file_intercept)
                                         ? PixelType::kI16
                                         : PixelType::kF32);
    const std::vector<std::uint16_t> original = SliceValues(codec.spec, z);
    for (int i = 0; i < kRows * kColumns; ++i) {
      const std::size_t at = k * kRows * kColumns + i;
      const double got = series->volume.type() == PixelType::kI16
                             ? series->volume.As<std::int16_t>()[at]
                             : series->volume.As<float>()[at];
      const double want = Modality(reference[i], codec.spec, file_slope, file_intercept);
      ASSERT_EQ(got, series->volume.type() == PixelType::kI16 ? want : static_cast<float>(want))
          << codec.name << " slice " << k << " pixel " << i;
      const double source = Modality(original[i], codec.spec, 1, intercept);
      if (codec.lossless) {
        ASSERT_EQ(want, source) << "the oracle is lossy";
      } else {
        lossy_changed_something |= want != source;
      }
    }
  }
  // A lossy case that reproduced the input would not show that lossy streams are decoded.
  EXPECT_TRUE(codec.lossless || lossy_changed_something) << codec.name;
}

INSTANTIATE_TEST_SUITE_P(EveryTransferSyntax, DicomCodecs, ::testing::ValuesIn(kCodecs),
                         [](const auto& info) { return std::string(info.param.name); });

// An enhanced CT object: 4 frames, positions in the per-frame functional groups (in reverse
// order), spacing, orientation and a fractional rescale in the shared ones, JPEG-LS compressed.
TEST(DicomMultiFrame, ReadsEnhancedFramesInPositionOrderWithSharedRescale) {
  TempDir dir;
  fs::create_directories(dir / "native");
  const SliceSpec spec;
  DcmFileFormat format;
  DcmDataset* ds = format.getDataset();
  char uid[100];
  ds->putAndInsertString(DCM_SOPClassUID, UID_EnhancedCTImageStorage);
  ds->putAndInsertString(DCM_SOPInstanceUID,
                         dcmGenerateUniqueIdentifier(uid, SITE_INSTANCE_UID_ROOT));
  ds->putAndInsertString(DCM_SeriesInstanceUID, spec.series_uid.c_str());
  ds->putAndInsertString(DCM_NumberOfFrames, absl::StrCat(kSlices).c_str());
  ds->putAndInsertUint16(DCM_Rows, kRows);
  ds->putAndInsertUint16(DCM_Columns, kColumns);
  ds->putAndInsertUint16(DCM_SamplesPerPixel, 1);
  ds->putAndInsertString(DCM_PhotometricInterpretation, "MONOCHROME2");
  ds->putAndInsertUint16(DCM_BitsAllocated, 16);
  ds->putAndInsertUint16(DCM_BitsStored, 12);
  ds->putAndInsertUint16(DCM_HighBit, 11);
  ds->putAndInsertUint16(DCM_PixelRepresentation, 0);
  DcmItem* shared = nullptr;
  DcmItem* item = nullptr;
  ASSERT_TRUE(ds->findOrCreateSequenceItem(DCM_SharedFunctionalGroupsSequence, shared, 0).good());
  ASSERT_TRUE(shared->findOrCreateSequenceItem(DCM_PixelMeasuresSequence, item, 0).good());
  item->putAndInsertString(DCM_PixelSpacing, "0.5\\0.7");
  ASSERT_TRUE(shared->findOrCreateSequenceItem(DCM_PlaneOrientationSequence, item, 0).good());
  item->putAndInsertString(DCM_ImageOrientationPatient, "1\\0\\0\\0\\1\\0");
  ASSERT_TRUE(
      shared->findOrCreateSequenceItem(DCM_PixelValueTransformationSequence, item, 0).good());
  item->putAndInsertString(DCM_RescaleSlope, "0.25");
  item->putAndInsertString(DCM_RescaleIntercept, "-100");
  std::vector<std::uint16_t> all;
  for (int f = 0; f < kSlices; ++f) {
    DcmItem* frame = nullptr;
    ASSERT_TRUE(
        ds->findOrCreateSequenceItem(DCM_PerFrameFunctionalGroupsSequence, frame, f).good());
    ASSERT_TRUE(frame->findOrCreateSequenceItem(DCM_PlanePositionSequence, item, 0).good());
    item->putAndInsertString(DCM_ImagePositionPatient,
                             absl::StrFormat("0\\0\\%d", 10 - 3 * f).c_str());
    const std::vector<std::uint16_t> v = SliceValues(spec, f);
    all.insert(all.end(), v.begin(), v.end());
  }
  ds->putAndInsertUint16Array(DCM_PixelData, all.data(), all.size());
  ASSERT_TRUE(format.saveFile((dir / "native/ct.dcm").c_str(), EXS_LittleEndianExplicit).good());
  ForEachFile(dir / "native", dir / "jls", "dcmcjpls %IN %OUT");

  for (const std::string sub : {"native", "jls"}) {
    absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / sub);
    ASSERT_THAT(series.status(), IsOk()) << sub;
    EXPECT_EQ(series->volume.extent(), (Extent{kColumns, kRows, kSlices}));
    EXPECT_EQ(series->volume.type(), PixelType::kF32);  // slope 0.25
    EXPECT_DOUBLE_EQ(series->spacing.x_mm, 0.7);
    EXPECT_DOUBLE_EQ(series->spacing.y_mm, 0.5);
    EXPECT_DOUBLE_EQ(series->spacing.z_mm, 3);
    EXPECT_TRUE(series->multi_frame);
    for (int k = 0; k < kSlices; ++k) {
      const int f = kSlices - 1 - k;
      EXPECT_EQ(series->frames[k], f);
      const std::vector<std::uint16_t> v = SliceValues(spec, f);
      for (int i = 0; i < kRows * kColumns; ++i) {
        ASSERT_EQ(series->volume.As<float>()[k * kRows * kColumns + i], v[i] * 0.25f - 100)
            << sub << " slice " << k << " pixel " << i;
      }
    }
    EXPECT_THAT(WriteDicomSeries(*series, series->volume.view(), dir / ("out_" + sub), {}).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("multi-frame")));
  }
}

// PET-like: unsigned 16-bit, slope 0.001 (a different one per slice, as PET scanners write),
// values 0 to about 1.757. Rounded to integers they would be {0, 1, 2}.
TEST(DicomRescale, FractionalSlopeIsReadAsF32AndWrittenBackWithoutLoss) {
  TempDir dir;
  fs::create_directories(dir / "pet");
  SliceSpec spec{16, 16, false, "", "0", "1.2.826.0.1.3680043.2.1125.7.2"};
  std::vector<std::vector<std::uint16_t>> stored;
  for (int z = 0; z < kSlices; ++z) {
    spec.slope = absl::StrFormat("0.00%d", z + 1);  // 0.001 .. 0.004
    std::vector<std::uint16_t> v(kRows * kColumns);
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<std::uint16_t>((i * 7 + z) % 1758);
    stored.push_back(v);
    WriteSlice(absl::StrFormat("%s/p%d.dcm", dir / "pet", z), spec, z, v);
  }
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(dir / "pet");
  ASSERT_THAT(input.status(), IsOk());
  ASSERT_EQ(input->image.type(), PixelType::kF32);
  std::set<float> distinct;
  for (int k = 0; k < kSlices; ++k) {
    const int z = kSlices - 1 - k;
    for (int i = 0; i < kRows * kColumns; ++i) {
      const float got = input->image.As<float>()[k * kRows * kColumns + i];
      ASSERT_EQ(got, static_cast<float>(stored[z][i] * (0.001 * (z + 1))));
      distinct.insert(got);
    }
  }
  EXPECT_GT(distinct.size(), 1758u);

  // The identity result keeps each slice's slope and gets the stored values back exactly.
  ASSERT_THAT(WriteVolumeFile(dir / "same", input->image.view(), input->spacing, *input, {}),
              IsOk());
  // A result beyond the source's 16 bits at its step gets a slope of its own.
  Image doubled = input->image;
  for (std::int64_t i = 0; i < doubled.extent().Pixels(); ++i) doubled.As<float>()[i] *= 40;
  ASSERT_THAT(WriteVolumeFile(dir / "doubled", doubled.view(), input->spacing, *input, {}), IsOk());
  absl::StatusOr<DicomSeries> same = ReadDicomSeries(dir / "same");
  absl::StatusOr<DicomSeries> scaled = ReadDicomSeries(dir / "doubled");
  ASSERT_THAT(same.status(), IsOk());
  ASSERT_THAT(scaled.status(), IsOk());
  for (int k = 0; k < kSlices; ++k) {
    const int z = kSlices - 1 - k;
    EXPECT_EQ(Tag(same->files[k], DCM_RescaleSlope), absl::StrFormat("0.00%d", z + 1));
    const std::vector<std::uint16_t> back = NativeStored(same->files[k]);
    for (int i = 0; i < kRows * kColumns; ++i) ASSERT_EQ(back[i], stored[z][i]);
    const double step = std::stod(Tag(scaled->files[k], DCM_RescaleSlope));
    EXPECT_LE(step, 1758 * 0.001 * (z + 1) * 40 / 32767 * 1.0001);
    for (int i = 0; i < kRows * kColumns; ++i) {
      const std::size_t at = k * kRows * kColumns + i;
      // Half a step, and float's own rounding of values near 300.
      ASSERT_NEAR(scaled->volume.As<float>()[at], doubled.As<float>()[at], step / 2 + 1e-4);
    }
  }
  EXPECT_TRUE(same->volume.storage() == input->image.storage());
}

// MR-like: signed 12-bit stored values, slope 1.5, intercept -0.25: f32, never rounded.
TEST(DicomRescale, FractionalInterceptIsF32Too) {
  TempDir dir;
  const SliceSpec spec{16, 12, true, "1.5", "-0.25", "1.2.826.0.1.3680043.2.1125.7.3"};
  WriteSeries(dir / "mr", spec);
  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "mr");
  ASSERT_THAT(series.status(), IsOk());
  ASSERT_EQ(series->volume.type(), PixelType::kF32);
  bool fractional = false;
  for (int k = 0; k < kSlices; ++k) {
    const std::vector<std::uint16_t> v = SliceValues(spec, kSlices - 1 - k);
    for (int i = 0; i < kRows * kColumns; ++i) {
      const float got = series->volume.As<float>()[k * kRows * kColumns + i];
      ASSERT_EQ(got, static_cast<float>(Modality(v[i], spec, 1.5, -0.25)));
      fractional |= got != std::nearbyint(got);
    }
  }
  EXPECT_TRUE(fractional);
}

// A derived slice names its source; --uid_root roots the new UIDs; --series_uid picks a series.
TEST(DicomDerived, ReferencesSourcesUsesTheUidRootAndPicksASeries) {
  TempDir dir;
  const SliceSpec a;
  SliceSpec b;
  b.series_uid = "1.2.826.0.1.3680043.2.1125.7.4";
  WriteSeries(dir / "two", a);
  for (int z = 0; z < 2; ++z) {
    WriteSlice(absl::StrFormat("%s/b%d.dcm", dir / "two", z), b, z, SliceValues(b, z));
  }
  EXPECT_THAT(ReadVolumeFile(dir / "two").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("more than one series"), HasSubstr(b.series_uid),
                                        HasSubstr("--series_uid"))));
  EXPECT_THAT(ReadVolumeFile(dir / "two", {"1.2.3.999"}).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(b.series_uid)));
  absl::StatusOr<VolumeFile> picked = ReadVolumeFile(dir / "two", {b.series_uid});
  ASSERT_THAT(picked.status(), IsOk());
  EXPECT_EQ(picked->image.extent().depth, 2);

  VolumeWriteOptions options;
  options.uid_root = "1.2.826.0.1.3680043.10.999";
  ASSERT_THAT(WriteVolumeFile(dir / "out", picked->image.view(), picked->spacing, *picked, options),
              IsOk());
  for (int k = 0; k < 2; ++k) {
    const std::string out = absl::StrFormat("%s/slice_%04d.dcm", dir / "out", k);
    EXPECT_TRUE(absl::StartsWith(Tag(out, DCM_SOPInstanceUID), options.uid_root + ".")) << out;
    EXPECT_TRUE(absl::StartsWith(Tag(out, DCM_SeriesInstanceUID), options.uid_root + "."));
    EXPECT_EQ(Tag(out, DCM_ReferencedSOPInstanceUID),
              Tag(picked->dicom->files[k], DCM_SOPInstanceUID));
    EXPECT_EQ(Tag(out, DCM_ReferencedSOPClassUID), UID_CTImageStorage);
  }
  options.uid_root = "1.2.abc";
  EXPECT_THAT(
      WriteVolumeFile(dir / "bad_root", picked->image.view(), picked->spacing, *picked, options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--uid_root")));
}

}  // namespace
}  // namespace cuimg
