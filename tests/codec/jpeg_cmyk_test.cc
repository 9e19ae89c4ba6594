// CMYK and YCCK JPEGs (issue 46: a valid Adobe CMYK file was refused as corrupt) decode to the
// BGR that OpenCV's imread gives, on files written here by libjpeg in both colour spaces, both
// sample layouts, with and without the Adobe marker; corrupt ones are still refused.
#include <cstdio>
#include <cstdlib>
#include <opencv2/imgcodecs.hpp>
#include <vector>

// libjpeg's header uses FILE and size_t without including their headers: it comes after <cstdio>.
#include <jpeglib.h>

#include "cuimg/codec/image_codec.h"
#include "gtest/gtest.h"

namespace cuimg {
namespace {

// A width x height CMYK image of smooth ramps and noise, compressed by libjpeg as `space` (JCS_CMYK
// or JCS_YCCK); `subsampled`: the first and last components (Y and K) sampled 2x2, the others
// 1x1, the 4:2:0 layout TurboJPEG writes for CMYK.
std::vector<std::uint8_t> EncodeCmyk(int width, int height, J_COLOR_SPACE space, bool subsampled,
                                     bool adobe_marker) {
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * 4);
  std::uint32_t noise = 12345;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &pixels[(static_cast<std::size_t>(y) * width + x) * 4];
      noise = noise * 1664525u + 1013904223u;
      p[0] = static_cast<std::uint8_t>(x * 255 / width);
      p[1] = static_cast<std::uint8_t>(y * 255 / height);
      p[2] = static_cast<std::uint8_t>((x + y) * 3);
      p[3] = static_cast<std::uint8_t>(noise >> 24);
    }
  }
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 4;
  cinfo.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_colorspace(&cinfo, space);
  jpeg_set_quality(&cinfo, 90, TRUE);
  cinfo.write_Adobe_marker = adobe_marker ? TRUE : FALSE;
  for (int c = 0; c < 4; ++c) {
    const bool full = subsampled && (c == 0 || c == 3);
    cinfo.comp_info[c].h_samp_factor = full ? 2 : 1;
    cinfo.comp_info[c].v_samp_factor = full ? 2 : 1;
  }
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = &pixels[static_cast<std::size_t>(cinfo.next_scanline) * width * 4];
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  std::free(buffer);
  return out;
}

void ExpectLikeOpenCV(const std::vector<std::uint8_t>& file, const char* what) {
  // Arrange
  const cv::Mat want = cv::imdecode(file, cv::IMREAD_COLOR);
  ASSERT_FALSE(want.empty()) << what;

  // Act
  absl::StatusOr<Image> got = DecodeImage(file);

  // Assert
  ASSERT_TRUE(got.ok()) << what << ": " << got.status();
  ASSERT_EQ(got->channels(), 3) << what;
  ASSERT_EQ(got->extent().width, want.cols) << what;
  ASSERT_EQ(got->extent().height, want.rows) << what;
  for (int y = 0; y < want.rows; ++y) {
    for (int x = 0; x < want.cols * 3; ++x) {
      ASSERT_EQ(got->bytes()[static_cast<std::size_t>(y) * want.cols * 3 + x], want.ptr(y)[x])
          << what << " at row " << y << ", byte " << x;
    }
  }
}

TEST(JpegCmyk, AdobeCmykDecodesAsOpenCVReadsIt) {
  ExpectLikeOpenCV(EncodeCmyk(67, 45, JCS_CMYK, false, true), "CMYK 4:4:4, Adobe marker");
  ExpectLikeOpenCV(EncodeCmyk(64, 48, JCS_CMYK, true, true), "CMYK 4:2:0");
}

TEST(JpegCmyk, YcckDecodesAsOpenCVReadsIt) {
  ExpectLikeOpenCV(EncodeCmyk(80, 33, JCS_YCCK, true, true), "YCCK 4:2:0");
  ExpectLikeOpenCV(EncodeCmyk(31, 17, JCS_YCCK, false, true), "YCCK 4:4:4");
}

TEST(JpegCmyk, CmykWithoutAdobeMarkerDecodesAsOpenCVReadsIt) {
  ExpectLikeOpenCV(EncodeCmyk(40, 30, JCS_CMYK, false, false), "CMYK, no Adobe marker");
}

TEST(JpegCmyk, ProbeSaysThreeChannels) {
  const absl::StatusOr<ImageView> probe = ProbeImage(EncodeCmyk(40, 30, JCS_CMYK, false, true));
  ASSERT_TRUE(probe.ok()) << probe.status();
  EXPECT_EQ(probe->channels, 3);
  EXPECT_EQ(probe->extent.width, 40);
}

TEST(JpegCmyk, TruncatedCmykIsRefused) {
  std::vector<std::uint8_t> file = EncodeCmyk(64, 64, JCS_CMYK, false, true);
  file.resize(file.size() / 2);
  EXPECT_EQ(DecodeImage(file).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cuimg
