// Kernel-time benchmark of connected-component labelling and the mask steps on issue 48's
// workloads: median of event-timed runs after warm-up (bench_util.h), with the memory floor
// (input read once, labels or output written once, over the measured device copy bandwidth).
// Label times include the statistics left on the device; ReadRegions (a host round trip) is
// timed apart, as "read_regions_us", on the host clock. Label rows also give each phase's median
// GPU time ("phases_us": events recorded at every LabelPhaseMark, in runs of their own).
// Usage: label_bench [--quick] [--filter SUBSTRING]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_main.h"
#include "bench_util.h"
#include "cuimg/kernels/label.h"
#include "cuimg/kernels/mask_steps.h"
#include "tests/testing/random_image.h"
#include "tests/testing/segmentation_images.h"

namespace cuimg::bench {
namespace {

enum class Kind { kLabel, kFillHoles, kRemoveSmall, kKeepLargest };

struct Workload {
  std::string name;
  Kind kind;
  Extent extent;
  Connectivity connectivity;
  std::optional<PixelType> intensity;  // kLabel: statistics of an intensity image
  // The mask: "blobs" (balls with holes, a segmentation), "maze" (one corridor tree through the
  // whole image), "noise" (half the pixels, the most runs and atomics).
  std::string mask;
};

std::vector<Workload> Workloads() {
  const Extent hd{1920, 1080, 1};
  const Extent ct{512, 512, 300};
  return {
      {"label_1080p_blobs_conn8", Kind::kLabel, hd, Connectivity::k8, std::nullopt, "blobs"},
      {"label_1080p_blobs_conn8_f32_stats", Kind::kLabel, hd, Connectivity::k8, PixelType::kF32,
       "blobs"},
      {"label_1080p_maze_conn4", Kind::kLabel, hd, Connectivity::k4, std::nullopt, "maze"},
      {"label_1080p_noise_conn8", Kind::kLabel, hd, Connectivity::k8, std::nullopt, "noise"},
      {"label_ct_blobs_conn26_i16_stats", Kind::kLabel, ct, Connectivity::k26, PixelType::kI16,
       "blobs"},
      {"label_ct_blobs_conn6", Kind::kLabel, ct, Connectivity::k6, std::nullopt, "blobs"},
      {"fill_holes_1080p_u8_blobs", Kind::kFillHoles, hd, Connectivity::k4, std::nullopt, "blobs"},
      {"fill_holes_1080p_u8_maze", Kind::kFillHoles, hd, Connectivity::k4, std::nullopt, "maze"},
      {"fill_holes_ct_u8_blobs", Kind::kFillHoles, ct, Connectivity::k6, std::nullopt, "blobs"},
      {"remove_small_ct_u8_blobs", Kind::kRemoveSmall, ct, Connectivity::k26, std::nullopt,
       "blobs"},
      {"keep_largest_1080p_u8_blobs", Kind::kKeepLargest, hd, Connectivity::k8, std::nullopt,
       "blobs"},
  };
}

Image MakeMask(const Workload& w) {
  const Extent& e = w.extent;
  Image mask;
  if (w.mask == "maze") {
    mask = testing::MazeMask(e, 2);
  } else if (w.mask == "noise") {
    mask = testing::NoiseMask(e, 0.5, 3);
  } else if (e.depth > 1) {
    mask = testing::BlobMask(e, 60, 10, 60, true, 4);
  } else {
    mask = testing::BlobMask(e, 400, 5, 60, true, 5);
  }
  for (std::int64_t i = 0; i < e.Pixels(); ++i) mask.As<std::uint8_t>()[i] *= 255;
  return mask;
}

absl::StatusOr<DeviceBuffer> Upload(const Image& image) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(image.size_bytes()));
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(d.data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice), "upload");
  return d;
}

// DIR/NAME.npy of `pixels` values of `type` on the device (--dump); nothing without a folder.
absl::Status DumpDevice(const std::string& dir, const std::string& name, PixelType type,
                        const Extent& e, const void* d_data) {
  if (dir.empty()) return absl::OkStatus();
  Image host(type, e, 1, Image::kUninitialized);
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(host.bytes(), d_data, host.size_bytes(), cudaMemcpyDeviceToHost), "dump");
  return DumpImage(dir, name, host.view());
}

// The median GPU time of each phase of `run` over `runs` runs, as a JSON object in phase order:
// an event is recorded at the start and at every mark, so a phase's time is from the end of the
// previous phase's launches to the end of its own.
absl::StatusOr<std::string> ProfilePhases(
    cudaStream_t stream, int runs, const std::function<absl::Status(const LabelPhaseMark&)>& run) {
  std::vector<CudaEvent> events;
  std::vector<std::string> names;
  std::map<std::string, std::vector<double>> us;
  for (int i = 0; i < runs; ++i) {
    CUIMG_RETURN_IF_ERROR(HoldStream(stream, kHoldUs));
    names.clear();
    absl::Status recorded;
    const auto record = [&]() -> absl::Status {
      if (events.size() <= names.size()) {
        CUIMG_ASSIGN_OR_RETURN(CudaEvent e, CudaEvent::Create());
        events.push_back(std::move(e));
      }
      return events[names.size()].Record(stream);
    };
    CUIMG_RETURN_IF_ERROR(record());
    names.push_back("start");
    CUIMG_RETURN_IF_ERROR(run([&](const char* phase) {
      if (recorded.ok()) recorded = record();
      names.push_back(phase);
    }));
    CUIMG_RETURN_IF_ERROR(recorded);
    CUIMG_RETURN_IF_ERROR(events[names.size() - 1].Synchronize());
    for (std::size_t j = 1; j < names.size(); ++j) {
      CUIMG_ASSIGN_OR_RETURN(float ms, CudaEvent::ElapsedMs(events[j - 1], events[j]));
      us[names[j]].push_back(ms * 1e3);
    }
  }
  std::string json = "{";
  for (std::size_t j = 1; j < names.size(); ++j) {
    std::vector<double>& v = us[names[j]];
    std::sort(v.begin(), v.end());
    absl::StrAppendFormat(&json, "%s\"%s\":%.1f", j > 1 ? "," : "", names[j], v[v.size() / 2]);
  }
  return json + "}";
}

absl::Status Run(const Workload& w, double bandwidth, int runs, cudaStream_t stream,
                 const std::string& dump_dir) {
  const Image mask = MakeMask(w);
  CUIMG_RETURN_IF_ERROR(DumpImage(dump_dir, w.name + ".in", mask.view()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, Upload(mask));
  const std::size_t pixels = static_cast<std::size_t>(w.extent.Pixels());
  std::string detail;
  std::size_t bytes = pixels;  // the u8 mask, read
  std::optional<Timing> timing;
  double read_regions_us = 0;
  std::size_t regions = 0;
  if (w.kind == Kind::kLabel) {
    LabelSpec spec;
    spec.connectivity = w.connectivity;
    CUIMG_ASSIGN_OR_RETURN(LabelPlan plan,
                           LabelPlan::Create(PixelType::kU8, w.extent, spec, w.intensity));
    std::optional<DeviceBuffer> d_intensity;
    if (w.intensity.has_value()) {
      const Image intensity = testing::RandomImage(*w.intensity, w.extent, 6, 0, true);
      CUIMG_RETURN_IF_ERROR(DumpImage(dump_dir, w.name + ".intensity", intensity.view()));
      CUIMG_ASSIGN_OR_RETURN(d_intensity, Upload(intensity));
      bytes += pixels * PixelSize(*w.intensity);
    }
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer labels, DeviceBuffer::Allocate(pixels * 4));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
    bytes += pixels * 4;
    CUIMG_ASSIGN_OR_RETURN(timing, TimeOnStream(stream, 3, runs, [&](int) {
                             return plan.Run(d_in.data(),
                                             d_intensity ? d_intensity->data() : nullptr,
                                             labels.As<std::uint32_t>(), ws.data(), stream);
                           }));
    CUIMG_ASSIGN_OR_RETURN(
        std::string phases, ProfilePhases(stream, runs, [&](const LabelPhaseMark& mark) {
          return plan.Run(d_in.data(), d_intensity ? d_intensity->data() : nullptr,
                          labels.As<std::uint32_t>(), ws.data(), stream, NeverCancelled(), mark);
        }));
    const auto start = std::chrono::steady_clock::now();
    CUIMG_ASSIGN_OR_RETURN(std::vector<RegionStats> stats, plan.ReadRegions(ws.data(), stream));
    read_regions_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    regions = stats.size();
    CUIMG_RETURN_IF_ERROR(
        DumpDevice(dump_dir, w.name + ".out", PixelType::kU32, w.extent, labels.data()));
    detail =
        absl::StrFormat("\"launches\":%d,\"plan\":\"%s\",\"workspace_mb\":%.1f,\"phases_us\":%s",
                        plan.LaunchCount(), plan.Describe(), plan.WorkspaceBytes() / 1e6, phases);
  } else {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer out, DeviceBuffer::Allocate(pixels));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws,
                           DeviceBuffer::Allocate(MaskStepWorkspaceBytes(w.extent)));
    bytes += pixels;
    SeededFillSpec fill;
    fill.connectivity = w.connectivity;
    fill.range = std::array<double, 2>{0, 0};
    fill.seed_border = true;
    fill.fill = 255;
    CUIMG_ASSIGN_OR_RETURN(timing, TimeOnStream(stream, 3, runs, [&](int) -> absl::Status {
                             switch (w.kind) {
                               case Kind::kFillHoles:
                                 return FillUnseededComponentsOnDevice(
                                     PixelType::kU8, w.extent, fill, d_in.data(), nullptr,
                                     PixelType::kU8, out.data(), ws.data(), stream);
                               case Kind::kRemoveSmall:
                                 return RemoveSmallOnDevice(PixelType::kU8, w.extent,
                                                            w.connectivity, 1000, d_in.data(),
                                                            out.data(), ws.data(), stream);
                               case Kind::kKeepLargest:
                               case Kind::kLabel:
                                 break;
                             }
                             return KeepLargestOnDevice(PixelType::kU8, w.extent, w.connectivity,
                                                        d_in.data(), out.data(), ws.data(), stream);
                           }));
    detail = "\"plan\":\"mask step\"";
    CUIMG_RETURN_IF_ERROR(
        DumpDevice(dump_dir, w.name + ".out", PixelType::kU8, w.extent, out.data()));
  }
  const double floor_us = bytes / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"bytes_moved\":%zu,\"floor_us\":%.2f,\"x_floor\":%.2f,"
      "\"regions\":%zu,\"read_regions_us\":%.1f,%s",
      w.name, timing->median_us, timing->p10_us, timing->p90_us, timing->runs, bytes, floor_us,
      timing->median_us / floor_us, regions, read_regions_us, detail));
  return absl::OkStatus();
}

}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(argc, argv, "label_bench", false, &args)) return 2;
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "label_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  return bench::RunWorkloads(bench::Workloads(), args.filter, [&](const auto& w) {
    return bench::Run(w, device->bandwidth, args.runs(), device->stream.get(), args.dump_dir);
  });
}
