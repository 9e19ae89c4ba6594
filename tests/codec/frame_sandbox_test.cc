// FrameSandbox (codec/frame_sandbox.h): frames decoded in cuimg-frame-decoder processes give
// DecodeFrame's values and errors; a frame that makes the decoder abort is refused and the next
// frame decodes in a new helper; helpers are shared by concurrent callers up to the limit.
#include "cuimg/codec/frame_sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openjpeg.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cuimg/codec/frame_encode.h"
#include "cuimg/common/error.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::RandomImage;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<FrameSandbox> NewSandbox(int max_helpers) {
  FrameSandboxOptions options;
  options.helper_path = CUIMG_FRAME_DECODER;
  options.max_helpers = max_helpers;
  absl::StatusOr<std::unique_ptr<FrameSandbox>> sandbox = FrameSandbox::Create(options);
  EXPECT_THAT(sandbox, IsOk());
  return sandbox.ok() ? std::move(*sandbox) : nullptr;
}

std::vector<std::uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

TEST(FrameSandboxTest, DecodesAsDecodeFrameDoes) {
  auto sandbox = NewSandbox(2);
  ASSERT_NE(sandbox, nullptr);
  const Image image = RandomImage(PixelType::kI16, Extent{67, 45, 1}, 21);
  const FrameDescription d = LosslessFrameDescription(image.view());
  const std::vector<std::uint8_t> frame =
      *EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, image.view());
  ASSERT_TRUE(FrameNeedsSandbox(FrameSyntax::kHtj2kLossless, frame));
  std::vector<std::uint8_t> out(DecodedFrameBytes(d));
  ASSERT_THAT(sandbox->Decode(FrameSyntax::kHtj2kLossless, d, frame, absl::MakeSpan(out), "f"),
              IsOk());
  EXPECT_EQ(std::memcmp(out.data(), image.bytes(), out.size()), 0);
  // A frame that does not decode keeps DecodeFrame's error, named by the caller's field.
  const absl::Status cut = sandbox->Decode(FrameSyntax::kHtj2kLossless, d,
                                           absl::MakeConstSpan(frame.data(), frame.size() / 2),
                                           absl::MakeSpan(out), "frames[7]");
  EXPECT_THAT(cut, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cut short")));
  EXPECT_EQ(ErrorReasonOf(cut), "CORRUPT_ENCODED_DATA");
  EXPECT_EQ(ErrorFieldOf(cut), "frames[7]");
  EXPECT_EQ(sandbox->started(), 1);  // the same helper answered both
  EXPECT_EQ(sandbox->lost(), 0);
}

TEST(FrameSandboxTest, AFrameThatAbortsTheDecoderIsRefusedAndTheNextDecodes) {
  auto sandbox = NewSandbox(1);
  ASSERT_NE(sandbox, nullptr);
  // Found by fuzzing: OpenJPEG 2.5.0's HT decoder asserts in mel_init on it (ht_dec.c:319).
  const std::vector<std::uint8_t> aborts = ReadFile(CUIMG_ABORTING_FRAME);
  ASSERT_FALSE(aborts.empty());
  FrameDescription d;
  d.rows = 61;
  d.columns = 47;
  d.bits_allocated = d.bits_stored = 16;
  d.is_signed = true;
  std::vector<std::uint8_t> out(DecodedFrameBytes(d));
  const absl::Status refused =
      sandbox->Decode(FrameSyntax::kHtj2kLossless, d, aborts, absl::MakeSpan(out), "frames[2]");
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorReasonOf(refused), "CORRUPT_ENCODED_DATA");
  EXPECT_EQ(ErrorFieldOf(refused), "frames[2]");
  if (std::string(opj_version()) == "2.5.0") {  // Debian 12's: the helper died of it
    EXPECT_THAT(refused.message(), HasSubstr("stopped on it (signal 6)"));
    EXPECT_EQ(sandbox->lost(), 1);
  }
  const Image image = RandomImage(PixelType::kI16, Extent{47, 61, 1}, 4);
  const std::vector<std::uint8_t> frame =
      *EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, image.view());
  ASSERT_THAT(sandbox->Decode(FrameSyntax::kHtj2kLossless, d, frame, absl::MakeSpan(out), "f"),
              IsOk());
  EXPECT_EQ(std::memcmp(out.data(), image.bytes(), out.size()), 0);
}

TEST(FrameSandboxTest, AFrameTheDecoderDoesNotFinishIsRefusedAtTheTimeLimit) {
  FrameSandboxOptions options;
  options.helper_path = CUIMG_FRAME_DECODER;
  options.max_helpers = 1;
  options.frame_timeout = absl::Milliseconds(500);
  absl::StatusOr<std::unique_ptr<FrameSandbox>> sandbox = FrameSandbox::Create(options);
  ASSERT_THAT(sandbox, IsOk());
  // Found by fuzzing: CharLS 2.4.1 loops over this scan (over a minute).
  const std::vector<std::uint8_t> loops = ReadFile(CUIMG_LOOPING_FRAME);
  ASSERT_FALSE(loops.empty());
  FrameDescription d;
  d.rows = 61;
  d.columns = 47;
  d.bits_allocated = d.bits_stored = 8;
  std::vector<std::uint8_t> out(DecodedFrameBytes(d));
  const absl::Status refused =
      (*sandbox)->Decode(FrameSyntax::kJpegLsLossless, d, loops, absl::MakeSpan(out), "frames[0]");
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("took over 500ms")));
  EXPECT_EQ(ErrorReasonOf(refused), "CORRUPT_ENCODED_DATA");
  EXPECT_EQ((*sandbox)->lost(), 1);
}

TEST(FrameSandboxTest, ConcurrentCallersShareTheHelpers) {
  auto sandbox = NewSandbox(3);
  ASSERT_NE(sandbox, nullptr);
  const Image image = RandomImage(PixelType::kU16, Extent{32, 24, 1}, 8);
  const FrameDescription d = LosslessFrameDescription(image.view());
  const std::vector<std::uint8_t> frame =
      *EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, image.view());
  std::vector<std::thread> callers;
  std::vector<int> good(8, 0);
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      std::vector<std::uint8_t> out(DecodedFrameBytes(d));
      for (int i = 0; i < 4; ++i) {
        if (sandbox->Decode(FrameSyntax::kHtj2kLossless, d, frame, absl::MakeSpan(out), "f").ok() &&
            std::memcmp(out.data(), image.bytes(), out.size()) == 0) {
          ++good[t];
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(good, std::vector<int>(8, 4));
  EXPECT_LE(sandbox->started(), 3);
  EXPECT_EQ(sandbox->lost(), 0);
}

TEST(FrameSandboxTest, RefusesAMissingHelper) {
  FrameSandboxOptions options;
  options.helper_path = "/nonexistent/cuimg-frame-decoder";
  EXPECT_THAT(FrameSandbox::Create(options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("/nonexistent")));
}

}  // namespace
}  // namespace cuimg
