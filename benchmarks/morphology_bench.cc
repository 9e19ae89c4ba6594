// Kernel-time benchmark of cuimg morphology on the workloads: median of >= 20 event-timed
// runs after warm-up, inputs rotated among 3 random buffers, with the memory floor
// (bytes read + written over the measured device copy bandwidth).
// Usage: morphology_bench [--quick] [--filter SUBSTRING]
#include <cuda_runtime_api.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_main.h"
#include "bench_util.h"
#include "cuimg/kernels/morphology.h"

namespace cuimg::bench {
namespace {

struct Workload {
  std::string name;
  PixelType type;
  Extent extent;
  std::vector<MorphologyStep> steps;
};

MorphologyStep Step(MorphOp op, ElementShape shape, int w, int h, int d = 0) {
  MorphologyStep step;
  step.op = op;
  step.element = *StructuringElement::Create(ElementSpec{shape, w, h, d, -1, -1, -1, {}});
  return step;
}

std::vector<Workload> Workloads() {
  const Extent ct{512, 512, 300};
  const Extent hd{1920, 1080, 1};
  return {
      {"dilate_volume_disk9_u8",
       PixelType::kU8,
       ct,
       {Step(MorphOp::kDilate, ElementShape::kEllipse, 9, 9)}},
      {"dilate_volume_disk9_i16",
       PixelType::kI16,
       ct,
       {Step(MorphOp::kDilate, ElementShape::kEllipse, 9, 9)}},
      {"dilate_2d_disk63_u8",
       PixelType::kU8,
       hd,
       {Step(MorphOp::kDilate, ElementShape::kEllipse, 63, 63)}},
      {"dilate_2d_rect63_u8",
       PixelType::kU8,
       hd,
       {Step(MorphOp::kDilate, ElementShape::kRect, 63, 63)}},
      {"erode_volume_ball4_i16",
       PixelType::kI16,
       ct,
       {Step(MorphOp::kErode, ElementShape::kEllipse, 9, 9, 9)}},
      {"open_volume_disk9_u8",
       PixelType::kU8,
       ct,
       {Step(MorphOp::kOpen, ElementShape::kEllipse, 9, 9)}},
      {"dilate_2d_3x3_640x480_u8",
       PixelType::kU8,
       Extent{640, 480, 1},
       {Step(MorphOp::kDilate, ElementShape::kRect, 3, 3)}},
  };
}

// Random bytes: every u8/u16/i16 value is a valid pixel (no f32 workloads here).
absl::Status FillRandom(void* device, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::uint8_t> host(bytes);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(&host[i], &v, 8);
  }
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice),
                             "fill input");
  return absl::OkStatus();
}

absl::Status Run(const Workload& w, double bandwidth, int runs, cudaStream_t stream) {
  CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(w.type, w.extent, w.steps));
  const std::size_t bytes = static_cast<std::size_t>(w.extent.Pixels()) * PixelSize(w.type);
  constexpr int kInputs = 3;
  std::vector<DeviceBuffer> inputs;
  for (int i = 0; i < kInputs; ++i) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer in, DeviceBuffer::Allocate(bytes));
    CUIMG_RETURN_IF_ERROR(FillRandom(in.data(), bytes, 1234 + i));
    inputs.push_back(std::move(in));
  }
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(bytes));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(Timing t, TimeOnStream(stream, 3, runs, [&](int i) {
                           return plan.Run(inputs[i % kInputs].data(), out.data(), ws.data(),
                                           stream);
                         }));
  const double floor_us = 2.0 * bytes / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"launches\":%d,\"bytes_moved\":%zu,\"floor_us\":%.2f,"
      "\"x_floor\":%.2f,\"plan\":\"%s\"",
      w.name, t.median_us, t.p10_us, t.p90_us, t.runs, plan.LaunchCount(), 2 * bytes, floor_us,
      t.median_us / floor_us, plan.Describe()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(argc, argv, "morphology_bench", false, &args)) return 2;
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "morphology_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  return bench::RunWorkloads(bench::Workloads(), args.filter, [&](const auto& w) {
    return bench::Run(w, device->bandwidth, args.runs(), device->stream.get());
  });
}
