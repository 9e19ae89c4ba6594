// Kernel-time benchmark of the segmentation steps (issue 48) on the targets: fill_holes
// of a 1080p blob mask and of a 512x512x300 one, open_rec with a 9x9 ellipse on basketball1.png
// upscaled to 1080p, hmax 10 on a 512x512x300 CT-like i16 volume, and fill_holes / open_rec on
// 1080p spirals and mazes whose geodesic paths cover the image. For each: the median time of the
// Morphology step (MorphologyPlan::Run: marker, clamp, the route's check and the reconstruction,
// the host's looks included), of its reconstruction alone by the route the step takes (the
// union-find for two-valued images, else the bricks) and by the bricks (with their rounds and
// brick runs), and the cuCIM-class anchor (clamped_filter_loop.h) on the same marker: its passes
// and time, and whether it reached cuimg's result.
// Usage: reconstruction_bench [--quick] [--filter SUBSTRING] [--dump DIR] [--variants LIST]
// [--profile] [--no-anchor]
// (--dump: each input and the step's result as DIR/<workload>.{in,out}.npy, for
// benchmarks/anchors/cucim_segmentation.py; --variants: comma-separated tunings timed beside
// the default: q (the queue, the default) or r (rounds), and o (first runs in raster order):
// ReconstructionTuning, e.g. r,o,ro;
// --profile: each variant's rounds one by one (worklist length, iterations, microseconds);
// --no-anchor: skip the cuCIM-class loop)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench_main.h"
#include "bench_util.h"
#include "clamped_filter_loop.h"
#include "cuimg/kernels/morphology.h"
#include "cuimg/kernels/reconstruction.h"
#include "cuimg/reference/segmentation_images.h"
#include "tests/testing/segmentation_cases.h"

namespace cuimg::bench {
namespace {

// The anchor stops after this many passes (a one-pixel spiral would take about a million) or
// this much wall time, whichever comes first (then it reports converged: false).
constexpr int kAnchorMaxPasses = 20000;
constexpr double kAnchorMaxSeconds = 10;

struct Options {
  std::vector<std::string> variants;
  bool profile = false;
  bool anchor = true;
};

// "r" -> rounds (the default); "q" -> the queue; "o" -> bricks first run in raster order.
bool ParseVariant(const std::string& text, ReconstructionTuning* t) {
  for (const char c : text) {
    if (c == 'r') {
      t->schedule = ReconstructionSchedule::kRounds;
    } else if (c == 'q') {
      t->schedule = ReconstructionSchedule::kQueue;
    } else if (c == 'o') {
      t->raster_first = true;
    } else {
      return false;
    }
  }
  return true;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

struct Workload {
  std::string name;
  std::function<absl::StatusOr<Image>()> input;
  MorphologyStep step;  // a global step
};

MorphologyStep Step(MorphOp op, Connectivity c = Connectivity::kDefault) {
  MorphologyStep s;
  s.op = op;
  s.connectivity = c;
  return s;
}

MorphologyStep OpenRec9() {
  MorphologyStep s = Step(MorphOp::kOpenRec);
  s.element =
      *StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 9, 9, 0, -1, -1, -1, {}});
  return s;
}

std::vector<Workload> Workloads() {
  const Extent hd{1920, 1080, 1};
  const Extent ct{512, 512, 300};
  MorphologyStep hmax = Step(MorphOp::kHMax);
  hmax.h = 10;
  return {
      {"fill_holes_1080p_blobs_u8",
       [=] { return absl::StatusOr<Image>(BlobImage(PixelType::kU8, hd, 1)); },
       Step(MorphOp::kFillHoles)},
      {"fill_holes_512x512x300_blobs_u8",
       [=] { return absl::StatusOr<Image>(BlobImage(PixelType::kU8, ct, 2)); },
       Step(MorphOp::kFillHoles)},
      {"open_rec_ellipse9_1080p_natural_u8", [=] { return testing::NaturalImage(hd); }, OpenRec9()},
      {"hmax10_512x512x300_ct_i16", [=] { return absl::StatusOr<Image>(CtLikeVolume(ct, 3)); },
       hmax},
      {"fill_holes_1080p_spiral_u8",
       [=] { return absl::StatusOr<Image>(testing::OpenSpiral(PixelType::kU8, hd)); },
       Step(MorphOp::kFillHoles)},
      {"fill_holes_1080p_maze_u8",
       [=] { return absl::StatusOr<Image>(testing::OpenMaze(PixelType::kU8, hd, 4)); },
       Step(MorphOp::kFillHoles)},
      {"open_rec_ellipse9_1080p_spiral_u8",
       [=] {
         return absl::StatusOr<Image>(
             testing::WithCornerBlock(SpiralImage(PixelType::kU8, hd), 15));
       },
       OpenRec9()},
      {"open_rec_ellipse9_1080p_maze_u8",
       [=] {
         return absl::StatusOr<Image>(
             testing::WithCornerBlock(MazeImage(PixelType::kU8, hd, 5), 15));
       },
       OpenRec9()},
  };
}

absl::StatusOr<DeviceBuffer> Upload(const Image& image) {
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(image.size_bytes()));
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(d.data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice), "upload");
  return d;
}

// Median, p10 and p90 of `runs` calls of run(), each between a reset() (not timed) and events
// on `stream` (Run synchronizes inside, so the stream is not held).
absl::StatusOr<Timing> TimeWithReset(cudaStream_t stream, int runs,
                                     const std::function<absl::Status()>& reset,
                                     const std::function<absl::Status()>& run) {
  CUIMG_ASSIGN_OR_RETURN(CudaEvent start, CudaEvent::Create());
  CUIMG_ASSIGN_OR_RETURN(CudaEvent stop, CudaEvent::Create());
  std::vector<double> us;
  for (int i = 0; i < runs + 2; ++i) {
    CUIMG_RETURN_IF_ERROR(reset());
    CUIMG_RETURN_IF_ERROR(start.Record(stream));
    CUIMG_RETURN_IF_ERROR(run());
    CUIMG_RETURN_IF_ERROR(stop.Record(stream));
    CUIMG_RETURN_IF_ERROR(stop.Synchronize());
    CUIMG_ASSIGN_OR_RETURN(float ms, CudaEvent::ElapsedMs(start, stop));
    if (i >= 2) us.push_back(ms * 1e3);  // two warm-up runs
  }
  std::sort(us.begin(), us.end());
  auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1) + 0.5)]; };
  return Timing{at(0.5), at(0.1), at(0.9), runs};
}

absl::Status Run(const Workload& w, double bandwidth, int runs, cudaStream_t stream,
                 const std::string& dump_dir, const Options& options) {
  CUIMG_ASSIGN_OR_RETURN(Image input, w.input());
  CUIMG_RETURN_IF_ERROR(DumpImage(dump_dir, w.name + ".in", input.view()));
  const PixelType type = input.type();
  const Extent& e = input.extent();
  const std::size_t bytes = input.size_bytes();
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, Upload(input));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(bytes));

  // The step as the service runs it.
  CUIMG_ASSIGN_OR_RETURN(MorphologyPlan plan, MorphologyPlan::Create(type, e, {w.step}));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(
      Timing step, TimeWithReset(
                       stream, runs, [] { return absl::OkStatus(); },
                       [&] { return plan.Run(d_in.data(), d_out.data(), ws.data(), stream); }));

  // Its reconstruction alone, from the marker the step starts from (made by the step's own
  // marker pass: for open_rec the erosion, else reconstruct with the marker the step would write).
  MorphologyStep marker_step = w.step;
  const bool dilate = w.step.op != MorphOp::kFillHoles;
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_marker, DeviceBuffer::Allocate(bytes));
  if (w.step.op == MorphOp::kOpenRec) {
    marker_step.op = MorphOp::kErode;
  } else {
    // fill_holes' and hmax's markers are per pixel: the host writes them.
    Image marker = input;
    VisitAnyPixelType(type, [&](auto tag) {
      using T = decltype(tag);
      T* m = marker.As<T>();
      for (std::int64_t i = 0; i < e.Pixels(); ++i) {
        const std::int64_t x = i % e.width, y = i / e.width % e.height, z = i / e.SlicePixels();
        if (w.step.op == MorphOp::kFillHoles) {
          const bool border = x == 0 || y == 0 || x == e.width - 1 || y == e.height - 1 ||
                              (e.depth > 1 && (z == 0 || z == e.depth - 1));
          if (!border) m[i] = std::numeric_limits<T>::max();
        } else {
          m[i] =
              static_cast<T>(std::max<double>(std::numeric_limits<T>::lowest(), m[i] - w.step.h));
        }
      }
    });
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(d_marker.data(), marker.bytes(), bytes, cudaMemcpyHostToDevice), "marker");
  }
  if (w.step.op == MorphOp::kOpenRec) {
    CUIMG_ASSIGN_OR_RETURN(MorphologyPlan erode, MorphologyPlan::Create(type, e, {marker_step}));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ews, DeviceBuffer::Allocate(erode.WorkspaceBytes()));
    CUIMG_RETURN_IF_ERROR(erode.Run(d_in.data(), d_marker.data(), ews.data(), stream));
  }
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_r, DeviceBuffer::Allocate(bytes));
  auto reset = [&]() -> absl::Status {
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(d_r.data(), d_marker.data(), bytes, cudaMemcpyDeviceToDevice, stream),
        "reset marker");
    return absl::OkStatus();
  };
  // Each route of the reconstruction alone: its median and what one run did. The step's result
  // and every route's must agree (the bench checks itself).
  std::vector<std::uint8_t> a(bytes), b(bytes);
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(a.data(), d_out.data(), bytes, cudaMemcpyDeviceToHost),
                             "read step");
  CUIMG_RETURN_IF_ERROR(DumpImage(dump_dir, w.name + ".out", ImageView{type, e, 1, a.data()}));
  bool agree = true;
  struct RouteRun {
    Timing timing;
    ReconstructionStats stats;
    std::int64_t bricks = 0;
  };
  auto time_route = [&](ReconstructionRoute route,
                        const ReconstructionTuning& tuning) -> absl::StatusOr<RouteRun> {
    CUIMG_ASSIGN_OR_RETURN(
        ReconstructionPlan rec,
        ReconstructionPlan::Create(
            type, e, dilate ? ReconstructionMethod::kDilation : ReconstructionMethod::kErosion,
            w.step.connectivity, route, tuning));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer rws, DeviceBuffer::Allocate(rec.WorkspaceBytes()));
    RouteRun run;
    run.bricks = rec.Bricks();
    CUIMG_RETURN_IF_ERROR(reset());
    CUIMG_RETURN_IF_ERROR(
        rec.Run(d_in.data(), d_r.data(), rws.data(), stream, NeverCancelled(), &run.stats));
    CUIMG_ASSIGN_OR_RETURN(run.timing, TimeWithReset(stream, runs, reset, [&] {
                             return rec.Run(d_in.data(), d_r.data(), rws.data(), stream);
                           }));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(b.data(), d_r.data(), bytes, cudaMemcpyDeviceToHost),
                               "read reconstruction");
    agree = agree && a == b;
    if (options.profile && route == ReconstructionRoute::kBricks) {
      // A run of its own, the rounds one by one.
      run.stats.profile = true;
      CUIMG_RETURN_IF_ERROR(reset());
      CUIMG_RETURN_IF_ERROR(
          rec.Run(d_in.data(), d_r.data(), rws.data(), stream, NeverCancelled(), &run.stats));
    }
    return run;
  };
  auto profile_json = [](const ReconstructionStats& st) {
    std::vector<std::string> bricks, iterations, us;
    for (const ReconstructionRound& r : st.per_round) {
      bricks.push_back(absl::StrFormat("%d", r.bricks));
      iterations.push_back(absl::StrFormat("%lld", static_cast<long long>(r.iterations)));
      us.push_back(absl::StrFormat("%.1f", r.us));
    }
    return absl::StrFormat(",\"round_bricks\":[%s],\"round_iterations\":[%s],\"round_us\":[%s]",
                           Join(bricks), Join(iterations), Join(us));
  };
  CUIMG_ASSIGN_OR_RETURN(RouteRun automatic,
                         time_route(ReconstructionRoute::kAuto, ReconstructionTuning{}));
  CUIMG_ASSIGN_OR_RETURN(RouteRun bricks,
                         time_route(ReconstructionRoute::kBricks, ReconstructionTuning{}));
  // Floor: the mask read and the image read and written once.
  const double floor_us = 3.0 * bytes / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"route\":\"%s\",\"reconstruction_us\":%.2f,"
      "\"bricks_us\":%.2f,\"rounds\":%d,\"launched_rounds\":%d,\"brick_runs\":%lld,"
      "\"bricks\":%lld,\"floor_us\":%.2f,\"results_agree\":%s,\"plan\":\"%s\"",
      w.name, step.median_us, step.p10_us, step.p90_us, step.runs,
      automatic.stats.two_levels ? "union-find" : "bricks", automatic.timing.median_us,
      bricks.timing.median_us, bricks.stats.rounds, bricks.stats.launched_rounds,
      static_cast<long long>(bricks.stats.bricks), static_cast<long long>(bricks.bricks), floor_us,
      agree ? "true" : "false", plan.Describe()));
  // The tunings, each against the step's result.
  const auto print_variant = [&](const std::string& name, const RouteRun& run, bool same) {
    PrintJson(absl::StrFormat(
        "\"impl\":\"cuimg_bricks\",\"workload\":\"%s\",\"variant\":\"%s\",\"bricks_us\":%.2f,"
        "\"p10_us\":%.2f,\"p90_us\":%.2f,\"rounds\":%d,\"brick_runs\":%lld,\"iterations\":%lld,"
        "\"bricks\":%lld,\"results_agree\":%s%s",
        w.name, name, run.timing.median_us, run.timing.p10_us, run.timing.p90_us, run.stats.rounds,
        static_cast<long long>(run.stats.bricks), static_cast<long long>(run.stats.iterations),
        static_cast<long long>(run.bricks), same ? "true" : "false",
        options.profile ? profile_json(run.stats) : std::string()));
  };
  if (!options.variants.empty() && !automatic.stats.two_levels) {
    print_variant("default", bricks, agree);
    for (const std::string& v : options.variants) {
      ReconstructionTuning tuning;
      if (!ParseVariant(v, &tuning)) return absl::InvalidArgumentError("bad variant " + v);
      agree = true;
      CUIMG_ASSIGN_OR_RETURN(RouteRun run, time_route(ReconstructionRoute::kBricks, tuning));
      print_variant(v, run, agree);
    }
  }

  // The cuCIM-class anchor from the same marker (every marker here is already clamped by the
  // mask: the border and the maximum for fill_holes, f - h for hmax, an erosion by a centred
  // element for open_rec).
  if (options.anchor && (type == PixelType::kU8 || type == PixelType::kI16)) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer scratch, DeviceBuffer::Allocate(bytes));
    CUIMG_RETURN_IF_ERROR(reset());
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "anchor setup");
    const auto t0 = std::chrono::steady_clock::now();
    CUIMG_ASSIGN_OR_RETURN(
        LoopResult loop,
        ClampedFilterLoop(type, e, dilate, w.step.connectivity, d_in.data(), d_r.data(),
                          scratch.data(), kAnchorMaxPasses, kAnchorMaxSeconds, stream));
    CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "anchor");
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    CUIMG_CUDA_RETURN_IF_ERROR(cudaMemcpy(b.data(), d_r.data(), bytes, cudaMemcpyDeviceToHost),
                               "read anchor");
    PrintJson(absl::StrFormat(
        "\"impl\":\"cucim_class_loop\",\"workload\":\"%s\",\"wall_us\":%.0f,\"passes\":%d,"
        "\"connectivity\":%d,\"converged\":%s,\"equals_cuimg\":%s",
        w.name, us, loop.passes, static_cast<int>(ResolveConnectivity(w.step.connectivity, e)),
        loop.converged ? "true" : "false", loop.converged && a == b ? "true" : "false"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  // This benchmark's own flags, then the common ones.
  bench::Options options;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--variants" && i + 1 < argc) {
      for (const absl::string_view v : absl::StrSplit(argv[++i], ',', absl::SkipEmpty())) {
        options.variants.emplace_back(v);
      }
    } else if (arg == "--profile") {
      options.profile = true;
    } else if (arg == "--no-anchor") {
      options.anchor = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(static_cast<int>(rest.size()), rest.data(), "reconstruction_bench",
                             false, &args)) {
    return 2;
  }
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "reconstruction_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  return bench::RunWorkloads(bench::Workloads(), args.filter, [&](const auto& w) {
    return bench::Run(w, device->bandwidth, args.runs(), device->stream.get(), args.dump_dir,
                      options);
  });
}
