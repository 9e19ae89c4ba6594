// Outputs appear whole or not at all (issue 46: a failed DICOM write left a corrupt slice behind,
// and the rerun refused the non-empty folder): WriteAtomically and StagedOutputs, and the writers
// built on them forced to fail midway.
#include "client/io/atomic_output.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "client/io/dicom_series.h"
#include "client/io/image_file.h"
#include "client/io/volume_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/client/dicom_test_files.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cuimg {
namespace {

namespace fs = std::filesystem;
using ::cuimg::testing::IsOk;
using ::cuimg::testing::StatusIs;
using ::cuimg::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// The names in `dir`, hidden temporaries included.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  return out ? absl::OkStatus() : absl::DataLossError(path + ": write failed");
}

TEST(WriteAtomically, AFileAppearsOnlyWhenTheWriterSucceeds) {
  // Arrange
  TempDir dir;
  const std::string path = dir / "out.txt";
  std::string seen_temp;

  // Act
  const absl::Status s = WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    seen_temp = temp;
    EXPECT_FALSE(fs::exists(path));  // nothing under the name while writing
    return WriteText(temp, "whole");
  });

  // Assert
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(Contents(path), "whole");
  EXPECT_EQ(fs::path(seen_temp).parent_path(), fs::path(path).parent_path());
  EXPECT_TRUE(absl::EndsWith(seen_temp, "out.txt")) << seen_temp;  // the extension is kept
  EXPECT_THAT(Names(dir / ""), ElementsAre("out.txt"));
}

TEST(WriteAtomically, AWriterFailingMidwayLeavesNothingAndTheOldFileStays) {
  // Arrange
  TempDir dir;
  const std::string fresh = dir / "fresh.txt";
  const std::string old = dir / "old.txt";
  ASSERT_THAT(WriteText(old, "before"), IsOk());
  auto half_then_fail = [](const std::string& temp) {
    EXPECT_THAT(WriteText(temp, "half"), IsOk());
    return absl::DataLossError(temp + ": disk full");
  };

  // Act
  const absl::Status a = WriteAtomically(fresh, OutputKind::kFile, half_then_fail);
  const absl::Status b = WriteAtomically(old, OutputKind::kFile, half_then_fail);

  // Assert: the error names the output, not the temporary name.
  EXPECT_THAT(a, StatusIs(absl::StatusCode::kDataLoss, fresh + ": disk full"));
  EXPECT_THAT(b, StatusIs(absl::StatusCode::kDataLoss, old + ": disk full"));
  EXPECT_THAT(Names(dir / ""), ElementsAre("old.txt"));
  EXPECT_EQ(Contents(old), "before");
}

TEST(WriteAtomically, AFolderFailingAfterItsFirstFileLeavesNoFolderAndARerunWorks) {
  // Arrange
  TempDir dir;
  const std::string series = dir / "series/";
  auto write = [](int fail_at) {
    return [fail_at](const std::string& folder) -> absl::Status {
      for (int k = 0; k < 3; ++k) {
        if (k == fail_at) return absl::InvalidArgumentError("slice 1 holds NaN");
        if (absl::Status s = WriteText(folder + "/slice_" + std::to_string(k), "x"); !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    };
  };

  // Act
  const absl::Status failed = WriteAtomically(series, OutputKind::kFolder, write(1));
  const std::vector<std::string> after_failure = Names(dir / "");
  const absl::Status rerun = WriteAtomically(series, OutputKind::kFolder, write(-1));

  // Assert
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(after_failure, IsEmpty());
  ASSERT_THAT(rerun, IsOk());
  EXPECT_THAT(Names(dir / "series"), UnorderedElementsAre("slice_0", "slice_1", "slice_2"));
  EXPECT_THAT(Names(dir / ""), ElementsAre("series"));
}

TEST(WriteAtomically, AFolderIsRefusedBeforeWritingWhenNotEmptyAndTakesAnEmptyOne) {
  TempDir dir;
  fs::create_directories(dir / "full");
  ASSERT_THAT(WriteText(dir / "full/a", "a"), IsOk());
  fs::create_directories(dir / "empty");
  bool called = false;
  auto write = [&](const std::string& folder) {
    called = true;
    return WriteText(folder + "/b", "b");
  };

  EXPECT_THAT(WriteAtomically(dir / "full", OutputKind::kFolder, write),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("not empty")));
  EXPECT_FALSE(called);
  ASSERT_THAT(WriteAtomically(dir / "empty", OutputKind::kFolder, write), IsOk());
  EXPECT_THAT(Names(dir / "empty"), ElementsAre("b"));
  ASSERT_THAT(WriteAtomically(dir / "new/deeper", OutputKind::kFolder, write), IsOk());
  EXPECT_THAT(Names(dir / "new/deeper"), ElementsAre("b"));
}

TEST(StagedOutputs, CommitMovesEverythingAndDiscardLeavesNothing) {
  // Arrange
  TempDir dir;
  ASSERT_THAT(WriteText(dir / "b.txt", "old b"), IsOk());

  // Act: one set discarded (by going out of scope), one committed.
  {
    StagedOutputs staged;
    ASSERT_THAT(staged.CreateFolder(dir / "made/inner"), IsOk());
    absl::StatusOr<std::string> a = staged.Stage(dir / "made/inner/a.txt");
    ASSERT_THAT(a.status(), IsOk());
    ASSERT_THAT(WriteText(*a, "a"), IsOk());
  }
  const std::vector<std::string> after_discard = Names(dir / "");
  StagedOutputs staged;
  absl::StatusOr<std::string> a = staged.Stage(dir / "a.txt");
  absl::StatusOr<std::string> b = staged.Stage(dir / "b.txt");
  ASSERT_THAT(a.status(), IsOk());
  ASSERT_THAT(b.status(), IsOk());
  ASSERT_THAT(WriteText(*a, "new a"), IsOk());
  ASSERT_THAT(WriteText(*b, "new b"), IsOk());
  const std::vector<std::string> before_commit = Names(dir / "");
  ASSERT_THAT(staged.Commit(), IsOk());

  // Assert
  EXPECT_THAT(after_discard, ElementsAre("b.txt"));  // the folders it made went too
  EXPECT_THAT(before_commit, Not(::testing::Contains("a.txt")));
  EXPECT_EQ(Contents(dir / "b.txt"), "new b");
  EXPECT_THAT(Names(dir / ""), UnorderedElementsAre("a.txt", "b.txt"));
  EXPECT_THAT(staged.Stage(dir / "a.txt").status(), IsOk());  // committed: a new set may begin
}

TEST(StagedOutputs, RefusesTheSamePathTwiceAndAFolderAsAFile) {
  TempDir dir;
  StagedOutputs staged;
  ASSERT_THAT(staged.Stage(dir / "x.png").status(), IsOk());
  EXPECT_THAT(staged.Stage(dir / "x.png").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(staged.Stage(dir / "").status(), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(staged.Named(absl::NotFoundError("nothing to rename")),
              StatusIs(absl::StatusCode::kNotFound, "nothing to rename"));
}

TEST(WriteFileBytes, WritingIntoAMissingFolderFailsNamingTheOutput) {
  TempDir dir;
  EXPECT_THAT(WriteFileBytes(dir / "no/such/out.png", {1, 2, 3}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr(dir / "no/such/out.png")));
  EXPECT_THAT(Names(dir / ""), IsEmpty());
}

TEST(WriteVolumeFile, EveryFormatLeavesOnlyItsOutput) {
  TempDir dir;
  const Image image = testing::RandomImage(PixelType::kF32, Extent{9, 7, 3}, 5);
  for (const char* name : {"v.npy", "v.nrrd", "v.nii", "v.nii.gz", "v.tif"}) {
    ASSERT_THAT(WriteVolumeFile(dir / name, image.view(), {0.5, 0.5, 2}, VolumeFile{}, {}), IsOk())
        << name;
  }
  EXPECT_THAT(Names(dir / ""),
              UnorderedElementsAre("v.npy", "v.nrrd", "v.nii", "v.nii.gz", "v.tif"));
  // A format that refuses the image (PNG takes no f32) leaves nothing.
  EXPECT_THAT(WriteVolumeFile(dir / "v.png", image.view(), {}, VolumeFile{}, {}), Not(IsOk()));
  EXPECT_THAT(Names(dir / ""), Not(::testing::Contains("v.png")));
  EXPECT_EQ(Names(dir / "").size(), 5u);
}

TEST(WriteDicomSeries, ASliceFailingAfterTheFirstLeavesNoFolderAndARerunWorks) {
  // Arrange: an F32 result (fractional slope source) whose second slice holds NaN, which the
  // writer refuses after writing the first.
  TempDir dir;
  testing::TestSlice like;
  like.slope = 0.5;
  testing::WriteTestSeries(dir / "in", 3, like);
  absl::StatusOr<VolumeFile> input = ReadVolumeFile(dir / "in");
  ASSERT_THAT(input.status(), IsOk());
  ASSERT_EQ(input->image.type(), PixelType::kF32);
  Image bad = input->image;
  bad.As<float>()[bad.extent().SlicePixels() + 4] = std::numeric_limits<float>::quiet_NaN();

  // Act
  const absl::Status failed =
      WriteVolumeFile(dir / "out", bad.view(), input->spacing, *input, VolumeWriteOptions{});
  const std::vector<std::string> after_failure = Names(dir / "");
  const absl::Status rerun = WriteVolumeFile(dir / "out", input->image.view(), input->spacing,
                                             *input, VolumeWriteOptions{});

  // Assert
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(after_failure, ElementsAre("in"));
  ASSERT_THAT(rerun, IsOk());
  EXPECT_EQ(Names(dir / "out").size(), 3u);
  absl::StatusOr<DicomSeries> back = ReadDicomSeries(dir / "out");
  ASSERT_THAT(back.status(), IsOk());
  EXPECT_EQ(back->volume.storage(), input->image.storage());
}

}  // namespace
}  // namespace cuimg
