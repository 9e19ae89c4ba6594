// nvJPEG2000 on the GPU (skips without a GPU or without libnvjpeg2k.so.0): a volume's JPEG 2000
// and HTJ2K frames decode into device memory bit for bit as the CPU decoders give them (u8, u16,
// i16 with negative values, 12 bits stored, signed values in unsigned codestreams and the other
// way round); the GPU's HTJ2K encoding decodes on the CPU to the slices; corrupt frames fail or
// decode, never crash or leave the device unusable (run under compute-sanitizer too).
#include <cuda_runtime_api.h>

#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/frame_encode.h"
#include "cuimg/common/device_buffer.h"
#include "gtest/gtest.h"
#include "server/backend/nvjpeg2k_frames.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

using ::cuimg::testing::RandomImage;

// The device's decoder, or a skip reason.
struct Gpu {
  std::unique_ptr<Nvjpeg2kDevice> device;
  std::string skip;
};

Gpu MakeGpu() {
  Gpu gpu;
  if (!::cuimg::testing::HasCudaDevice()) {
    gpu.skip = "no GPU";
    return gpu;
  }
  absl::StatusOr<std::shared_ptr<const Nvjpeg2kLibrary>> lib = Nvjpeg2kLibrary::Load();
  if (!lib.ok()) {
    gpu.skip = std::string(lib.status().message());
    return gpu;
  }
  cudaSetDevice(0);
  absl::StatusOr<std::unique_ptr<Nvjpeg2kDevice>> device = Nvjpeg2kDevice::Create(*lib);
  EXPECT_TRUE(device.ok()) << device.status();
  if (device.ok()) gpu.device = std::move(*device);
  return gpu;
}

#define SKIP_WITHOUT_NVJPEG2K(gpu)                       \
  do {                                                   \
    if (!(gpu).skip.empty()) GTEST_SKIP() << (gpu).skip; \
    ASSERT_NE((gpu).device, nullptr);                    \
  } while (0)

// A CT-like slice: a disc of tissue, an edge, noise; `bits` wide, centred on zero when signed.
Image CtSlice(PixelType type, int width, int height, int bits, int seed) {
  Image image(type, Extent{width, height, 1});
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 20);
  const int top = (1 << bits) - 1;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const double r = std::hypot(x - width / 2.0, y - height / 2.0);
      double v = (r < width / 3.0 ? 0.55 : 0.1) * top + noise(rng) + (x % 17 == 0 ? top / 8 : 0);
      int q = std::clamp(static_cast<int>(v), 0, top);
      if (type == PixelType::kI16) q -= (bits == 16 ? 32768 : 1 << (bits - 1));
      const std::size_t i = static_cast<std::size_t>(y) * width + x;
      if (type == PixelType::kU8) image.As<std::uint8_t>()[i] = static_cast<std::uint8_t>(q);
      if (type == PixelType::kU16) image.As<std::uint16_t>()[i] = static_cast<std::uint16_t>(q);
      if (type == PixelType::kI16) image.As<std::int16_t>()[i] = static_cast<std::int16_t>(q);
    }
  }
  return image;
}

// Decodes `frames` on the GPU into one volume and returns it on the host; `outcomes` per frame.
std::vector<std::uint8_t> GpuDecode(const Nvjpeg2kDevice& device, FrameSyntax syntax,
                                    const std::vector<std::vector<std::uint8_t>>& frames,
                                    const FrameDescription& d, std::vector<absl::Status>* outcomes,
                                    DecodeThreads* threads, absl::Status* fault) {
  const std::size_t frame_bytes = DecodedFrameBytes(d);
  absl::StatusOr<DeviceBuffer> volume = DeviceBuffer::Allocate(frame_bytes * frames.size());
  EXPECT_TRUE(volume.ok());
  std::vector<absl::Span<const std::uint8_t>> spans(frames.begin(), frames.end());
  outcomes->assign(frames.size(), absl::UnknownError("not run"));
  *fault =
      device.DecodeFrames(syntax, spans, d, volume->data(), absl::MakeSpan(*outcomes), threads);
  std::vector<std::uint8_t> host(frame_bytes * frames.size());
  EXPECT_EQ(cudaMemcpy(host.data(), volume->data(), host.size(), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

struct Case {
  FrameSyntax syntax;
  PixelType source;              // what the codestream is encoded from
  int bits;                      // values' width in the source
  FrameDescription description;  // how the frames are declared
};

FrameDescription Describe(int bits_allocated, int bits_stored, bool is_signed) {
  FrameDescription d;
  d.rows = 80;
  d.columns = 96;
  d.bits_allocated = bits_allocated;
  d.bits_stored = bits_stored;
  d.is_signed = is_signed;
  return d;
}

class Nvjpeg2kDecodeTest : public ::testing::TestWithParam<std::tuple<FrameSyntax, int>> {};

TEST_P(Nvjpeg2kDecodeTest, EqualsTheCpuDecodeBitForBit) {
  Gpu gpu = MakeGpu();
  SKIP_WITHOUT_NVJPEG2K(gpu);
  const auto [syntax, which] = GetParam();
  // u8; u16 12-bit; u16 16-bit; i16 16-bit with negative values; i16 12-bit; 12-bit patterns of
  // signed values in an unsigned codestream read as signed; negative values read as unsigned.
  const Case cases[] = {
      {syntax, PixelType::kU8, 8, Describe(8, 8, false)},
      {syntax, PixelType::kU16, 12, Describe(16, 12, false)},
      {syntax, PixelType::kU16, 16, Describe(16, 16, false)},
      {syntax, PixelType::kI16, 16, Describe(16, 16, true)},
      {syntax, PixelType::kI16, 12, Describe(16, 12, true)},
      {syntax, PixelType::kU16, 12, Describe(16, 12, true)},
      {syntax, PixelType::kI16, 16, Describe(16, 16, false)},
  };
  const Case& c = cases[which];
  const int frames_count = 9;
  std::vector<std::vector<std::uint8_t>> frames;
  std::vector<std::uint8_t> cpu;
  for (int z = 0; z < frames_count; ++z) {
    const Image slice = CtSlice(c.source, c.description.columns, c.description.rows, c.bits, z);
    absl::StatusOr<std::vector<std::uint8_t>> frame = EncodeLosslessFrame(c.syntax, slice.view());
    ASSERT_TRUE(frame.ok()) << frame.status();
    ASSERT_EQ(Nvjpeg2kDevice::Refusal(c.syntax, c.description, *frame), "");
    absl::StatusOr<Image> decoded = DecodeFrame(c.syntax, c.description, *frame, "f");
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    cpu.insert(cpu.end(), decoded->bytes(), decoded->bytes() + decoded->size_bytes());
    frames.push_back(std::move(*frame));
  }
  DecodeThreads threads(3);
  std::vector<absl::Status> outcomes;
  absl::Status fault;
  const std::vector<std::uint8_t> gpu_values =
      GpuDecode(*gpu.device, c.syntax, frames, c.description, &outcomes, &threads, &fault);
  ASSERT_TRUE(fault.ok()) << fault;
  for (int z = 0; z < frames_count; ++z) EXPECT_TRUE(outcomes[z].ok()) << z << outcomes[z];
  EXPECT_EQ(gpu_values, cpu);
}

INSTANTIATE_TEST_SUITE_P(All, Nvjpeg2kDecodeTest,
                         ::testing::Combine(::testing::Values(FrameSyntax::kHtj2kLossless,
                                                              FrameSyntax::kJ2kLossless),
                                            ::testing::Range(0, 7)));

TEST(Nvjpeg2kEncodeTest, TheCpuDecodesTheGpusFramesToTheSlices) {
  Gpu gpu = MakeGpu();
  SKIP_WITHOUT_NVJPEG2K(gpu);
  for (PixelType type : {PixelType::kU8, PixelType::kU16, PixelType::kI16}) {
    SCOPED_TRACE(PixelTypeName(type));
    const Extent extent{131, 77, 5};
    const Image volume = RandomImage(type, extent, 13);
    absl::StatusOr<DeviceBuffer> d_volume = DeviceBuffer::Allocate(volume.size_bytes());
    ASSERT_TRUE(d_volume.ok());
    ASSERT_EQ(
        cudaMemcpy(d_volume->data(), volume.bytes(), volume.size_bytes(), cudaMemcpyHostToDevice),
        cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the upload may return before its DMA
    DecodeThreads threads(2);
    absl::StatusOr<std::vector<std::vector<std::uint8_t>>> frames =
        gpu.device->EncodeHtj2kLossless(d_volume->data(), volume.view(), &threads);
    ASSERT_TRUE(frames.ok()) << frames.status();
    ASSERT_EQ(frames->size(), 5u);
    ImageView slice = volume.view();
    slice.extent.depth = 1;
    const FrameDescription d = LosslessFrameDescription(slice);
    const std::size_t slice_bytes = slice.Bytes();
    for (int z = 0; z < 5; ++z) {
      absl::StatusOr<Image> decoded =
          DecodeFrame(FrameSyntax::kHtj2kLossless, d, (*frames)[z], "f");
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      EXPECT_EQ(std::memcmp(decoded->bytes(), volume.bytes() + z * slice_bytes, slice_bytes), 0)
          << z;
    }
  }
}

TEST(Nvjpeg2kDecodeTest, CorruptFramesFailOrDecodeAndTheDeviceStaysUsable) {
  Gpu gpu = MakeGpu();
  SKIP_WITHOUT_NVJPEG2K(gpu);
  const FrameDescription d = Describe(16, 16, true);
  const Image slice = CtSlice(PixelType::kI16, d.columns, d.rows, 16, 1);
  for (FrameSyntax syntax : {FrameSyntax::kHtj2kLossless, FrameSyntax::kJ2kLossless}) {
    const std::vector<std::uint8_t> good = *EncodeLosslessFrame(syntax, slice.view());
    // Bit flips past the main header (which the CPU's walk checks): the code-block data nvJPEG2000
    // decodes itself; and cut frames, which the walk keeps from it (refused, for the CPU).
    std::mt19937 rng(5);
    std::vector<std::vector<std::uint8_t>> frames;
    for (int k = 0; k < 48; ++k) {
      std::vector<std::uint8_t> f = good;
      for (int flip = 0; flip < 1 + k % 4; ++flip) {
        f[200 + rng() % (f.size() - 200)] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      }
      if (k % 8 == 7) f.resize(f.size() / 2);
      frames.push_back(std::move(f));
    }
    DecodeThreads threads(2);
    std::vector<absl::Status> outcomes;
    absl::Status fault;
    GpuDecode(*gpu.device, syntax, frames, d, &outcomes, &threads, &fault);
    EXPECT_TRUE(fault.ok()) << fault;
    EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    // The device still decodes a good frame exactly.
    std::vector<std::vector<std::uint8_t>> one = {good};
    const std::vector<std::uint8_t> values =
        GpuDecode(*gpu.device, syntax, one, d, &outcomes, nullptr, &fault);
    ASSERT_TRUE(fault.ok()) << fault;
    ASSERT_TRUE(outcomes[0].ok()) << outcomes[0];
    EXPECT_EQ(std::memcmp(values.data(), slice.bytes(), slice.size_bytes()), 0)
        << FrameSyntaxName(syntax);
  }
}

}  // namespace
}  // namespace cuimg
