// nvJPEG against libjpeg-turbo on JPEG files: per file, the route the server would take
// (jpeg_header.h), the pixel difference between the two decoders (max and mean |d| over every
// sample), and the time of each decode as the server runs it (the GPU one into device memory,
// returning once its stream is idle; the CPU one serial, as under load). Run on the GPU machine:
//   jpeg_decode_compare [--iterations N] FILE.jpg...
// Prints one line per file and a JSON line per file (for BENCHMARKS.md).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cuimg/codec/image_codec.h"
#include "cuimg/codec/jpeg_header.h"
#include "server/backend/nvjpeg_decoder.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

template <typename Fn>
std::vector<double> TimeMs(int iterations, const Fn& fn) {
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    fn();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  return ms;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = 200;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else {
      files.push_back(argv[i]);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: jpeg_decode_compare [--iterations N] FILE.jpg...\n");
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const cuimg::NvjpegLibrary>> lib = cuimg::NvjpegLibrary::Load();
  if (!lib.ok()) {
    std::fprintf(stderr, "%s\n", std::string(lib.status().message()).c_str());
    return 1;
  }
  if (cudaSetDevice(0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  absl::StatusOr<std::unique_ptr<cuimg::NvjpegDevice>> device = cuimg::NvjpegDevice::Create(*lib);
  if (!device.ok()) {
    std::fprintf(stderr, "%s\n", std::string(device.status().message()).c_str());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<cuimg::NvjpegDevice::State>> state = (*device)->CreateState();
  cudaStream_t stream = nullptr;
  if (!state.ok() || cudaStreamCreate(&stream) != cudaSuccess) {
    std::fprintf(stderr, "nvJPEG state or stream: %s\n", state.status().ToString().c_str());
    return 1;
  }
  std::printf("nvJPEG %s (%s) backend=%s, %d iterations per file\n", (*lib)->version().c_str(),
              (*lib)->path().c_str(), (*device)->backend_name().c_str(), iterations);
  int failures = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<std::uint8_t> jpeg((std::istreambuf_iterator<char>(in)),
                                         std::istreambuf_iterator<char>());
    absl::StatusOr<cuimg::JpegHeader> header = cuimg::ReadJpegHeader(jpeg);
    const std::string refusal = header.ok() ? cuimg::JpegGpuRefusal(*header, (*device)->hardware())
                                            : std::string(header.status().message());
    absl::StatusOr<cuimg::Image> cpu = cuimg::DecodeImage(jpeg);
    if (!cpu.ok()) {
      std::printf("%s: CPU decode fails: %s\n", path.c_str(), cpu.status().ToString().c_str());
      ++failures;
      continue;
    }
    const cuimg::ImageView shape = cpu->view();
    void* d_out = nullptr;
    if (cudaMalloc(&d_out, shape.Bytes()) != cudaSuccess) return 1;
    const absl::Status gpu_status = (*device)->Decode(**state, jpeg, shape, d_out, stream);
    if (!gpu_status.ok()) {
      std::printf("%s: %dx%dx%d route=%s, nvJPEG refuses it: %s\n", path.c_str(),
                  static_cast<int>(shape.extent.width), static_cast<int>(shape.extent.height),
                  shape.channels, refusal.empty() ? "gpu" : ("cpu (" + refusal + ")").c_str(),
                  gpu_status.ToString().c_str());
      cudaFree(d_out);
      continue;
    }
    std::vector<std::uint8_t> gpu(shape.Bytes());
    cudaMemcpy(gpu.data(), d_out, gpu.size(), cudaMemcpyDeviceToHost);
    int max_delta = 0;
    double sum = 0;
    std::size_t over_2 = 0;
    for (std::size_t i = 0; i < gpu.size(); ++i) {
      const int d = std::abs(int{gpu[i]} - int{cpu->bytes()[i]});
      max_delta = std::max(max_delta, d);
      sum += d;
      over_2 += d > 2;
    }
    const double mean = sum / static_cast<double>(gpu.size());
    const std::vector<double> gpu_ms = TimeMs(iterations, [&] {
      if (!(*device)->Decode(**state, jpeg, shape, d_out, stream).ok()) std::abort();
    });
    const std::vector<double> cpu_ms = TimeMs(std::max(1, iterations / 10), [&] {
      if (!cuimg::DecodeImage(jpeg).ok()) std::abort();
    });
    cudaFree(d_out);
    std::printf(
        "%s: %dx%dx%d %zu bytes route=%s | max |d| %d, mean |d| %.4f, samples |d|>2 %.4f%% | "
        "nvJPEG p50 %.3f ms p90 %.3f ms | libjpeg-turbo p50 %.3f ms\n",
        path.c_str(), static_cast<int>(shape.extent.width), static_cast<int>(shape.extent.height),
        shape.channels, jpeg.size(), refusal.empty() ? "gpu" : ("cpu (" + refusal + ")").c_str(),
        max_delta, mean, 100.0 * static_cast<double>(over_2) / static_cast<double>(gpu.size()),
        Percentile(gpu_ms, 0.5), Percentile(gpu_ms, 0.9), Percentile(cpu_ms, 0.5));
    std::printf(
        "{\"file\": \"%s\", \"width\": %d, \"height\": %d, \"channels\": %d, \"max_abs_diff\": %d, "
        "\"mean_abs_diff\": %.5f, \"nvjpeg_p50_ms\": %.4f, \"nvjpeg_p90_ms\": %.4f, "
        "\"turbo_p50_ms\": %.4f, \"nvjpeg_backend\": \"%s\"}\n",
        path.c_str(), static_cast<int>(shape.extent.width), static_cast<int>(shape.extent.height),
        shape.channels, max_delta, mean, Percentile(gpu_ms, 0.5), Percentile(gpu_ms, 0.9),
        Percentile(cpu_ms, 0.5), (*device)->backend_name().c_str());
  }
  state->reset();
  cudaStreamDestroy(stream);
  return failures == 0 ? 0 : 1;
}
