// Stored frames in and out of DICOM files (client/io/dicom_frames.h) and a series kept as its
// frames (ReadDicomSeries with frame_syntaxes): what the CLI sends instead of decoding. The frames'
// bytes are never decoded on these paths, so plain byte strings stand for codestreams; the e2e
// test (test_pacs_client.py) sends real ones.
#include "client/io/dicom_frames.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/io/dicom_load.h"
#include "client/io/dicom_series.h"
#include "gtest/gtest.h"
#include "tests/client/dicom_test_files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::cuimg::testing::TempDir;
using ::cuimg::testing::TestSlice;
using ::cuimg::testing::WriteTestSlice;

constexpr char kHtj2k[] = "1.2.840.10008.1.2.4.201";
constexpr char kJ2k[] = "1.2.840.10008.1.2.4.90";

// Rewrites `file` (a native test slice) with `frame` encapsulated under `uid`.
void Encapsulate(const std::string& file, const std::string& frame, const std::string& uid) {
  QuietDcmtkLog();
  DcmFileFormat format;
  DicomLoad load;
  ASSERT_THAT(LoadDicomFile(file, false, 1 << 20, &format, &load), IsOk());
  ASSERT_THAT(PutEncapsulatedFrame(format.getDataset(), frame, file), IsOk());
  ASSERT_THAT(SaveEncapsulated(&format, uid, file), IsOk());
}

TEST(DicomFramesTest, EncapsulatedSyntaxes) {
  EXPECT_TRUE(IsEncapsulatedFrameSyntax(kHtj2k));
  EXPECT_TRUE(IsEncapsulatedFrameSyntax(kJ2k));
  EXPECT_TRUE(IsEncapsulatedFrameSyntax("1.2.840.10008.1.2.5"));
  EXPECT_FALSE(IsEncapsulatedFrameSyntax("1.2.840.10008.1.2.1"));      // native
  EXPECT_FALSE(IsEncapsulatedFrameSyntax("1.2.840.10008.1.2.4.100"));  // MPEG-2: not a frame
}

TEST(DicomFramesTest, AFrameWrittenUnderItsSyntaxReadsBackPadded) {
  TempDir dir;
  for (const std::string uid : {kHtj2k, kJ2k}) {
    const std::string file = dir / "slice.dcm";
    WriteTestSlice(TestSlice{file}, 1);
    const std::string frame = "\xff\x4f\xff\x51 an odd-length stand-in";
    Encapsulate(file, frame, uid);
    DcmFileFormat format;
    DicomLoad load;
    ASSERT_THAT(LoadDicomFile(file, true, 1 << 20, &format, &load), IsOk());
    EXPECT_EQ(MetaTransferSyntax(&format), uid);
    absl::StatusOr<std::string> back = ReadEncapsulatedFrame(file);
    ASSERT_THAT(back.status(), IsOk());
    EXPECT_EQ(*back, frame + std::string(1, '\0'));  // items are even
  }
}

TEST(DicomFramesTest, RefusesNativeData) {
  TempDir dir;
  const std::string file = dir / "native.dcm";
  WriteTestSlice(TestSlice{file}, 1);
  EXPECT_THAT(ReadEncapsulatedFrame(file), StatusIs(absl::StatusCode::kDataLoss));
  DcmFileFormat format;
  DicomLoad load;
  ASSERT_THAT(LoadDicomFile(file, false, 1 << 20, &format, &load), IsOk());
  EXPECT_THAT(SaveEncapsulated(&format, "1.2.840.10008.1.2.1", dir / "out.dcm"),
              StatusIs(absl::StatusCode::kInternal));
  EXPECT_FALSE(std::filesystem::exists(dir / "out.dcm"));
}

// Three slices whose files sort against their positions (slice_2 is the lowest).
std::vector<std::string> WriteSeries(const TempDir& dir, const std::vector<std::string>& uids) {
  std::vector<std::string> frames;
  for (int k = 0; k < 3; ++k) {
    TestSlice slice{dir / absl::StrFormat("slice_%d.dcm", k)};
    slice.z = 10.0 - 2.0 * k;
    WriteTestSlice(slice, k);
    frames.push_back(absl::StrFormat("frame of slice_%d", k));
    Encapsulate(slice.file, frames.back(), uids[k]);
  }
  return frames;
}

TEST(DicomFramesTest, ASeriesOfOneListedSyntaxIsKeptAsItsFramesInZOrder) {
  TempDir dir;
  const std::vector<std::string> frames = WriteSeries(dir, {kHtj2k, kHtj2k, kHtj2k});
  DicomReadOptions options;
  options.frame_syntaxes = {kJ2k, kHtj2k};
  absl::StatusOr<DicomSeries> series = ReadDicomSeries(dir / "", options);
  ASSERT_THAT(series.status(), IsOk());
  ASSERT_TRUE(series->stored.has_value());
  EXPECT_EQ(series->stored->transfer_syntax_uid, kHtj2k);
  EXPECT_EQ(series->volume.extent().Pixels(), 0);  // not decoded
  EXPECT_EQ(series->type, PixelType::kI16);
  EXPECT_EQ(series->extent.depth, 3);
  EXPECT_EQ(series->stored->module.bits_stored, 12);
  EXPECT_FALSE(series->stored->monochrome1);
  ASSERT_EQ(series->stored->data.size(), 3u);
  for (int z = 0; z < 3; ++z) {  // ascending position: slice_2, slice_1, slice_0
    EXPECT_EQ(series->stored->data[z].substr(0, frames[2 - z].size()), frames[2 - z]);
    EXPECT_EQ(series->intercepts[z], -1024);
  }
}

TEST(DicomFramesTest, MixedOrUnlistedSyntaxesAreDecodedHere) {
  TempDir dir;
  WriteSeries(dir, {kHtj2k, kJ2k, kHtj2k});
  DicomReadOptions options;
  options.frame_syntaxes = {kJ2k, kHtj2k};
  // Not kept: decoded, and these stand-ins do not decode.
  EXPECT_THAT(ReadDicomSeries(dir / "", options), StatusIs(absl::StatusCode::kDataLoss));
  TempDir one_syntax;
  WriteSeries(one_syntax, {kJ2k, kJ2k, kJ2k});
  options.frame_syntaxes = {kHtj2k};
  EXPECT_THAT(ReadDicomSeries(one_syntax / "", options), StatusIs(absl::StatusCode::kDataLoss));
  options.frame_syntaxes = {kJ2k};
  absl::StatusOr<DicomSeries> kept = ReadDicomSeries(one_syntax / "", options);
  ASSERT_THAT(kept.status(), IsOk());
  EXPECT_TRUE(kept->stored.has_value());
}

}  // namespace
}  // namespace cuimg
