// Strip-parallel JPEG decoding gives exactly the pixels of TurboJPEG's serial decode, for every
// subsampling and odd sizes; files it does not take (progressive, corrupt) fall back to the serial
// decode, which refuses corrupt and truncated files instead of filling them in.
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/synchronization/notification.h"
#include "codec/src/codec_internal.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/image_codec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace cuimg {
namespace {

// A photo-like image: smooth gradients and edges plus noise, so every DCT band is exercised.
std::vector<std::uint8_t> Scene(int width, int height, int channels, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(-12, 12);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double wave = 100.0 * std::sin(0.03 * x * (c + 1) + 0.02 * y) + 128.0;
        const double block = ((x / 37 + y / 23 + c) % 3) * 30.0;
        const int v = static_cast<int>(wave * 0.6 + block) + noise(rng);
        pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return pixels;
}

std::vector<std::uint8_t> Encode(int width, int height, int subsampling, int flags) {
  const int channels = subsampling == TJSAMP_GRAY ? 1 : 3;
  const std::vector<std::uint8_t> pixels = Scene(width, height, channels, width * 31 + height);
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const int status =
      tjCompress2(tj, pixels.data(), width, width * channels, height,
                  channels == 1 ? TJPF_GRAY : TJPF_BGR, &buffer, &size, subsampling, 90, flags);
  EXPECT_EQ(status, 0) << tjGetErrorStr2(tj);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  return out;
}

void ExpectSamePixels(const Image& a, const Image& b) {
  ASSERT_EQ(a.extent(), b.extent());
  ASSERT_EQ(a.channels(), b.channels());
  ASSERT_EQ(a.size_bytes(), b.size_bytes());
  std::size_t first = a.size_bytes();
  for (std::size_t i = 0; i < a.size_bytes(); ++i) {
    if (a.bytes()[i] != b.bytes()[i]) {
      first = i;
      break;
    }
  }
  EXPECT_EQ(first, a.size_bytes())
      << "first differing byte (row " << first / (a.extent().width * a.channels()) << ")";
}

using StripCase = std::tuple<int, int, int>;  // width, height, subsampling

class JpegStripDecode : public ::testing::TestWithParam<StripCase> {};

TEST_P(JpegStripDecode, EqualsTheSerialDecode) {
  const auto [width, height, subsampling] = GetParam();
  const std::vector<std::uint8_t> jpeg = Encode(width, height, subsampling, TJFLAG_ACCURATEDCT);
  const absl::StatusOr<Image> serial = DecodeImage(jpeg);
  ASSERT_TRUE(serial.ok()) << serial.status();
  for (int workers : {1, 3, 7}) {
    DecodeThreads threads(workers);
    Image strips(PixelType::kU8, serial->extent(), serial->channels());
    std::memset(strips.bytes(), 0xA5, strips.size_bytes());
    ASSERT_TRUE(DecodeJpegInStrips(jpeg, threads, strips)) << workers << " workers";
    ExpectSamePixels(*serial, strips);
    const absl::StatusOr<Image> through_api = DecodeImage(jpeg, {}, &threads);
    ASSERT_TRUE(through_api.ok()) << through_api.status();
    ExpectSamePixels(*serial, *through_api);
  }
}

INSTANTIATE_TEST_SUITE_P(SubsamplingsAndSizes, JpegStripDecode,
                         ::testing::Combine(::testing::Values(1920, 641, 333),
                                            ::testing::Values(1080, 517, 259),
                                            ::testing::Values(TJSAMP_444, TJSAMP_422, TJSAMP_420,
                                                              TJSAMP_440, TJSAMP_411,
                                                              TJSAMP_GRAY)));

TEST(JpegStripDecodeFallback, ProgressiveFilesDecodeSeriallyWithTheSamePixels) {
  const std::vector<std::uint8_t> jpeg =
      Encode(800, 600, TJSAMP_420, TJFLAG_ACCURATEDCT | TJFLAG_PROGRESSIVE);
  DecodeThreads threads(3);
  Image strips(PixelType::kU8, Extent{800, 600, 1}, 3);
  EXPECT_FALSE(DecodeJpegInStrips(jpeg, threads, strips));
  const absl::StatusOr<Image> serial = DecodeImage(jpeg);
  const absl::StatusOr<Image> with_threads = DecodeImage(jpeg, {}, &threads);
  ASSERT_TRUE(serial.ok() && with_threads.ok());
  ExpectSamePixels(*serial, *with_threads);
}

TEST(JpegStripDecodeFallback, TruncatedFilesAreRefusedNotFilledIn) {
  const std::vector<std::uint8_t> jpeg = Encode(1024, 768, TJSAMP_420, TJFLAG_ACCURATEDCT);
  // Down to the last bytes: even a file missing only its EOI marker lost nothing libjpeg needs,
  // but it is not the file that was written.
  for (std::size_t keep : {jpeg.size() / 3, jpeg.size() / 2, jpeg.size() - 10, jpeg.size() - 2}) {
    const std::vector<std::uint8_t> cut(jpeg.begin(), jpeg.begin() + keep);
    DecodeThreads threads(3);
    Image strips(PixelType::kU8, Extent{1024, 768, 1}, 3);
    // The rows past the cut carry libjpeg's warning: the strips give up.
    EXPECT_FALSE(DecodeJpegInStrips(cut, threads, strips)) << keep;
    for (DecodeThreads* with : {static_cast<DecodeThreads*>(nullptr), &threads}) {
      const absl::StatusOr<Image> decoded = DecodeImage(cut, {}, with);
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << keep;
      EXPECT_THAT(decoded.status().message(), ::testing::HasSubstr("corrupt JPEG: Premature end"))
          << keep;
    }
  }
}

TEST(JpegDecode, CorruptEntropyDataIsRefused) {
  std::vector<std::uint8_t> jpeg = Encode(640, 480, TJSAMP_444, TJFLAG_ACCURATEDCT);
  // Garbage in the middle of the scan: libjpeg warns (corrupt data, bad Huffman code) and
  // resynchronizes, which would give wrong pixels with no error.
  for (std::size_t i = jpeg.size() / 2; i < jpeg.size() / 2 + 64; ++i) jpeg[i] = 0xff;
  const absl::StatusOr<Image> decoded = DecodeImage(jpeg);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(decoded.status().message(), ::testing::HasSubstr("corrupt JPEG"));
}

TEST(JpegStripDecodeFallback, SmallImagesAreNotSplit) {
  const std::vector<std::uint8_t> jpeg = Encode(640, 200, TJSAMP_420, TJFLAG_ACCURATEDCT);
  DecodeThreads threads(7);
  Image strips(PixelType::kU8, Extent{640, 200, 1}, 3);
  EXPECT_FALSE(DecodeJpegInStrips(jpeg, threads, strips));
}

TEST(DecodeThreads, UsesOnlyIdleWorkers) {
  DecodeThreads threads(2);
  // Occupy one worker until released.
  absl::Notification started;
  absl::Notification release;
  std::thread occupant([&] {
    threads.Run(2, [&](int index, int) {
      if (index == 1) {
        started.Notify();
        release.WaitForNotification();
      }
    });
  });
  started.WaitForNotification();
  std::atomic<int> ran{0};
  EXPECT_EQ(threads.Run(5,
                        [&](int, int n) {
                          EXPECT_EQ(n, 2);
                          ++ran;
                        }),
            2);
  EXPECT_EQ(ran.load(), 2);
  release.Notify();
  occupant.join();
  EXPECT_EQ(threads.Run(5, [&](int, int) {}), 3);
}

TEST(DecodeThreads, WithoutWorkersRunsOnTheCaller) {
  DecodeThreads threads(0);
  int calls = 0;
  EXPECT_EQ(threads.Run(4,
                        [&](int index, int n) {
                          EXPECT_EQ(index, 0);
                          EXPECT_EQ(n, 1);
                          ++calls;
                        }),
            1);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace cuimg
