// nvJPEG on the GPU (skips without a GPU or without libnvjpeg.so.13): its pixels stay close to
// libjpeg-turbo's (through TurboJPEG itself, not cuimg's codec) for every sampling the route sends
// it; corrupt streams handed to it directly (past the marker walk that normally stops them) fail
// or decode, never crash, leak device errors or leave the device unusable (run under
// compute-sanitizer for the memory checks); and a decoded image feeds a work call on its device
// without a copy (counted in device buffers and staging leases, not timed).
#include <cuda_runtime_api.h>
#include <turbojpeg.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "gtest/gtest.h"
#include "server/backend/backend.h"
#include "server/backend/nvjpeg_decoder.h"
#include "server/server_options.h"
#include "tests/testing/gpu_test_env.h"

namespace cuimg {
namespace {

// A photo-like scene: smooth waves, edges and noise, so every DCT band and chroma edge counts.
std::vector<std::uint8_t> Scene(int width, int height, int channels) {
  std::mt19937 rng(width * 7 + height);
  std::uniform_int_distribution<int> noise(-10, 10);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = 90.0 * std::sin(0.05 * x * (c + 1) + 0.03 * y) + 128.0 +
                         ((x / 29 + y / 17 + c) % 3) * 25.0 + noise(rng);
        pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(std::clamp(static_cast<int>(v), 0, 255));
      }
    }
  }
  return pixels;
}

std::vector<std::uint8_t> Encode(int width, int height, int sampling, int quality = 90) {
  const int channels = sampling == TJSAMP_GRAY ? 1 : 3;
  const std::vector<std::uint8_t> pixels = Scene(width, height, channels);
  tjhandle tj = tjInitCompress();
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  EXPECT_EQ(tjCompress2(tj, pixels.data(), width, width * channels, height,
                        channels == 1 ? TJPF_GRAY : TJPF_BGR, &buffer, &size, sampling, quality,
                        TJFLAG_ACCURATEDCT),
            0);
  std::vector<std::uint8_t> out(buffer, buffer + size);
  tjFree(buffer);
  tjDestroy(tj);
  return out;
}

// libjpeg-turbo's decode of `jpeg` through its own TurboJPEG API (accurate IDCT, fancy
// upsampling: its defaults), gray or BGR: the reference nvJPEG is held to, independent of cuimg's
// codec (which decodes in strips through libjpeg).
std::vector<std::uint8_t> TurboDecode(const std::vector<std::uint8_t>& jpeg, int channels) {
  tjhandle tj = tjInitDecompress();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  EXPECT_EQ(
      tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &width, &height, &subsampling, &colorspace),
      0);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(width) * height * channels);
  EXPECT_EQ(tjDecompress2(tj, jpeg.data(), jpeg.size(), out.data(), width, width * channels, height,
                          channels == 1 ? TJPF_GRAY : TJPF_BGR, 0),
            0)
      << tjGetErrorStr2(tj);
  tjDestroy(tj);
  return out;
}

// The server's default decode batching, in `lanes` lanes.
NvjpegDevice::Batching ServerBatching(int lanes = ServerOptions().batch_lanes) {
  const ServerOptions o;
  return {o.batch_max_size, std::chrono::microseconds(o.batch_max_delay_us), nullptr, lanes};
}

// The device's decoder, or a skip reason.
struct Gpu {
  std::unique_ptr<NvjpegDevice> device;
  std::unique_ptr<NvjpegDevice::State> state;
  cudaStream_t stream = nullptr;
  std::string skip;
  // `batching`: the server's defaults unless a test says otherwise.
  explicit Gpu(NvjpegDevice::Batching batching = ServerBatching()) {
    if (!testing::HasCudaDevice()) {
      skip = "no GPU";
      return;
    }
    absl::StatusOr<std::shared_ptr<const NvjpegLibrary>> lib = NvjpegLibrary::Load();
    if (!lib.ok()) {
      skip = std::string(lib.status().message());
      return;
    }
    EXPECT_EQ(cudaSetDevice(0), cudaSuccess);
    absl::StatusOr<std::unique_ptr<NvjpegDevice>> created = NvjpegDevice::Create(*lib, batching);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return;
    device = *std::move(created);
    absl::StatusOr<std::unique_ptr<NvjpegDevice::State>> s = device->CreateState();
    EXPECT_TRUE(s.ok()) << s.status();
    state = *std::move(s);
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    std::printf("nvJPEG %s backend=%s\n", (*lib)->version().c_str(),
                device->backend_name().c_str());
  }
  ~Gpu() {
    state.reset();
    device.reset();
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  // Decodes into fresh device memory and copies the pixels back.
  absl::StatusOr<std::vector<std::uint8_t>> Decode(const std::vector<std::uint8_t>& jpeg,
                                                   const ImageView& shape) {
    void* d_out = nullptr;
    if (cudaMalloc(&d_out, shape.Bytes()) != cudaSuccess) return absl::InternalError("cudaMalloc");
    absl::Status s = device->Decode(*state, jpeg, shape, d_out, stream);
    std::vector<std::uint8_t> host(shape.Bytes());
    if (s.ok() &&
        cudaMemcpy(host.data(), d_out, host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
      s = absl::InternalError("cudaMemcpy");
    }
    cudaFree(d_out);
    if (!s.ok()) return s;
    return host;
  }
};

#define CUIMG_SKIP_WITHOUT_NVJPEG(gpu)                   \
  do {                                                   \
    if (!(gpu).skip.empty()) GTEST_SKIP() << (gpu).skip; \
    ASSERT_NE((gpu).device, nullptr);                    \
  } while (0)

TEST(JpegGpuDecode, PixelsStayCloseToLibjpegTurbo) {
  Gpu gpu;
  CUIMG_SKIP_WITHOUT_NVJPEG(gpu);
  for (int sampling : {TJSAMP_444, TJSAMP_422, TJSAMP_420, TJSAMP_440, TJSAMP_GRAY}) {
    for (auto [w, h] : {std::pair{1920, 1080}, std::pair{641, 517}, std::pair{333, 259}}) {
      const std::vector<std::uint8_t> jpeg = Encode(w, h, sampling);
      absl::StatusOr<ImageView> shape = ProbeImage(jpeg);
      ASSERT_TRUE(shape.ok());
      const std::vector<std::uint8_t> reference = TurboDecode(jpeg, shape->channels);
      ASSERT_EQ(reference.size(), shape->Bytes());
      absl::StatusOr<std::vector<std::uint8_t>> pixels = gpu.Decode(jpeg, *shape);
      ASSERT_TRUE(pixels.ok()) << pixels.status() << " sampling " << sampling << " " << w;
      int max_delta = 0;
      double sum = 0;
      for (std::size_t i = 0; i < pixels->size(); ++i) {
        const int d = std::abs(int{(*pixels)[i]} - int{reference[i]});
        max_delta = std::max(max_delta, d);
        sum += d;
      }
      const double mean = sum / static_cast<double>(pixels->size());
      std::printf("sampling %d %dx%d: max |d| %d, mean |d| %.4f\n", sampling, w, h, max_delta,
                  mean);
      // A wrong layout, channel order or plane would give tens of levels on average; IDCT and
      // upsampling differences give fractions of a level.
      EXPECT_LE(mean, 2.0) << "sampling " << sampling << " " << w << "x" << h;
      EXPECT_LE(max_delta, 64) << "sampling " << sampling << " " << w << "x" << h;
    }
  }
}

TEST(JpegGpuDecode, CorruptStreamsFailOrDecodeButNeverPoisonTheDevice) {
  Gpu gpu;
  CUIMG_SKIP_WITHOUT_NVJPEG(gpu);
  const std::vector<std::uint8_t> jpeg = Encode(640, 480, TJSAMP_420);
  absl::StatusOr<ImageView> shape = ProbeImage(jpeg);
  ASSERT_TRUE(shape.ok());
  absl::StatusOr<std::vector<std::uint8_t>> reference = gpu.Decode(jpeg, *shape);
  ASSERT_TRUE(reference.ok()) << reference.status();
  std::mt19937 rng(33);
  int failed = 0, decoded = 0;
  std::vector<std::vector<std::uint8_t>> variants;
  for (std::size_t keep = 700; keep < jpeg.size(); keep += jpeg.size() / 11) {
    variants.emplace_back(jpeg.begin(), jpeg.begin() + keep);  // truncated
  }
  for (int i = 0; i < 200; ++i) {
    std::vector<std::uint8_t> v = jpeg;
    // Past the headers (~620 bytes for this file), into the entropy-coded data.
    std::uniform_int_distribution<std::size_t> at(700, jpeg.size() - 3);
    for (int k = 0; k < 1 + i % 8; ++k) v[at(rng)] = static_cast<std::uint8_t>(rng());
    variants.push_back(std::move(v));
  }
  for (const std::vector<std::uint8_t>& v : variants) {
    absl::StatusOr<std::vector<std::uint8_t>> out = gpu.Decode(v, *shape);
    (out.ok() ? decoded : failed)++;
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  }
  std::printf("corrupt variants: %d refused by nvJPEG, %d decoded\n", failed, decoded);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The state and the device still decode the sound file, to the same pixels.
  absl::StatusOr<std::vector<std::uint8_t>> again = gpu.Decode(jpeg, *shape);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, *reference);
}

// Threads decoding at once share the hardware engine's batches (colour and gray, several sizes,
// a truncated stream among them), in one lane or in two at once: each gets its own file's pixels,
// as decoded alone, whatever becomes of the truncated one.
void ExpectConcurrentDecodesGetTheirOwnPixels(int lanes) {
  Gpu gpu(ServerBatching(lanes));
  CUIMG_SKIP_WITHOUT_NVJPEG(gpu);
  struct File {
    std::vector<std::uint8_t> jpeg;
    ImageView shape;
    std::vector<std::uint8_t> alone;
  };
  std::vector<File> files;
  for (auto [w, h, sampling] :
       {std::tuple{1920, 1080, TJSAMP_420}, std::tuple{641, 517, TJSAMP_444},
        std::tuple{800, 600, TJSAMP_GRAY}, std::tuple{333, 259, TJSAMP_422}}) {
    File f;
    f.jpeg = Encode(w, h, sampling);
    absl::StatusOr<ImageView> shape = ProbeImage(f.jpeg);
    ASSERT_TRUE(shape.ok());
    f.shape = *shape;
    absl::StatusOr<std::vector<std::uint8_t>> alone = gpu.Decode(f.jpeg, f.shape);
    ASSERT_TRUE(alone.ok()) << alone.status();
    f.alone = *std::move(alone);
    files.push_back(std::move(f));
  }
  std::vector<std::uint8_t> corrupt = files[0].jpeg;
  corrupt.resize(corrupt.size() / 2);  // truncated mid-scan
  constexpr int kThreads = 8;
  constexpr int kRounds = 25;
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0), corrupt_ok(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
      absl::StatusOr<std::unique_ptr<NvjpegDevice::State>> state = gpu.device->CreateState();
      ASSERT_TRUE(state.ok());
      cudaStream_t stream = nullptr;
      ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
      void* d_out = nullptr;
      ASSERT_EQ(cudaMalloc(&d_out, files[0].shape.Bytes()), cudaSuccess);
      for (int r = 0; r < kRounds; ++r) {
        const bool bad = t == 0 && r % 5 == 0;
        const File& f = files[(t + r) % files.size()];
        const absl::Status s = gpu.device->Decode(**state, bad ? corrupt : f.jpeg,
                                                  bad ? files[0].shape : f.shape, d_out, stream);
        if (bad) {
          corrupt_ok[t] += s.ok();
          continue;
        }
        if (!s.ok()) {
          ++failed[t];
          continue;
        }
        std::vector<std::uint8_t> host(f.shape.Bytes());
        ASSERT_EQ(cudaMemcpy(host.data(), d_out, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        wrong[t] += host != f.alone;
      }
      cudaFree(d_out);
      cudaStreamDestroy(stream);
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failed[t], 0) << "thread " << t;
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
  // Whether nvJPEG refuses the truncated stream or decodes what it has, the others are unharmed.
  std::printf("truncated stream among concurrent decodes (%d lanes): decoded %d of %d times\n",
              lanes, corrupt_ok[0], (kRounds + 4) / 5);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
}

TEST(JpegGpuDecode, ConcurrentDecodesEachGetTheirOwnPixels) {
  ExpectConcurrentDecodesGetTheirOwnPixels(1);
}

TEST(JpegGpuDecode, ConcurrentDecodesInTwoLanesEachGetTheirOwnPixels) {
  ExpectConcurrentDecodesGetTheirOwnPixels(2);
}

TEST(JpegGpuDecode, AShapeThatNvjpegReadsDifferentlyIsRefusedBeforeWriting) {
  Gpu gpu;
  CUIMG_SKIP_WITHOUT_NVJPEG(gpu);
  const std::vector<std::uint8_t> jpeg = Encode(640, 480, TJSAMP_420);
  const ImageView smaller{PixelType::kU8, Extent{320, 240, 1}, 3, nullptr};
  EXPECT_EQ(gpu.Decode(jpeg, smaller).status().code(), absl::StatusCode::kFailedPrecondition);
}

// Device buffers taken from a device's cache and pinned staging chunks leased for its copies, so
// far: what a work call's input costs on the device, counted rather than timed.
struct DeviceTraffic {
  std::uint64_t buffers = 0;
  std::uint64_t staging_leases = 0;
};

DeviceTraffic TrafficOf(const Backend& backend, int device) {
  for (const DeviceStatus& d : backend.Devices()) {
    if (d.id == device) {
      return {d.cache_hits + d.cache_misses,
              d.staging_hits + d.staging_misses + d.staging_refusals};
    }
  }
  ADD_FAILURE() << "no device " << device;
  return {};
}

TEST(JpegGpuDecode, ADecodedImageFeedsAWorkCallWithoutACopy) {
  if (!testing::HasCudaDevice()) GTEST_SKIP() << "no GPU";
  if (!NvjpegLibrary::Load().ok()) GTEST_SKIP() << NvjpegLibrary::Load().status();
  ServerOptions options;
  options.jpeg_decoder = JpegDecoderChoice::kGpu;
  absl::StatusOr<std::unique_ptr<Backend>> backend = CreateCudaBackend(options);
  ASSERT_TRUE(backend.ok()) << backend.status();
  DeviceJpegDecoder* decoder = (*backend)->jpeg_decoder();
  ASSERT_NE(decoder, nullptr);
  std::printf("%s\n", decoder->Summary().c_str());
  const std::vector<std::uint8_t> jpeg = Encode(1280, 720, TJSAMP_GRAY);
  absl::StatusOr<Image> cpu = DecodeImage(jpeg);
  ASSERT_TRUE(cpu.ok());
  absl::StatusOr<std::unique_ptr<const DeviceImage>> image = decoder->Decode(jpeg, cpu->view());
  ASSERT_TRUE(image.ok()) << image.status();
  const int device = (*image)->device();
  // A 1x1 dilation is the identity: the result is the decoded image itself.
  absl::StatusOr<StructuringElement> one =
      StructuringElement::Create(ElementSpec{ElementShape::kRect, 1, 1, 0, -1, -1, -1, {}});
  ASSERT_TRUE(one.ok()) << one.status();
  MorphologyStep step;
  step.op = MorphOp::kDilate;
  step.element = *one;
  const InputImage on_device(cpu->view(), image->get());
  ASSERT_EQ(on_device.data, nullptr) << "no host pixels to copy from";
  Image out(PixelType::kU8, cpu->extent(), 1);
  StageTimes times;
  const DeviceTraffic before = TrafficOf(**backend, device);
  ASSERT_TRUE((*backend)
                  ->Morphology(on_device, out.view(), {step}, nullptr, &times, NeverCancelled())
                  .ok());
  const DeviceTraffic after = TrafficOf(**backend, device);
  EXPECT_EQ(times.device, device) << "the call runs where the image was decoded";
  // The same call from host pixels (on this device: the only one, or the least loaded).
  Image host_out(PixelType::kU8, cpu->extent(), 1);
  StageTimes host_times;
  std::map<int, DeviceTraffic> host_before;
  for (const DeviceStatus& d : (*backend)->Devices())
    host_before[d.id] = TrafficOf(**backend, d.id);
  ASSERT_TRUE(
      (*backend)
          ->Morphology(cpu->view(), host_out.view(), {step}, nullptr, &host_times, NeverCancelled())
          .ok());
  const DeviceTraffic host_after = TrafficOf(**backend, host_times.device);
  const DeviceTraffic& host_start = host_before[host_times.device];
  // The host input takes a device buffer and a staged copy in; the decoded image takes neither.
  EXPECT_EQ(after.buffers - before.buffers + 1, host_after.buffers - host_start.buffers)
      << "the decoded image is the kernel's input, not a buffer copied into";
  EXPECT_LT(after.staging_leases - before.staging_leases,
            host_after.staging_leases - host_start.staging_leases)
      << "nothing is staged in for the decoded image";
  double sum = 0;
  for (std::size_t i = 0; i < out.size_bytes(); ++i) {
    sum += std::abs(int{out.bytes()[i]} - int{cpu->bytes()[i]});
  }
  EXPECT_LE(sum / static_cast<double>(out.size_bytes()), 2.0);
  EXPECT_EQ(std::memcmp(host_out.bytes(), cpu->bytes(), host_out.size_bytes()), 0);
}

}  // namespace
}  // namespace cuimg
