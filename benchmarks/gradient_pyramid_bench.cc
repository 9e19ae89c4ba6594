// Kernel-time benchmark of the cuimg gradient and pyramid on the workloads: median of >= 20
// event-timed runs after warm-up, inputs rotated among 3 random buffers, with the memory floor
// (bytes read + written over the measured device copy bandwidth) and the launch count. After
// timing, each workload's output for input 0 is checked against the CPU reference ("check").
// Usage: gradient_pyramid_bench [--quick] [--filter SUBSTRING]
#include <cuda_runtime_api.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_main.h"
#include "bench_util.h"
#include "cuimg/kernels/gradient.h"
#include "cuimg/kernels/pyramid.h"
#include "cuimg/reference/gradient_reference.h"
#include "cuimg/reference/pyramid_reference.h"

namespace cuimg::bench {
namespace {

struct Workload {
  std::string name;
  Extent extent;
  bool pyramid = false;
  GradientSpec gradient;
  PyramidSpec pyramid_spec;
};

std::vector<Workload> Workloads() {
  const Extent hd{1920, 1080, 1};
  PyramidSpec cascaded;
  cascaded.mode = PyramidMode::kCascaded;
  PyramidSpec to_u8;
  to_u8.output_type = PixelType::kU8;
  GradientSpec all;
  all.magnitude = true;
  all.angle = true;
  return {
      {"gradient_1080p_u8_len7", hd, false, GradientSpec{}, {}},
      {"gradient_640x480_u8_len7", Extent{640, 480, 1}, false, GradientSpec{}, {}},
      {"gradient_320x240_u8_len7", Extent{320, 240, 1}, false, GradientSpec{}, {}},
      {"gradient_1080p_u8_len7_mag_angle", hd, false, all, {}},
      {"pyramid31_1080p_u8_f32", hd, true, {}, PyramidSpec{}},
      {"pyramid31_cascaded_1080p_u8_f32", hd, true, {}, cascaded},
      {"pyramid31_1080p_u8_u8", hd, true, {}, to_u8},
  };
}

std::vector<std::uint8_t> RandomBytes(std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint8_t> host(bytes);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < bytes; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(&host[i], &v, std::min<std::size_t>(8, bytes - i));
  }
  return host;
}

std::string Verdict(bool ok) { return ok ? "ok" : "FAIL"; }

// gx, gy (and magnitude) of input 0 within 1e-4 of the largest |reference| per pixel.
absl::StatusOr<std::string> CheckGradient(const Workload& w, const Image& input,
                                          const std::vector<float>& got) {
  CUIMG_ASSIGN_OR_RETURN(GradientImages want, GradientReference(input, w.gradient));
  const std::int64_t n = w.extent.Pixels();
  const Image* planes[] = {&want.gx, &want.gy, &want.magnitude};
  bool ok = true;
  for (int k = 0; k < (w.gradient.magnitude ? 3 : 2); ++k) {
    double max_ref = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      max_ref = std::max(max_ref, std::abs(double{planes[k]->As<float>()[i]}));
    }
    for (std::int64_t i = 0; i < n && ok; ++i) {
      ok = std::abs(double{got[k * n + i]} - planes[k]->As<float>()[i]) <= 1e-4 * max_ref + 1e-6;
    }
  }
  return Verdict(ok);
}

// Every level of input 0 equal to the reference bit for bit.
absl::StatusOr<std::string> CheckPyramid(const Workload& w, const Image& input,
                                         const PyramidPlan& plan,
                                         const std::vector<std::uint8_t>& packed) {
  CUIMG_ASSIGN_OR_RETURN(std::vector<Image> want, PyramidReference(input, w.pyramid_spec));
  bool ok = want.size() == plan.Levels().size();
  for (std::size_t i = 0; ok && i < want.size(); ++i) {
    const PyramidLevel& level = plan.Levels()[i];
    if (w.pyramid_spec.output_type == PixelType::kF32) {
      const float* got = reinterpret_cast<const float*>(packed.data() + level.offset_bytes);
      for (std::int64_t j = 0; ok && j < level.width * level.height; ++j) {
        ok = got[j] == want[i].As<float>()[j];
      }
    } else {
      ok = std::memcmp(packed.data() + level.offset_bytes, want[i].bytes(), level.bytes) == 0;
    }
  }
  return Verdict(ok);
}

absl::Status Run(const Workload& w, double bandwidth, int runs, cudaStream_t stream) {
  const std::size_t in_bytes = static_cast<std::size_t>(w.extent.Pixels());  // u8 input
  constexpr int kInputs = 3;
  std::vector<DeviceBuffer> inputs;
  Image input0(PixelType::kU8, w.extent);
  for (int i = 0; i < kInputs; ++i) {
    const std::vector<std::uint8_t> host = RandomBytes(in_bytes, 1234 + i);
    if (i == 0) std::memcpy(input0.bytes(), host.data(), in_bytes);
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer in, DeviceBuffer::Allocate(in_bytes));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(in.data(), host.data(), in_bytes, cudaMemcpyHostToDevice),
                               "fill input");
    inputs.push_back(std::move(in));
  }
  std::size_t bytes_moved = 0;
  int launches = 0;
  std::string describe;
  std::string check;
  Timing t;
  if (!w.pyramid) {
    CUIMG_ASSIGN_OR_RETURN(GradientPlan plan,
                           GradientPlan::Create(PixelType::kU8, w.extent, w.gradient));
    const std::int64_t n = w.extent.Pixels();
    const int planes = 2 + (w.gradient.magnitude ? 1 : 0) + (w.gradient.angle ? 1 : 0);
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(planes * n * sizeof(float)));
    float* base = out.As<float>();
    float* magnitude = w.gradient.magnitude ? base + 2 * n : nullptr;
    float* angle = w.gradient.angle ? base + (planes - 1) * n : nullptr;
    auto run = [&](int i) {
      return plan.Run(inputs[i % kInputs].data(), base, base + n, magnitude, angle, stream);
    };
    CUIMG_ASSIGN_OR_RETURN(t, TimeOnStream(stream, 3, runs, run));
    CUIMG_RETURN_IF_ERROR(run(0));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "check run");
    std::vector<float> got(static_cast<std::size_t>(planes * n));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(got.data(), base, got.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "copy back");
    CUIMG_ASSIGN_OR_RETURN(check, CheckGradient(w, input0, got));
    bytes_moved = in_bytes + static_cast<std::size_t>(planes) * n * sizeof(float);
    launches = plan.LaunchCount();
    describe = plan.Describe();
  } else {
    CUIMG_ASSIGN_OR_RETURN(PyramidPlan plan,
                           PyramidPlan::Create(PixelType::kU8, w.extent, w.pyramid_spec));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(plan.OutputBytes()));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
    auto run = [&](int i) {
      return plan.Run(inputs[i % kInputs].data(), out.data(), ws.data(), stream);
    };
    CUIMG_ASSIGN_OR_RETURN(t, TimeOnStream(stream, 3, runs, run));
    CUIMG_RETURN_IF_ERROR(run(0));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "check run");
    std::vector<std::uint8_t> packed(plan.OutputBytes());
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(packed.data(), out.data(), packed.size(), cudaMemcpyDeviceToHost), "copy back");
    CUIMG_ASSIGN_OR_RETURN(check, CheckPyramid(w, input0, plan, packed));
    // Floor: the u8 input read once plus every level written once.
    bytes_moved = in_bytes;
    for (const PyramidLevel& level : plan.Levels()) bytes_moved += level.bytes;
    launches = plan.LaunchCount();
    describe = plan.Describe();
  }
  const double floor_us = bytes_moved / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"launches\":%d,\"bytes_moved\":%zu,\"floor_us\":%.2f,"
      "\"x_floor\":%.2f,\"plan\":\"%s\",\"check\":\"%s\"",
      w.name, t.median_us, t.p10_us, t.p90_us, t.runs, launches, bytes_moved, floor_us,
      t.median_us / floor_us, describe, check));
  return check == "ok" ? absl::OkStatus() : absl::InternalError("result check failed");
}

}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(argc, argv, "gradient_pyramid_bench", false, &args)) return 2;
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "gradient_pyramid_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  return bench::RunWorkloads(bench::Workloads(), args.filter, [&](const auto& w) {
    return bench::Run(w, device->bandwidth, args.runs(), device->stream.get());
  });
}
