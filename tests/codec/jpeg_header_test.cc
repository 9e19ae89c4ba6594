// The marker walk that routes JPEGs between the GPU and CPU decoders: files nvJPEG takes go to
// the GPU, every kind it cannot take (progressive on the hardware backend, CMYK, 12-bit,
// arithmetic coding, lossless, RGB-coded, odd sampling) and every structural oddity to the CPU
// decoder, and the walk agrees with TurboJPEG's header read on the shape.
#include "cuimg/codec/jpeg_header.h"

#include <turbojpeg.h>

#include <cstring>
#include <string>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cuimg {
namespace {

using ::testing::HasSubstr;

std::vector<std::uint8_t> Encode(int width, int height, int subsampling, int flags,
                                 int pixel_format = -1) {
  const int format = pixel_format >= 0            ? pixel_format
                     : subsampling == TJSAMP_GRAY ? TJPF_GRAY
                                                  : TJPF_BGR;
  const int channels = tjPixelSize[format];
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * channels);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>(i * 7 % 251);
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, pixels.data(), width, width * channels, height, format, &buffer, &size,
                        subsampling, 90, flags),
            0)
      << tjGetErrorStr2(tj);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  return out;
}

// The offset of the first marker `m` (0xFF m) in the file's headers.
std::size_t FindMarker(const std::vector<std::uint8_t>& jpeg, int m) {
  for (std::size_t i = 0; i + 1 < jpeg.size(); ++i) {
    if (jpeg[i] == 0xFF && jpeg[i + 1] == m) return i;
  }
  ADD_FAILURE() << "no marker " << m;
  return 0;
}

TEST(JpegHeader, BaselineFilesOfEverySupportedSamplingGoToTheGpu) {
  for (int sampling : {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY}) {
    const std::vector<std::uint8_t> jpeg = Encode(333, 259, sampling, TJFLAG_ACCURATEDCT);
    absl::StatusOr<JpegHeader> h = ReadJpegHeader(jpeg);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->sof, 0xC0);
    EXPECT_EQ(h->precision, 8);
    EXPECT_EQ(h->width, 333);
    EXPECT_EQ(h->height, 259);
    EXPECT_EQ(h->scans, 1);
    const absl::StatusOr<ImageView> probe = ProbeImage(jpeg);
    ASSERT_TRUE(probe.ok());
    EXPECT_EQ(h->components, probe->channels);
    EXPECT_EQ(JpegGpuRefusal(*h, /*hardware=*/true), "") << "sampling " << sampling;
    EXPECT_EQ(JpegGpuRefusal(*h, /*hardware=*/false), "") << "sampling " << sampling;
  }
}

TEST(JpegHeader, FourOneOneGoesToTheCpuOnlyOnTheHardwareBackend) {
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(Encode(320, 240, TJSAMP_411, 0));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(JpegGpuRefusal(*h, true), HasSubstr("sampling"));
  EXPECT_EQ(JpegGpuRefusal(*h, false), "");
}

TEST(JpegHeader, ProgressiveGoesToTheCpuOnlyOnTheHardwareBackend) {
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(Encode(320, 240, TJSAMP_420, TJFLAG_PROGRESSIVE));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->sof, 0xC2);
  EXPECT_GT(h->scans, 1);
  EXPECT_EQ(JpegGpuRefusal(*h, true), "progressive");
  EXPECT_EQ(JpegGpuRefusal(*h, false), "");
}

TEST(JpegHeader, CmykGoesToTheCpu) {
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(Encode(64, 48, TJSAMP_444, 0, TJPF_CMYK));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->components, 4);
  EXPECT_EQ(JpegGpuRefusal(*h, true), "CMYK");
  EXPECT_EQ(JpegGpuRefusal(*h, false), "CMYK");
}

TEST(JpegHeader, FrameKindsNvjpegCannotDecodeGoToTheCpu) {
  std::vector<std::uint8_t> jpeg = Encode(64, 48, TJSAMP_420, 0);
  const std::size_t sof = FindMarker(jpeg, 0xC0);
  struct Case {
    int marker;
    int precision;
    const char* reason;
  };
  for (const Case& c : {Case{0xC0, 12, "12-bit"}, Case{0xC1, 12, "12-bit"},
                        Case{0xC9, 8, "arithmetic coding"}, Case{0xCA, 8, "arithmetic coding"},
                        Case{0xC3, 8, "lossless"}, Case{0xC5, 8, "hierarchical"}}) {
    std::vector<std::uint8_t> patched = jpeg;
    patched[sof + 1] = static_cast<std::uint8_t>(c.marker);
    patched[sof + 4] = static_cast<std::uint8_t>(c.precision);
    absl::StatusOr<JpegHeader> h = ReadJpegHeader(patched);
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(JpegGpuRefusal(*h, true), c.reason);
    EXPECT_EQ(JpegGpuRefusal(*h, false), c.reason);
  }
  // Extended sequential 8-bit Huffman is what nvJPEG decodes (the hardware backend is asked at
  // run time whether it takes the file).
  jpeg[sof + 1] = 0xC1;
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(jpeg);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(JpegGpuRefusal(*h, false), "");
}

TEST(JpegHeader, AdobeRgbAndComponentIdsRgbGoToTheCpu) {
  std::vector<std::uint8_t> jpeg = Encode(64, 48, TJSAMP_444, 0);
  const std::size_t sof = FindMarker(jpeg, 0xC0);
  // Component ids follow Nf at sof + 9.
  std::vector<std::uint8_t> rgb_ids = jpeg;
  rgb_ids[sof + 10] = 'R';
  rgb_ids[sof + 13] = 'G';
  rgb_ids[sof + 16] = 'B';
  // The scan names components by id too.
  const std::size_t sos = FindMarker(rgb_ids, 0xDA);
  rgb_ids[sos + 5] = 'R';
  rgb_ids[sos + 7] = 'G';
  rgb_ids[sos + 9] = 'B';
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(rgb_ids);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(JpegGpuRefusal(*h, false), "RGB");

  // An APP14 Adobe segment with transform 0 after SOI.
  const std::uint8_t app14[] = {0xFF, 0xEE, 0, 14, 'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, 0};
  std::vector<std::uint8_t> adobe(jpeg.begin(), jpeg.begin() + 2);
  adobe.insert(adobe.end(), std::begin(app14), std::end(app14));
  adobe.insert(adobe.end(), jpeg.begin() + 2, jpeg.end());
  h = ReadJpegHeader(adobe);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->adobe_transform, 0);
  EXPECT_EQ(JpegGpuRefusal(*h, true), "RGB");
}

TEST(JpegHeader, TruncatedAndMangledFilesAreStructuralFaults) {
  const std::vector<std::uint8_t> jpeg = Encode(640, 480, TJSAMP_420, 0);
  ASSERT_TRUE(ReadJpegHeader(jpeg).ok());
  for (std::size_t keep : {std::size_t{0}, std::size_t{3}, std::size_t{20}, jpeg.size() / 2,
                           jpeg.size() - 2, jpeg.size() - 1}) {
    const std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.begin() + keep);
    absl::StatusOr<JpegHeader> h = ReadJpegHeader(cut);
    EXPECT_EQ(h.status().code(), absl::StatusCode::kInvalidArgument) << keep << " bytes";
  }
  // A segment length running past the end of the file.
  const std::size_t dqt = FindMarker(jpeg, 0xDB);
  const std::vector<std::uint8_t> long_segment(jpeg.begin(), jpeg.begin() + dqt + 10);
  EXPECT_THAT(ReadJpegHeader(long_segment).status().message(), HasSubstr("past the end"));
  // A scan naming a component the frame lacks.
  std::vector<std::uint8_t> bad_scan = jpeg;
  bad_scan[FindMarker(bad_scan, 0xDA) + 5] = 77;
  EXPECT_THAT(ReadJpegHeader(bad_scan).status().message(), HasSubstr("component"));
  // Random bytes after SOI.
  std::vector<std::uint8_t> junk = {0xFF, 0xD8, 0x12, 0x34, 0x56, 0xFF, 0xD9};
  EXPECT_FALSE(ReadJpegHeader(junk).ok());
  // A marker libjpeg does not know (the fuzzer's find: TurboJPEG refused it, the walk did not).
  std::vector<std::uint8_t> unknown = jpeg;
  unknown[FindMarker(unknown, 0xDB) + 1] = 0xA0;
  EXPECT_THAT(ReadJpegHeader(unknown).status().message(), HasSubstr("unknown marker 0xA0"));
}

TEST(JpegHeader, RestartIntervalWithoutItsMarkersGoesToTheCpu) {
  const std::vector<std::uint8_t> jpeg = Encode(640, 480, TJSAMP_420, 0);
  // DRI of 4 MCUs, but the entropy data has no RST markers.
  const std::uint8_t dri[] = {0xFF, 0xDD, 0, 4, 0, 4};
  const std::size_t sos = FindMarker(jpeg, 0xDA);
  std::vector<std::uint8_t> patched(jpeg.begin(), jpeg.begin() + sos);
  patched.insert(patched.end(), std::begin(dri), std::end(dri));
  patched.insert(patched.end(), jpeg.begin() + sos, jpeg.end());
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(patched);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->restart_interval, 4);
  EXPECT_FALSE(h->restarts_consistent);
  EXPECT_EQ(JpegGpuRefusal(*h, false), "restart markers");
}

TEST(JpegHeader, AScanWithoutItsHuffmanTablesGoesToTheCpu) {
  std::vector<std::uint8_t> jpeg = Encode(64, 48, TJSAMP_GRAY, 0);
  // Point the scan's component at table slot 3, never defined.
  const std::size_t sos = FindMarker(jpeg, 0xDA);
  jpeg[sos + 6] = 0x33;
  absl::StatusOr<JpegHeader> h = ReadJpegHeader(jpeg);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(JpegGpuRefusal(*h, true), "missing Huffman table");
}

}  // namespace
}  // namespace cuimg
