// The route of an encoded input on a backend with a GPU JPEG decoder (DecodeOnDevice), checked
// on the CPU with a recording decoder: sound baseline JPEGs go to the device with TurboJPEG's
// shape; PNGs, every kind nvJPEG cannot take and every structural fault go to the CPU decoder
// (which refuses corrupt files) without the device decoder seeing them, each counted by reason;
// a failed device decode falls back too.
#include <turbojpeg.h>

#include <vector>

#include "cuimg/codec/image_codec.h"
#include "gtest/gtest.h"
#include "server/rpc/image_input.h"

namespace cuimg {
namespace {

class FakeImage final : public DeviceImage {
 public:
  int device() const override { return 3; }
};

class RecordingDecoder final : public DeviceJpegDecoder {
 public:
  explicit RecordingDecoder(bool hardware, bool fail = false) : hardware_(hardware), fail_(fail) {}
  bool hardware() const override { return hardware_; }
  std::string Summary() const override { return "fake"; }
  absl::StatusOr<std::unique_ptr<const DeviceImage>> Decode(absl::Span<const std::uint8_t>,
                                                            const ImageView& shape) override {
    ++calls;
    last_shape = shape;
    if (fail_) return absl::InvalidArgumentError("nvJPEG decode: BAD_JPEG");
    return std::unique_ptr<const DeviceImage>(std::make_unique<FakeImage>());
  }
  int calls = 0;
  ImageView last_shape;

 private:
  bool hardware_;
  bool fail_;
};

std::vector<std::uint8_t> Encode(int width, int height, int sampling, int flags, int format) {
  const int channels = tjPixelSize[format];
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * channels);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<std::uint8_t>(i * 13 % 241);
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, pixels.data(), width, width * channels, height, format, &buffer, &size,
                        sampling, 85, flags),
            0);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  return out;
}

struct Routed {
  bool on_device;
  StageTimes times;
  ImageView shape;
};

Routed Route(const std::vector<std::uint8_t>& file, DeviceJpegDecoder& decoder,
             DecodeLimits limits = {}) {
  Routed r;
  r.on_device = DecodeOnDevice(file, limits, decoder, &r.times, &r.shape) != nullptr;
  return r;
}

TEST(JpegRouting, BaselineColourAndGrayGoToTheDeviceWithTheProbedShape) {
  for (bool hardware : {true, false}) {
    RecordingDecoder decoder(hardware);
    Routed colour = Route(Encode(641, 480, TJSAMP_420, 0, TJPF_BGR), decoder);
    EXPECT_TRUE(colour.on_device);
    EXPECT_EQ(colour.times.decode_device, 3);
    EXPECT_EQ(colour.times.decode_fallback, nullptr);
    EXPECT_EQ(colour.shape.extent, (Extent{641, 480, 1}));
    EXPECT_EQ(colour.shape.channels, 3);
    EXPECT_EQ(decoder.last_shape.channels, 3);
    Routed gray = Route(Encode(64, 33, TJSAMP_GRAY, 0, TJPF_GRAY), decoder);
    EXPECT_TRUE(gray.on_device);
    EXPECT_EQ(gray.shape.channels, 1);
    EXPECT_EQ(decoder.calls, 2);
  }
}

TEST(JpegRouting, ProgressiveGoesToTheCpuOnlyWithTheHardwareDecoder) {
  const std::vector<std::uint8_t> file = Encode(320, 240, TJSAMP_420, TJFLAG_PROGRESSIVE, TJPF_BGR);
  RecordingDecoder hardware(true);
  Routed r = Route(file, hardware);
  EXPECT_FALSE(r.on_device);
  EXPECT_STREQ(r.times.decode_fallback, "unsupported");
  EXPECT_EQ(r.times.decode_device, -1);
  EXPECT_EQ(hardware.calls, 0);
  RecordingDecoder hybrid(false);
  EXPECT_TRUE(Route(file, hybrid).on_device);
}

TEST(JpegRouting, CmykGoesToTheCpu) {
  RecordingDecoder decoder(false);
  Routed r = Route(Encode(40, 30, TJSAMP_444, 0, TJPF_CMYK), decoder);
  EXPECT_FALSE(r.on_device);
  EXPECT_STREQ(r.times.decode_fallback, "unsupported");
  EXPECT_EQ(decoder.calls, 0);
}

TEST(JpegRouting, StructuralFaultsGoToTheCpuWhichRefusesThem) {
  const std::vector<std::uint8_t> file = Encode(640, 480, TJSAMP_420, 0, TJPF_BGR);
  RecordingDecoder decoder(true);
  for (std::size_t keep : {file.size() / 2, file.size() - 2}) {
    const std::vector<std::uint8_t> cut(file.begin(), file.begin() + keep);
    Routed r = Route(cut, decoder);
    EXPECT_FALSE(r.on_device) << keep;
    EXPECT_STREQ(r.times.decode_fallback, "header");
    // The CPU decoder, where the file now goes, refuses it as before.
    EXPECT_EQ(DecodeImage(cut).status().code(), absl::StatusCode::kInvalidArgument) << keep;
  }
  EXPECT_EQ(decoder.calls, 0);
}

TEST(JpegRouting, OverTheLimitsGoesToTheCpuWhichWordsTheRefusal) {
  RecordingDecoder decoder(true);
  DecodeLimits limits;
  limits.max_pixels = 100;
  Routed r = Route(Encode(64, 48, TJSAMP_420, 0, TJPF_BGR), decoder, limits);
  EXPECT_FALSE(r.on_device);
  EXPECT_EQ(decoder.calls, 0);
}

TEST(JpegRouting, PngIsTheCpusWithoutAFallbackCount) {
  const Image pixels(PixelType::kU8, Extent{8, 8, 1}, 1);
  absl::StatusOr<std::vector<std::uint8_t>> png = EncodePng(pixels.view());
  ASSERT_TRUE(png.ok());
  RecordingDecoder decoder(true);
  Routed r = Route(*png, decoder);
  EXPECT_FALSE(r.on_device);
  EXPECT_EQ(r.times.decode_fallback, nullptr);
  EXPECT_EQ(decoder.calls, 0);
}

TEST(JpegRouting, AFailedDeviceDecodeFallsBackToTheCpu) {
  RecordingDecoder decoder(true, /*fail=*/true);
  Routed r = Route(Encode(64, 48, TJSAMP_420, 0, TJPF_BGR), decoder);
  EXPECT_FALSE(r.on_device);
  EXPECT_EQ(decoder.calls, 1);
  EXPECT_STREQ(r.times.decode_fallback, "nvjpeg");
  EXPECT_EQ(r.times.decode_device, -1);
}

}  // namespace
}  // namespace cuimg
