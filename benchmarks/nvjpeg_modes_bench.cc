// Which nvJPEG mode decodes a camera frame fastest, alone and under concurrency: the hardware
// engines through the batched API (one image, or B at once), and the GPU-Huffman backend through
// the decoupled API, each from T host threads with their own state and stream. It settles how the
// server should decode (issue 33: one 1080p frame in <= 0.6 ms, >= 2000 frames/s at 16 in flight).
// Run on the GPU machine with libnvjpeg.so.13 on the loader's path:
//   nvjpeg_modes_bench [--iterations N] [--batch_scan] FILE.jpg
// Prints one line per mode: per-call latency p50/p90 and frames/s over all threads.
// --batch_scan: only the hardware engines, with the server's flags (strict bitstream checks,
// interpolated upsampling), at batch sizes 1-16, 21, 28, 32 and 64 from 1 and 2 threads: how the
// engines share a batch's frames, which sets the server's --batch_max_size.
#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

#define CHECK_NV(expr)                                                                  \
  do {                                                                                  \
    const nvjpegStatus_t s_ = (expr);                                                   \
    if (s_ != NVJPEG_STATUS_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s:%d %s -> nvjpeg status %d\n", __FILE__, __LINE__, #expr, \
                   static_cast<int>(s_));                                               \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)
#define CHECK_CUDA(expr)                                                                           \
  do {                                                                                             \
    const cudaError_t e_ = (expr);                                                                 \
    if (e_ != cudaSuccess) {                                                                       \
      std::fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

struct Frame {
  std::vector<unsigned char> bytes;
  int width = 0, height = 0;
};

// One decoder per thread: whatever the mode needs, made once; Decode() decodes `batch` copies.
class Worker {
 public:
  virtual ~Worker() = default;
  virtual void Decode() = 0;
};

class HardwareBatched : public Worker {
 public:
  HardwareBatched(nvjpegHandle_t h, const Frame& f, int batch) : h_(h), f_(f), batch_(batch) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHECK_NV(nvjpegJpegStateCreate(h_, &state_));
    CHECK_NV(nvjpegDecodeBatchedInitialize(h_, state_, batch_, 1, NVJPEG_OUTPUT_BGRI));
    out_.resize(batch_);
    for (int i = 0; i < batch_; ++i) {
      void* p = nullptr;
      CHECK_CUDA(cudaMalloc(&p, static_cast<std::size_t>(f.width) * f.height * 3));
      buffers_.push_back(p);
      out_[i] = nvjpegImage_t{};
      out_[i].channel[0] = static_cast<unsigned char*>(p);
      out_[i].pitch[0] = static_cast<std::size_t>(f.width) * 3;
      data_.push_back(f.bytes.data());
      lengths_.push_back(f.bytes.size());
    }
  }
  ~HardwareBatched() override {
    for (void* p : buffers_) cudaFree(p);
    nvjpegJpegStateDestroy(state_);
    cudaStreamDestroy(stream_);
  }
  void Decode() override {
    CHECK_NV(nvjpegDecodeBatched(h_, state_, data_.data(), lengths_.data(), out_.data(), stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
  }

 private:
  nvjpegHandle_t h_;
  const Frame& f_;
  int batch_;
  cudaStream_t stream_ = nullptr;
  nvjpegJpegState_t state_ = nullptr;
  std::vector<void*> buffers_;
  std::vector<nvjpegImage_t> out_;
  std::vector<const unsigned char*> data_;
  std::vector<std::size_t> lengths_;
};

// The decoupled API with an explicit backend: host phase, transfer, device phase.
class Decoupled : public Worker {
 public:
  Decoupled(nvjpegHandle_t h, const Frame& f, nvjpegBackend_t backend) : h_(h), f_(f) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CHECK_NV(nvjpegDecoderCreate(h_, backend, &decoder_));
    CHECK_NV(nvjpegDecoderStateCreate(h_, decoder_, &state_));
    CHECK_NV(nvjpegBufferPinnedCreate(h_, nullptr, &pinned_));
    CHECK_NV(nvjpegBufferDeviceCreate(h_, nullptr, &device_));
    CHECK_NV(nvjpegStateAttachPinnedBuffer(state_, pinned_));
    CHECK_NV(nvjpegStateAttachDeviceBuffer(state_, device_));
    CHECK_NV(nvjpegJpegStreamCreate(h_, &stream_jpeg_));
    CHECK_NV(nvjpegDecodeParamsCreate(h_, &params_));
    CHECK_NV(nvjpegDecodeParamsSetOutputFormat(params_, NVJPEG_OUTPUT_BGRI));
    CHECK_CUDA(cudaMalloc(&buffer_, static_cast<std::size_t>(f.width) * f.height * 3));
    out_.channel[0] = static_cast<unsigned char*>(buffer_);
    out_.pitch[0] = static_cast<std::size_t>(f.width) * 3;
  }
  ~Decoupled() override {
    cudaFree(buffer_);
    nvjpegDecodeParamsDestroy(params_);
    nvjpegJpegStreamDestroy(stream_jpeg_);
    nvjpegJpegStateDestroy(state_);
    nvjpegBufferDeviceDestroy(device_);
    nvjpegBufferPinnedDestroy(pinned_);
    nvjpegDecoderDestroy(decoder_);
    cudaStreamDestroy(stream_);
  }
  void Decode() override {
    CHECK_NV(nvjpegJpegStreamParse(h_, f_.bytes.data(), f_.bytes.size(), 0, 0, stream_jpeg_));
    CHECK_NV(nvjpegDecodeJpegHost(h_, decoder_, state_, params_, stream_jpeg_));
    CHECK_NV(nvjpegDecodeJpegTransferToDevice(h_, decoder_, state_, stream_jpeg_, stream_));
    CHECK_NV(nvjpegDecodeJpegDevice(h_, decoder_, state_, &out_, stream_));
    CHECK_CUDA(cudaStreamSynchronize(stream_));
  }

 private:
  nvjpegHandle_t h_;
  const Frame& f_;
  cudaStream_t stream_ = nullptr;
  nvjpegJpegDecoder_t decoder_ = nullptr;
  nvjpegJpegState_t state_ = nullptr;
  nvjpegBufferPinned_t pinned_ = nullptr;
  nvjpegBufferDevice_t device_ = nullptr;
  nvjpegJpegStream_t stream_jpeg_ = nullptr;
  nvjpegDecodeParams_t params_ = nullptr;
  void* buffer_ = nullptr;
  nvjpegImage_t out_{};
};

// T threads each decoding `calls` times after a warm-up; latency per call, frames/s overall.
template <typename Make>
void Measure(const char* name, int threads, int calls, int frames_per_call, const Make& make) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < threads; ++t) workers.push_back(make());
  for (auto& w : workers) {
    for (int i = 0; i < 5; ++i) w->Decode();
  }
  std::vector<std::vector<double>> ms(threads);
  std::atomic<int> ready{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      for (int i = 0; i < calls; ++i) {
        const auto s = Clock::now();
        workers[t]->Decode();
        ms[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
      }
    });
  }
  for (auto& p : pool) p.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : ms) all.insert(all.end(), v.begin(), v.end());
  const double fps = static_cast<double>(threads) * calls * frames_per_call / seconds;
  std::printf("%-28s threads %2d batch %2d | call p50 %.3f ms p90 %.3f ms | %.0f frames/s\n", name,
              threads, frames_per_call, Percentile(all, 0.5), Percentile(all, 0.9), fps);
  std::printf(
      "{\"mode\": \"%s\", \"threads\": %d, \"batch\": %d, \"p50_ms\": %.4f, "
      "\"p90_ms\": %.4f, \"frames_per_s\": %.1f}\n",
      name, threads, frames_per_call, Percentile(all, 0.5), Percentile(all, 0.9), fps);
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  bool batch_scan = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--batch_scan") == 0) {
      batch_scan = true;
    } else {
      path = argv[i];
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: nvjpeg_modes_bench [--iterations N] [--batch_scan] FILE.jpg\n");
    return 2;
  }
  CHECK_CUDA(cudaSetDevice(0));
  Frame frame;
  {
    std::ifstream in(path, std::ios::binary);
    frame.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  nvjpegHandle_t hw = nullptr, def = nullptr;
  const unsigned hw_flags =
      batch_scan ? NVJPEG_FLAGS_BITSTREAM_STRICT | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION
                 : NVJPEG_FLAGS_DEFAULT;
  const bool have_hw = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, hw_flags, &hw) ==
                       NVJPEG_STATUS_SUCCESS;
  CHECK_NV(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &def));
  {
    int components = 0;
    nvjpegChromaSubsampling_t sub{};
    int widths[NVJPEG_MAX_COMPONENT], heights[NVJPEG_MAX_COMPONENT];
    CHECK_NV(nvjpegGetImageInfo(def, frame.bytes.data(), frame.bytes.size(), &components, &sub,
                                widths, heights));
    frame.width = widths[0];
    frame.height = heights[0];
    std::printf("%s: %dx%d, %d components, subsampling %d, %zu bytes; hardware backend %s\n",
                path.c_str(), frame.width, frame.height, components, static_cast<int>(sub),
                frame.bytes.size(), have_hw ? "yes" : "no");
  }
  if (batch_scan) {
    if (!have_hw) {
      std::fprintf(stderr, "no hardware backend\n");
      return 1;
    }
    for (int threads : {1, 2}) {
      for (int batch : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 21, 28, 32, 64}) {
        // About the same number of frames per row, at least 20 calls a thread.
        const int calls = std::max(20, iterations * 4 / (threads * batch));
        Measure("hardware_batched_server_flags", threads, calls, batch,
                [&] { return std::unique_ptr<Worker>(new HardwareBatched(hw, frame, batch)); });
      }
    }
    nvjpegDestroy(hw);
    nvjpegDestroy(def);
    return 0;
  }
  for (int threads : {1, 2, 4, 8, 16}) {
    const int calls = std::max(20, iterations / threads);
    if (have_hw) {
      for (int batch : {1, 2, 4, 8}) {
        if (threads > 1 && batch > 4) continue;
        Measure("hardware_batched", threads, calls, batch,
                [&] { return std::unique_ptr<Worker>(new HardwareBatched(hw, frame, batch)); });
      }
    }
    Measure("decoupled_gpu_hybrid", threads, calls, 1, [&] {
      return std::unique_ptr<Worker>(new Decoupled(def, frame, NVJPEG_BACKEND_GPU_HYBRID));
    });
    Measure("decoupled_hybrid", threads, calls, 1, [&] {
      return std::unique_ptr<Worker>(new Decoupled(def, frame, NVJPEG_BACKEND_HYBRID));
    });
  }
  if (hw != nullptr) nvjpegDestroy(hw);
  nvjpegDestroy(def);
  return 0;
}
