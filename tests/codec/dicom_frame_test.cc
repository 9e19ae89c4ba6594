// DICOM frames on the CPU (codec/dicom_frame.h, frame_encode.h, j2k_header.h): the syntax table,
// the description's checks, the stored-value rule, RLE and native frames built by hand, lossless
// HTJ2K and JPEG 2000 round trips, JPEG-LS frames from CharLS's encoder, and refused frames.
// pydicom's decode of frames made by DCMTK's, GDCM's and OpenJPH's tools is checked by
// frame_codecs_pydicom_test.py.
#include "cuimg/codec/dicom_frame.h"

#include <charls/charls.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/frame_encode.h"
#include "cuimg/codec/j2k_header.h"
#include "cuimg/common/error.h"
#include "tests/testing/random_image.h"
#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::IsOk;
using ::cuimg::testing::RandomImage;
using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

FrameDescription Description(int rows, int columns, int bits_allocated, int bits_stored,
                             bool is_signed) {
  FrameDescription d;
  d.rows = rows;
  d.columns = columns;
  d.bits_allocated = bits_allocated;
  d.bits_stored = bits_stored;
  d.is_signed = is_signed;
  return d;
}

void ExpectCorrupt(const absl::Status& s, absl::string_view field) {
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ErrorReasonOf(s), "CORRUPT_ENCODED_DATA") << s;
  EXPECT_EQ(ErrorFieldOf(s), field) << s;
}

template <typename T>
std::vector<T> Values(const Image& image) {
  return std::vector<T>(image.As<T>(), image.As<T>() + image.extent().Pixels());
}

bool SamePixels(const Image& a, const ImageView& b) {
  return a.type() == b.type && a.extent() == b.extent && a.size_bytes() == b.Bytes() &&
         std::memcmp(a.bytes(), b.data, b.Bytes()) == 0;
}

TEST(FrameSyntaxTest, EveryUidNamesItsSyntax) {
  for (FrameSyntax syntax : DecodableFrameSyntaxes()) {
    absl::StatusOr<FrameSyntax> parsed = FrameSyntaxFromUid(FrameSyntaxUid(syntax), "uid");
    ASSERT_THAT(parsed, IsOk());
    EXPECT_EQ(*parsed, syntax) << FrameSyntaxName(syntax);
  }
  // Implicit VR frames hold the same bytes; a file's padding is not part of the UID.
  EXPECT_EQ(*FrameSyntaxFromUid("1.2.840.10008.1.2", "uid"), FrameSyntax::kNative);
  EXPECT_EQ(*FrameSyntaxFromUid(std::string("1.2.840.10008.1.2.4.90\0", 23), "uid"),
            FrameSyntax::kJ2kLossless);
  EXPECT_TRUE(IsLosslessSyntax(FrameSyntax::kHtj2kLosslessRpcl));
  EXPECT_FALSE(IsLosslessSyntax(FrameSyntax::kJpegBaseline));
  EXPECT_EQ(FrameDecoderName(FrameSyntax::kHtj2k), "openjpeg");
  EXPECT_EQ(FrameDecoderName(FrameSyntax::kRle), "rle");
}

TEST(FrameSyntaxTest, RefusesAnUnknownUidWithItsReason) {
  const absl::Status mpeg2 =
      FrameSyntaxFromUid("1.2.840.10008.1.2.4.100", "frames.syntax").status();
  EXPECT_THAT(mpeg2,
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'1.2.840.10008.1.2.4.100'")));
  EXPECT_EQ(ErrorReasonOf(mpeg2), "UNSUPPORTED_ENCODING");
  EXPECT_EQ(ErrorFieldOf(mpeg2), "frames.syntax");
  // Client text that is not a UID is not repeated.
  const absl::Status text = FrameSyntaxFromUid("\x1b[31mred", "uid").status();
  EXPECT_THAT(text, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("(not a UID)")));
}

TEST(FrameDescriptionTest, NamesTheFieldAtFault) {
  struct Case {
    FrameDescription d;
    std::string field;
    std::string reason;
  };
  FrameDescription ok = Description(4, 5, 16, 12, true);
  std::vector<Case> cases;
  cases.push_back({ok, "", ""});
  FrameDescription d = ok;
  d.rows = 0;
  cases.push_back({d, "f.rows", "VALUE_OUT_OF_RANGE"});
  d = ok;
  d.columns = 65536;
  cases.push_back({d, "f.columns", "VALUE_OUT_OF_RANGE"});
  d = ok;
  d.samples_per_pixel = 3;
  cases.push_back({d, "f.samples_per_pixel", "UNSUPPORTED_PIXEL_TYPE"});
  d = ok;
  d.bits_allocated = 12;
  cases.push_back({d, "f.bits_allocated", "UNSUPPORTED_PIXEL_TYPE"});
  d = ok;
  d.bits_stored = 17;
  cases.push_back({d, "f.bits_stored", "VALUE_OUT_OF_RANGE"});
  d = ok;
  d.bits_stored = 0;
  cases.push_back({d, "f.bits_stored", "VALUE_OUT_OF_RANGE"});
  d = ok;
  d.planar_configuration = 1;
  cases.push_back({d, "f.planar_configuration", "VALUE_OUT_OF_RANGE"});
  for (const Case& c : cases) {
    const absl::Status s = ValidateFrameDescription(c.d, "f");
    EXPECT_EQ(ErrorFieldOf(s), c.field) << s;
    EXPECT_EQ(ErrorReasonOf(s), c.reason) << s;
    EXPECT_EQ(s.ok(), c.field.empty()) << s;
  }
}

TEST(FrameDescriptionTest, SignedFramesDecodeToI16) {
  EXPECT_EQ(DecodedPixelType(Description(1, 1, 8, 8, false)), PixelType::kU8);
  EXPECT_EQ(DecodedPixelType(Description(1, 1, 8, 8, true)), PixelType::kI16);
  EXPECT_EQ(DecodedPixelType(Description(1, 1, 16, 12, false)), PixelType::kU16);
  EXPECT_EQ(DecodedPixelType(Description(1, 1, 16, 16, true)), PixelType::kI16);
  EXPECT_EQ(DecodedFrameBytes(Description(3, 5, 8, 8, true)), 30u);
}

std::vector<std::uint8_t> Le16(const std::vector<std::uint16_t>& words) {
  std::vector<std::uint8_t> bytes;
  for (std::uint16_t w : words) {
    bytes.push_back(static_cast<std::uint8_t>(w & 0xFF));
    bytes.push_back(static_cast<std::uint8_t>(w >> 8));
  }
  return bytes;
}

TEST(NativeFrameTest, KeepsTheStoredBitsAndSignExtendsThem) {
  // Bits above BitsStored (old overlays) never reach the value.
  const std::vector<std::uint8_t> frame = Le16({0xF123, 0x0800, 0x07FF, 0xFFFF, 0x1801, 0x0000});
  absl::StatusOr<Image> u =
      DecodeFrame(FrameSyntax::kNative, Description(2, 3, 16, 12, false), frame, "frames[0]");
  ASSERT_THAT(u, IsOk());
  EXPECT_EQ(Values<std::uint16_t>(*u),
            (std::vector<std::uint16_t>{0x123, 0x800, 0x7FF, 0xFFF, 0x801, 0}));
  absl::StatusOr<Image> s =
      DecodeFrame(FrameSyntax::kNative, Description(2, 3, 16, 12, true), frame, "frames[0]");
  ASSERT_THAT(s, IsOk());
  EXPECT_EQ(Values<std::int16_t>(*s), (std::vector<std::int16_t>{291, -2048, 2047, -1, -2047, 0}));
  absl::StatusOr<Image> s8 = DecodeFrame(FrameSyntax::kNative, Description(1, 3, 8, 8, true),
                                         std::vector<std::uint8_t>{0x80, 0x7F, 0xFF, 0},
                                         "frames[0]");  // odd: a padding byte is allowed
  ASSERT_THAT(s8, IsOk());
  EXPECT_EQ(Values<std::int16_t>(*s8), (std::vector<std::int16_t>{-128, 127, -1}));
}

TEST(NativeFrameTest, RefusesAFrameOfTheWrongLength) {
  ExpectCorrupt(DecodeFrame(FrameSyntax::kNative, Description(2, 3, 16, 16, false),
                            std::vector<std::uint8_t>(13), "frames[2]")
                    .status(),
                "frames[2]");
}

// An RLE frame: the header's segment offsets, then the segments.
std::vector<std::uint8_t> RleFrame(const std::vector<std::vector<std::uint8_t>>& segments) {
  std::vector<std::uint8_t> frame(64, 0);
  const auto put = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) frame[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
  };
  put(0, static_cast<std::uint32_t>(segments.size()));
  for (std::size_t s = 0; s < segments.size(); ++s) {
    put(4 + 4 * s, static_cast<std::uint32_t>(frame.size()));
    frame.insert(frame.end(), segments[s].begin(), segments[s].end());
  }
  return frame;
}

TEST(RleFrameTest, DecodesLiteralAndReplicateRuns) {
  // 2 literal bytes, a no-op, 4 copies of 7.
  const std::vector<std::uint8_t> frame = RleFrame({{1, 10, 20, 0x80, 0xFD, 7}});
  absl::StatusOr<Image> image =
      DecodeFrame(FrameSyntax::kRle, Description(2, 3, 8, 8, false), frame, "f");
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(Values<std::uint8_t>(*image), (std::vector<std::uint8_t>{10, 20, 7, 7, 7, 7}));
}

TEST(RleFrameTest, SixteenBitSamplesComeMostSignificantSegmentFirst) {
  const std::vector<std::uint8_t> frame = RleFrame({{2, 0x01, 0x03, 0xFF}, {2, 0x02, 0x04, 0xFF}});
  absl::StatusOr<Image> image =
      DecodeFrame(FrameSyntax::kRle, Description(1, 3, 16, 16, true), frame, "f");
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(Values<std::int16_t>(*image), (std::vector<std::int16_t>{0x0102, 0x0304, -1}));
}

TEST(RleFrameTest, IsLenientWherePydicomIs) {
  // A literal run cut short by its segment's end, then bytes past the frame's pixels.
  const std::vector<std::uint8_t> cut = RleFrame({{5, 1, 2, 3}});
  absl::StatusOr<Image> image =
      DecodeFrame(FrameSyntax::kRle, Description(1, 3, 8, 8, false), cut, "f");
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(Values<std::uint8_t>(*image), (std::vector<std::uint8_t>{1, 2, 3}));
  const std::vector<std::uint8_t> longer = RleFrame({{0xFB, 9}});  // 6 bytes for 3 pixels
  image = DecodeFrame(FrameSyntax::kRle, Description(1, 3, 8, 8, false), longer, "f");
  ASSERT_THAT(image, IsOk());
  EXPECT_EQ(Values<std::uint8_t>(*image), (std::vector<std::uint8_t>{9, 9, 9}));
}

TEST(RleFrameTest, RefusesShortSegmentsAndBadHeaders) {
  const FrameDescription d = Description(2, 3, 8, 8, false);
  ExpectCorrupt(
      DecodeFrame(FrameSyntax::kRle, d, RleFrame({{4, 1, 2, 3, 4, 5}}), "frames[1]").status(),
      "frames[1]");  // 5 bytes for 6 pixels
  ExpectCorrupt(
      DecodeFrame(FrameSyntax::kRle, d, RleFrame({{0xFB, 1}, {0xFB, 1}}), "frames[1]").status(),
      "frames[1]");  // 2 segments for 8-bit samples
  std::vector<std::uint8_t> past = RleFrame({{0xFB, 1}});
  past[4] = 200;  // the segment's offset past the frame
  ExpectCorrupt(DecodeFrame(FrameSyntax::kRle, d, past, "frames[1]").status(), "frames[1]");
  ExpectCorrupt(
      DecodeFrame(FrameSyntax::kRle, d, std::vector<std::uint8_t>(63), "frames[1]").status(),
      "frames[1]");
}

// Lossless HTJ2K and JPEG 2000 round trips over types and sizes (1x1, odd, large enough for 5
// decomposition levels), values over each type's whole range.
using RoundTripParam = std::tuple<FrameSyntax, PixelType, Extent>;
class LosslessFrameTest : public ::testing::TestWithParam<RoundTripParam> {};

TEST_P(LosslessFrameTest, DecodesToTheEncodedImage) {
  const auto [syntax, type, extent] = GetParam();
  const Image image = RandomImage(type, extent, 7 + extent.width);
  absl::StatusOr<std::vector<std::uint8_t>> frame = EncodeLosslessFrame(syntax, image.view());
  ASSERT_THAT(frame, IsOk());
  absl::StatusOr<Image> decoded =
      DecodeFrame(syntax, LosslessFrameDescription(image.view()), *frame, "f");
  ASSERT_THAT(decoded, IsOk());
  EXPECT_TRUE(SamePixels(*decoded, image.view()));
  absl::StatusOr<J2kSiz> siz = ReadJ2kSiz(*frame);
  ASSERT_THAT(siz, IsOk());
  EXPECT_EQ(siz->width, extent.width);
  EXPECT_EQ(siz->height, extent.height);
  EXPECT_EQ(siz->is_signed, type == PixelType::kI16);
  EXPECT_EQ(siz->high_throughput, syntax == FrameSyntax::kHtj2kLossless);
}

INSTANTIATE_TEST_SUITE_P(
    All, LosslessFrameTest,
    ::testing::Combine(::testing::Values(FrameSyntax::kHtj2kLossless, FrameSyntax::kJ2kLossless),
                       ::testing::Values(PixelType::kU8, PixelType::kU16, PixelType::kI16),
                       ::testing::Values(Extent{1, 1, 1}, Extent{3, 2, 1}, Extent{17, 13, 1},
                                         Extent{300, 200, 1})));

TEST(LosslessFrameTest, TheStoredValueRuleHoldsWhateverTheCodestreamsSign) {
  // 12-bit two's complement patterns in an unsigned codestream, read as signed 12-bit values.
  Image patterns(PixelType::kU16, Extent{4, 1, 1});
  const std::uint16_t words[4] = {0x800, 0xFFF, 0x7FF, 0x001};
  std::memcpy(patterns.bytes(), words, sizeof words);
  // Negative values in a signed codestream, read as unsigned 16-bit patterns.
  Image negatives(PixelType::kI16, Extent{3, 1, 1});
  const std::int16_t values[3] = {-1, -32768, 5};
  std::memcpy(negatives.bytes(), values, sizeof values);
  for (FrameSyntax syntax : {FrameSyntax::kHtj2kLossless, FrameSyntax::kJ2kLossless}) {
    absl::StatusOr<Image> s = DecodeFrame(syntax, Description(1, 4, 16, 12, true),
                                          *EncodeLosslessFrame(syntax, patterns.view()), "f");
    ASSERT_THAT(s, IsOk());
    EXPECT_EQ(Values<std::int16_t>(*s), (std::vector<std::int16_t>{-2048, -1, 2047, 1}));
    absl::StatusOr<Image> u = DecodeFrame(syntax, Description(1, 3, 16, 16, false),
                                          *EncodeLosslessFrame(syntax, negatives.view()), "f");
    ASSERT_THAT(u, IsOk());
    EXPECT_EQ(Values<std::uint16_t>(*u), (std::vector<std::uint16_t>{0xFFFF, 0x8000, 5}));
  }
}

TEST(LosslessFrameTest, RefusesFramesThatDisagreeWithTheirDescription) {
  const Image image = RandomImage(PixelType::kU16, Extent{17, 13, 1}, 3);
  for (FrameSyntax syntax : {FrameSyntax::kHtj2kLossless, FrameSyntax::kJ2kLossless}) {
    const std::vector<std::uint8_t> frame = *EncodeLosslessFrame(syntax, image.view());
    const absl::Status swapped =
        DecodeFrame(syntax, Description(17, 13, 16, 16, false), frame, "frames[0]").status();
    ExpectCorrupt(swapped, "frames[0]");
    EXPECT_THAT(swapped.message(), HasSubstr("17x13 pixels"));
    // 16-bit samples for an 8-bit description.
    ExpectCorrupt(
        DecodeFrame(syntax, Description(13, 17, 8, 8, false), frame, "frames[0]").status(),
        "frames[0]");
  }
}

TEST(LosslessFrameTest, RefusesFramesCutShort) {
  const Image image = RandomImage(PixelType::kI16, Extent{64, 48, 1}, 5);
  const FrameDescription d = LosslessFrameDescription(image.view());
  for (FrameSyntax syntax : {FrameSyntax::kHtj2kLossless, FrameSyntax::kJ2kLossless}) {
    const std::vector<std::uint8_t> frame = *EncodeLosslessFrame(syntax, image.view());
    for (std::size_t keep : {frame.size() - 2, frame.size() / 2, std::size_t{60}, std::size_t{3}}) {
      SCOPED_TRACE(absl::StrCat(FrameSyntaxName(syntax), ", ", keep, " bytes"));
      ExpectCorrupt(
          DecodeFrame(syntax, d, absl::MakeConstSpan(frame.data(), keep), "frames[4]").status(),
          "frames[4]");
    }
  }
}

TEST(LosslessFrameTest, EncodesOnlyLosslessSyntaxesOfTwoDimensionalImages) {
  const Image volume(PixelType::kU8, Extent{4, 4, 2});
  const Image floats(PixelType::kF32, Extent{4, 4, 1});
  const Image plain(PixelType::kU8, Extent{4, 4, 1});
  EXPECT_THAT(EncodeLosslessFrame(FrameSyntax::kHtj2kLossless, volume.view()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(EncodeLosslessFrame(FrameSyntax::kJ2kLossless, floats.view()),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(EncodeLosslessFrame(FrameSyntax::kJpegLsLossless, plain.view()),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A JPEG-LS frame of `image` from CharLS's encoder.
std::vector<std::uint8_t> JpegLs(const Image& image, int bits) {
  charls_jpegls_encoder* encoder = charls_jpegls_encoder_create();
  charls_frame_info info{static_cast<std::uint32_t>(image.extent().width),
                         static_cast<std::uint32_t>(image.extent().height), bits, 1};
  std::vector<std::uint8_t> out(image.size_bytes() * 2 + 1024);
  std::size_t written = 0;
  const bool ok =
      charls_jpegls_encoder_set_frame_info(encoder, &info) == charls::jpegls_errc::success &&
      charls_jpegls_encoder_set_destination_buffer(encoder, out.data(), out.size()) ==
          charls::jpegls_errc::success &&
      charls_jpegls_encoder_encode_from_buffer(encoder, image.bytes(), image.size_bytes(), 0) ==
          charls::jpegls_errc::success &&
      charls_jpegls_encoder_get_bytes_written(encoder, &written) == charls::jpegls_errc::success;
  charls_jpegls_encoder_destroy(encoder);
  out.resize(ok ? written : 0);
  return out;
}

TEST(JpegLsFrameTest, DecodesCharlsFramesAndRefusesTruncatedOnes) {
  // 12-bit patterns of signed values, as a CT frame with PixelRepresentation 1 stores them.
  Image image(PixelType::kU16, Extent{37, 29, 1});
  const Image noise = RandomImage(PixelType::kU16, image.extent(), 11);
  for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
    image.As<std::uint16_t>()[i] = noise.As<std::uint16_t>()[i] & 0xFFF;
  }
  const std::vector<std::uint8_t> frame = JpegLs(image, 12);
  ASSERT_FALSE(frame.empty());
  absl::StatusOr<Image> decoded =
      DecodeFrame(FrameSyntax::kJpegLsLossless, Description(29, 37, 16, 12, true), frame, "f");
  ASSERT_THAT(decoded, IsOk());
  for (std::int64_t i = 0; i < image.extent().Pixels(); ++i) {
    const int v = image.As<std::uint16_t>()[i];
    ASSERT_EQ(decoded->As<std::int16_t>()[i], v >= 2048 ? v - 4096 : v) << i;
  }
  ExpectCorrupt(DecodeFrame(FrameSyntax::kJpegLsLossless, Description(29, 37, 16, 12, true),
                            absl::MakeConstSpan(frame.data(), frame.size() / 2), "frames[9]")
                    .status(),
                "frames[9]");
  ExpectCorrupt(DecodeFrame(FrameSyntax::kJpegLsLossless, Description(29, 37, 8, 8, false), frame,
                            "frames[9]")
                    .status(),
                "frames[9]");  // 12-bit samples for an 8-bit description
}

TEST(J2kHeaderTest, RefusesWhatIsNoCodestream) {
  EXPECT_THAT(ReadJ2kSiz(std::vector<std::uint8_t>{0xFF, 0xD8, 0xFF, 0xE0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("SOC")));
  EXPECT_THAT(ReadJ2kSiz(std::vector<std::uint8_t>{0xFF, 0x4F, 0xFF, 0x51, 0, 41}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("SIZ past the end")));
}

}  // namespace
}  // namespace cuimg
