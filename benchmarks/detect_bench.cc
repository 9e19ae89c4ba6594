// GPU time of pedestrian detection (DetectPlan: HOG blocks of every level, then SVM scores of every
// window) on the workloads, 1920x1080 and 768x576 BGR at scale 1.05, stride 8, all levels,
// the default people model: median of >= 20 event-timed runs on a held stream after warm-up, inputs
// rotated among 3 frames of vtest.avi (CUIMG_DATA/vtest_NN.jpg, resized with INTER_LINEAR_EXACT;
// synthetic textures when absent, said in "input"). The stages are timed apart too (blocks on
// rotated inputs; scores on 3 workspaces filled beforehand), with the launch count. Then input 0's
// detections are checked against the CPU reference ("check": ok when precision and recall of the
// grouped boxes are >= 0.95 at IoU >= 0.5). The floor counts the input read once and the block
// features written once and read once. scores_per_window_us and total_per_window_us time issue
// 5's scores kernel (one thread per window; ScoresPath::kPerWindow) in the same run, the "before"
// of issue 33; scores_every_window_us (and the batches' scores_every_window_per_frame_us) the exact
// kernel over every window, the "before" of issue 50's filter.
// Then batches (issue 50, impl "cuimg_batch"): plans of 1, 4, 8 and 16 frames of each size, each
// frame in a buffer of its own (the 3 inputs in turn), timed as above: the median GPU time a
// launch pair and a frame, blocks and scores apart. "check": every frame's hits equal, bit for
// bit, those of the plan of one frame on the same input (the batch of 1 is the path above).
// CUIMG_BENCH_FRAMES=N instead: one plan of N frames a workload, timed, with a digest of its
// features and hits (RunFrames).
// Usage: detect_bench [--quick] [--filter SUBSTRING]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "bench_main.h"
#include "bench_util.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/kernels/group_rectangles.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_model_file.h"
#include "cuimg/reference/hog_reference.h"

namespace cuimg::bench {
namespace {

struct Workload {
  std::string name;
  int width;
  int height;
};

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

// Three BGR frames of the workload's size: vtest frames when present, else smooth textures.
std::vector<Image> Inputs(const Workload& w, std::string* source) {
  const std::string data = EnvOr("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data");
  std::vector<Image> out;
  for (int i = 0; i < 3; ++i) {
    std::ifstream in(absl::StrFormat("%s/vtest_%02d.jpg", data, i), std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                          std::istreambuf_iterator<char>());
    absl::StatusOr<Image> frame = DecodeImage(bytes);
    if (!frame.ok() || frame->channels() != 3) break;
    absl::StatusOr<Image> sized = ResizeLinearExactU8(frame->view(), w.width, w.height);
    if (!sized.ok()) break;
    out.push_back(*std::move(sized));
  }
  if (out.size() == 3) {
    *source = "vtest";
    return out;
  }
  *source = "synthetic";
  out.clear();
  std::mt19937 rng(5);
  for (int i = 0; i < 3; ++i) {
    Image image(PixelType::kU8, Extent{w.width, w.height, 1}, 3);
    for (int y = 0; y < w.height; ++y) {
      for (int x = 0; x < w.width; ++x) {
        for (int c = 0; c < 3; ++c) {
          const double v = 128 + 90 * std::sin(x * 0.05 + i + c) * std::cos(y * 0.03 - i) +
                           static_cast<double>(rng() % 21) - 10;
          image.bytes()[(static_cast<std::size_t>(y) * w.width + x) * 3 + c] =
              static_cast<std::uint8_t>(std::fmin(255, std::fmax(0, v)));
        }
      }
    }
    out.push_back(std::move(image));
  }
  return out;
}

double IoU(const Detection& a, const Detection& b) {
  const int x0 = std::max(a.x, b.x), y0 = std::max(a.y, b.y);
  const int x1 = std::min(a.x + a.width, b.x + b.width);
  const int y1 = std::min(a.y + a.height, b.y + b.height);
  if (x1 <= x0 || y1 <= y0) return 0;
  const double inter = 1.0 * (x1 - x0) * (y1 - y0);
  return inter / (1.0 * a.width * a.height + 1.0 * b.width * b.height - inter);
}

// Greedy one-to-one matches at IoU >= 0.5.
int Matches(const std::vector<Detection>& a, const std::vector<Detection>& b) {
  std::vector<std::tuple<double, int, int>> pairs;
  for (int i = 0; i < static_cast<int>(a.size()); ++i) {
    for (int j = 0; j < static_cast<int>(b.size()); ++j) {
      if (IoU(a[i], b[j]) >= 0.5) pairs.emplace_back(-IoU(a[i], b[j]), i, j);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<bool> ua(a.size()), ub(b.size());
  int n = 0;
  for (const auto& [neg, i, j] : pairs) {
    if (ua[i] || ub[j]) continue;
    ua[i] = ub[j] = true;
    ++n;
  }
  return n;
}

absl::Status Run(const Workload& w, const HogModel& model, double bandwidth, int runs,
                 cudaStream_t stream) {
  std::string source;
  const std::vector<Image> inputs = Inputs(w, &source);
  const DetectSpec spec;  // OpenCV's defaults: stride 8, scale 1.05, all levels, group 2
  CUIMG_ASSIGN_OR_RETURN(DetectPlan plan, DetectPlan::Create(inputs[0].extent(), 3, model, spec));
  std::vector<DeviceBuffer> d_in;
  std::vector<DeviceBuffer> d_ws;
  for (const Image& image : inputs) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer in, DeviceBuffer::Allocate(image.size_bytes()));
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(in.data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice),
        "fill input");
    d_in.push_back(std::move(in));
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
    d_ws.push_back(std::move(ws));
  }
  const std::size_t weight_bytes = model.weights.size() * sizeof(float);
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_weights, DeviceBuffer::Allocate(weight_bytes));
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(d_weights.data(), model.weights.data(), weight_bytes, cudaMemcpyHostToDevice),
      "weights");
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_hits, DeviceBuffer::Allocate(plan.HitsBytes()));
  const float* weights = d_weights.As<float>();
  CUIMG_ASSIGN_OR_RETURN(Timing total, TimeOnStream(stream, 3, runs, [&](int i) {
                           return plan.Run({d_in[i % 3].data()}, weights, d_ws[i % 3].data(),
                                           d_hits.data(), stream);
                         }));
  CUIMG_ASSIGN_OR_RETURN(Timing blocks, TimeOnStream(stream, 3, runs, [&](int i) {
                           return plan.RunBlocks({d_in[i % 3].data()}, d_ws[i % 3].data(),
                                                 d_hits.data(), stream);
                         }));
  for (int i = 0; i < 3; ++i) {
    CUIMG_RETURN_IF_ERROR(plan.RunBlocks({d_in[i].data()}, d_ws[i].data(), d_hits.data(), stream));
  }
  // RunScores appends to the count RunBlocks zeroes: zero it per run (a 4-byte memset, timed).
  using Path = DetectPlan::ScoresPath;
  const auto time_scores = [&](Path path) {
    return TimeOnStream(stream, 3, runs, [&](int i) -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d_hits.data(), 0, sizeof(std::uint32_t), stream),
                                 "zero the hit count");
      return plan.RunScoresWith(path, weights, d_ws[i % 3].data(), d_hits.data(), stream);
    });
  };
  CUIMG_ASSIGN_OR_RETURN(Timing scores, time_scores(Path::kDefault));
  // Every window's exact score (issue 50's kernel before the filter) on the same workspaces.
  CUIMG_ASSIGN_OR_RETURN(Timing scores_every_window, time_scores(Path::kEveryWindow));
  // Issue 5's scores kernel on the same workspaces, and blocks + it: the "before" of issue 33.
  CUIMG_ASSIGN_OR_RETURN(Timing scores_per_window, time_scores(Path::kPerWindow));
  const auto before = [&](int i) -> absl::Status {
    CUIMG_RETURN_IF_ERROR(
        plan.RunBlocks({d_in[i % 3].data()}, d_ws[i % 3].data(), d_hits.data(), stream));
    return plan.RunScoresWith(Path::kPerWindow, weights, d_ws[i % 3].data(), d_hits.data(), stream);
  };
  CUIMG_ASSIGN_OR_RETURN(Timing total_per_window, TimeOnStream(stream, 3, runs, before));
  // Check input 0 against the CPU reference.
  CUIMG_RETURN_IF_ERROR(plan.Run({d_in[0].data()}, weights, d_ws[0].data(), d_hits.data(), stream));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "check run");
  std::vector<std::uint8_t> host(plan.HitsBytes());
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(host.data(), d_hits.data(), host.size(), cudaMemcpyDeviceToHost), "hits");
  const std::uint32_t count = DetectPlan::HitCount(host.data());
  const std::vector<WindowHit> hits = DetectPlan::DecodeHits(host.data(), count);
  CUIMG_ASSIGN_OR_RETURN(DetectResult want, DetectReference(inputs[0].view(), model, spec));
  const std::vector<Detection> got = FinishDetections(plan.geometry(), hits, spec);
  const std::vector<Detection> ref = FinishDetections(want.geometry, want.hits, spec);
  const int matched = Matches(got, ref);
  const double precision = got.empty() ? 1.0 : 1.0 * matched / got.size();
  const double recall = ref.empty() ? 1.0 : 1.0 * matched / ref.size();
  const bool ok = precision >= 0.95 && recall >= 0.95;
  const std::size_t bytes_moved = inputs[0].size_bytes() + 2 * plan.FeatureBytes();
  const double floor_us = bytes_moved / bandwidth * 1e6;
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg\",\"workload\":\"%s\",\"median_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"runs\":%d,\"launches\":%d,\"blocks_us\":%.2f,\"scores_us\":%.2f,"
      "\"scores_every_window_us\":%.2f,\"scores_per_window_us\":%.2f,\"total_per_window_us\":%.2f,"
      "\"levels\":%zu,\"windows\":%lld,\"raw_hits\":%u,\"reference_raw_hits\":%zu,"
      "\"detections\":%zu,\"reference_detections\":%zu,\"precision\":%.4f,\"recall\":%.4f,"
      "\"bytes_moved\":%zu,\"floor_us\":%.2f,\"x_floor\":%.2f,\"input\":\"%s\",\"plan\":\"%s\","
      "\"check\":\"%s\"",
      w.name, total.median_us, total.p10_us, total.p90_us, total.runs, plan.LaunchCount(),
      blocks.median_us, scores.median_us, scores_every_window.median_us,
      scores_per_window.median_us, total_per_window.median_us, plan.geometry().levels.size(),
      static_cast<long long>(plan.geometry().windows), count, want.hits.size(), got.size(),
      ref.size(), precision, recall, bytes_moved, floor_us, total.median_us / floor_us, source,
      plan.Describe(), ok ? "ok" : "FAIL"));
  return ok ? absl::OkStatus() : absl::InternalError("result check failed");
}

// The hits of one run of `plan` on `in`, per frame.
absl::StatusOr<std::vector<std::vector<WindowHit>>> FrameHits(const DetectPlan& plan,
                                                              const std::vector<const void*>& in,
                                                              const float* weights, void* workspace,
                                                              void* hits, cudaStream_t stream) {
  CUIMG_RETURN_IF_ERROR(plan.Run(in, weights, workspace, hits, stream));
  std::vector<std::uint8_t> host(plan.HitsBytes());
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host.data(), hits, host.size(), cudaMemcpyDeviceToHost, stream), "hits");
  CUIMG_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream), "hits");
  return plan.DecodeFrameHits(host.data(), DetectPlan::HitCount(host.data()));
}

bool SameHits(const std::vector<WindowHit>& a, const std::vector<WindowHit>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const WindowHit& x, const WindowHit& y) {
                      return x.level == y.level && x.window_x == y.window_x &&
                             x.window_y == y.window_y && x.score == y.score;
                    });
}

// Plans of `frames` frames of workload `w` (issue 50): GPU time a launch pair and a frame.
// `frames` inputs (cycling through `inputs`) on the device, each in a buffer of its own and
// `offset` bytes into it (an odd offset takes the kernels' byte path), and the model's weights.
struct DeviceFrames {
  std::vector<DeviceBuffer> buffers;
  std::vector<const void*> in;
  DeviceBuffer weights;
};
absl::StatusOr<DeviceFrames> UploadFrames(const std::vector<Image>& inputs, int frames, int offset,
                                          const HogModel& model) {
  DeviceFrames d;
  for (int f = 0; f < frames; ++f) {
    const Image& image = inputs[f % inputs.size()];
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(image.size_bytes() + offset));
    auto* at = static_cast<std::uint8_t*>(b.data()) + offset;
    CUIMG_CUDA_RETURN_IF_ERROR(
        cudaMemcpy(at, image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice), "input");
    d.in.push_back(at);
    d.buffers.push_back(std::move(b));
  }
  const std::size_t weight_bytes = model.weights.size() * sizeof(float);
  CUIMG_ASSIGN_OR_RETURN(d.weights, DeviceBuffer::Allocate(weight_bytes));
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(d.weights.data(), model.weights.data(), weight_bytes, cudaMemcpyHostToDevice),
      "weights");
  return d;
}

// A plan of several frames timed whole, its blocks launch alone and its scores launch alone.
struct PlanTimes {
  Timing total, blocks, scores, scores_every_window;
};
absl::StatusOr<PlanTimes> TimePlan(const DetectPlan& plan, absl::Span<const void* const> in,
                                   const float* weights, void* ws, void* hits, int runs,
                                   cudaStream_t stream) {
  PlanTimes t;
  CUIMG_ASSIGN_OR_RETURN(t.total, TimeOnStream(stream, 3, runs, [&](int) {
                           return plan.Run(in, weights, ws, hits, stream);
                         }));
  CUIMG_ASSIGN_OR_RETURN(t.blocks, TimeOnStream(stream, 3, runs, [&](int) {
                           return plan.RunBlocks(in, ws, hits, stream);
                         }));
  const auto time_scores = [&](DetectPlan::ScoresPath path) {
    return TimeOnStream(stream, 3, runs, [&](int) -> absl::Status {
      CUIMG_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(hits, 0, sizeof(std::uint32_t), stream),
                                 "zero the hit count");
      return plan.RunScoresWith(path, weights, ws, hits, stream);
    });
  };
  CUIMG_ASSIGN_OR_RETURN(t.scores, time_scores(DetectPlan::ScoresPath::kDefault));
  CUIMG_ASSIGN_OR_RETURN(t.scores_every_window, time_scores(DetectPlan::ScoresPath::kEveryWindow));
  return t;
}

absl::Status RunBatch(const Workload& w, const HogModel& model, int frames, int runs,
                      cudaStream_t stream) {
  std::string source;
  const std::vector<Image> inputs = Inputs(w, &source);
  const DetectSpec spec;
  CUIMG_ASSIGN_OR_RETURN(DetectPlan plan,
                         DetectPlan::Create(inputs[0].extent(), 3, model, spec, frames));
  CUIMG_ASSIGN_OR_RETURN(DetectPlan alone, DetectPlan::Create(inputs[0].extent(), 3, model, spec));
  // A buffer each, as frames gathered from several calls.
  CUIMG_ASSIGN_OR_RETURN(const DeviceFrames d_frames, UploadFrames(inputs, frames, 0, model));
  const std::vector<const void*>& in = d_frames.in;
  const float* weights = d_frames.weights.As<float>();
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_hits, DeviceBuffer::Allocate(plan.HitsBytes()));
  CUIMG_ASSIGN_OR_RETURN(const PlanTimes times,
                         TimePlan(plan, in, weights, d_ws.data(), d_hits.data(), runs, stream));
  const Timing& total = times.total;
  const Timing& blocks = times.blocks;
  const Timing& scores = times.scores;
  // Every frame's hits against the plan of one frame on its input (hits bit for bit).
  CUIMG_ASSIGN_OR_RETURN(auto got,
                         FrameHits(plan, in, weights, d_ws.data(), d_hits.data(), stream));
  bool ok = static_cast<int>(got.size()) == frames;
  std::size_t raw_hits = 0;
  for (int f = 0; ok && f < frames; ++f) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer ws, DeviceBuffer::Allocate(alone.WorkspaceBytes()));
    CUIMG_ASSIGN_OR_RETURN(auto want,
                           FrameHits(alone, {in[f]}, weights, ws.data(), d_hits.data(), stream));
    ok = SameHits(got[f], want[0]);
    raw_hits += got[f].size();
  }
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg_batch\",\"workload\":\"%s\",\"frames\":%d,\"median_us\":%.2f,"
      "\"p10_us\":%.2f,\"p90_us\":%.2f,\"runs\":%d,\"per_frame_us\":%.2f,\"blocks_us\":%.2f,"
      "\"scores_us\":%.2f,\"blocks_per_frame_us\":%.2f,\"scores_per_frame_us\":%.2f,"
      "\"scores_every_window_per_frame_us\":%.2f,"
      "\"launches\":%d,\"workspace_mb\":%.1f,\"raw_hits\":%zu,\"input\":\"%s\","
      "\"plan\":\"%s\",\"check\":\"%s\"",
      w.name, frames, total.median_us, total.p10_us, total.p90_us, total.runs,
      total.median_us / frames, blocks.median_us, scores.median_us, blocks.median_us / frames,
      scores.median_us / frames, times.scores_every_window.median_us / frames, plan.LaunchCount(),
      plan.WorkspaceBytes() / 1e6, raw_hits, source, plan.Describe(), ok ? "ok" : "FAIL"));
  return ok ? absl::OkStatus() : absl::InternalError("batch check failed");
}

// FNV-1a over the 64-bit words of `features` (whole floats, pairwise), then over every frame's
// hits: a digest that compares builds (or checkpoints) bit for bit.
std::uint64_t Digest(const std::vector<float>& features,
                     const std::vector<std::vector<WindowHit>>& hits) {
  constexpr std::uint64_t kPrime = 1099511628211ull;
  std::uint64_t hash = 1469598103934665603ull;
  for (std::size_t i = 0; i + 1 < features.size(); i += 2) {
    std::uint64_t word;
    std::memcpy(&word, &features[i], sizeof(word));
    hash = (hash ^ word) * kPrime;
  }
  const auto mix = [&hash](const void* data, std::size_t n) {
    const auto* b = static_cast<const std::uint8_t*>(data);
    for (std::size_t i = 0; i < n; ++i) hash = (hash ^ b[i]) * kPrime;
  };
  for (const auto& frame_hits : hits) {
    for (const WindowHit& h : frame_hits) {
      mix(&h.level, sizeof(h.level));
      mix(&h.window_x, sizeof(h.window_x));
      mix(&h.window_y, sizeof(h.window_y));
      mix(&h.score, sizeof(h.score));
    }
  }
  return hash;
}

// CUIMG_BENCH_FRAMES=N: only a plan of N frames of each workload (the inputs in turn, each in a
// buffer of its own, CUIMG_BENCH_INPUT_OFFSET bytes in (0; 1 makes the inputs unaligned, so the
// blocks kernel samples them byte by byte), hit threshold -0.5 so that every frame has hits),
// timed as the batch rows,
// then the Digest of its features (the workspace zeroed before the first run) and hits: equal
// digests across builds mean the same features and hits bit for bit (issue 50's kernels against
// a307ded's, whose checkpoint bench printed the same digest).
absl::Status RunFrames(const Workload& w, const HogModel& model, int frames, int offset, int runs,
                       cudaStream_t stream) {
  std::string source;
  const std::vector<Image> inputs = Inputs(w, &source);
  DetectSpec spec;
  spec.hit_threshold = -0.5;
  CUIMG_ASSIGN_OR_RETURN(DetectPlan plan,
                         DetectPlan::Create(inputs[0].extent(), 3, model, spec, frames));
  CUIMG_ASSIGN_OR_RETURN(const DeviceFrames d_frames, UploadFrames(inputs, frames, offset, model));
  const std::vector<const void*>& in = d_frames.in;
  const float* weights = d_frames.weights.As<float>();
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_CUDA_RETURN_IF_ERROR(cudaMemset(d_ws.data(), 0, plan.WorkspaceBytes()), "zero");
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_hits, DeviceBuffer::Allocate(plan.HitsBytes()));
  CUIMG_ASSIGN_OR_RETURN(const PlanTimes times,
                         TimePlan(plan, in, weights, d_ws.data(), d_hits.data(), runs, stream));
  const Timing& total = times.total;
  const Timing& blocks = times.blocks;
  const Timing& scores = times.scores;
  CUIMG_ASSIGN_OR_RETURN(auto got,
                         FrameHits(plan, in, weights, d_ws.data(), d_hits.data(), stream));
  std::vector<float> features(plan.FeatureBytes() / sizeof(float));  // not the candidate list
  CUIMG_CUDA_RETURN_IF_ERROR(
      cudaMemcpy(features.data(), d_ws.data(), plan.FeatureBytes(), cudaMemcpyDeviceToHost),
      "features");
  std::size_t raw_hits = 0;
  for (const auto& frame_hits : got) raw_hits += frame_hits.size();
  PrintJson(absl::StrFormat(
      "\"impl\":\"cuimg_frames\",\"workload\":\"%s\",\"frames\":%d,\"input_offset\":%d,"
      "\"per_frame_us\":%.2f,"
      "\"blocks_per_frame_us\":%.2f,\"scores_per_frame_us\":%.2f,\"p10_us\":%.2f,"
      "\"p90_us\":%.2f,\"raw_hits\":%zu,\"hash\":\"%016llx\"",
      w.name, frames, offset, total.median_us / frames, blocks.median_us / frames,
      scores.median_us / frames, total.p10_us / frames, total.p90_us / frames, raw_hits,
      static_cast<unsigned long long>(Digest(features, got))));
  return absl::OkStatus();
}
}  // namespace
}  // namespace cuimg::bench

int main(int argc, char** argv) {
  using namespace cuimg;
  bench::BenchArgs args;
  if (!bench::ParseBenchArgs(argc, argv, "detect_bench", false, &args)) return 2;
  const std::string models = bench::EnvOr("CUIMG_MODELS_DIR", CUIMG_SOURCE_MODELS_DIR);
  absl::StatusOr<HogModel> model = ReadHogModelFile(models + "/opencv_people_64x128.hogsvm");
  if (!model.ok()) {
    std::fprintf(stderr, "detect_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<bench::BenchDevice> device = bench::StartBench();
  if (!device.ok()) {
    std::fprintf(stderr, "detect_bench: %s\n", device.status().ToString().c_str());
    return 1;
  }
  // Paper 004: HOG descriptors (no SVM) over the 1.05 pyramid of a 1920x1080 frame.
  bench::PrintJson(
      "\"impl\":\"paper\",\"workload\":\"detect_1080p\",\"source\":\"paper 004, HOG descriptors "
      "of a 1.05 pyramid of 1920x1080 (no SVM)\",\"gpu_us\":329000,\"gpu_hardware\":\"Tesla "
      "K20X\",\"cpu_us\":26200000");
  const std::vector<bench::Workload> workloads = {bench::Workload{"detect_1080p", 1920, 1080},
                                                  bench::Workload{"detect_768x576", 768, 576}};
  if (const std::string frames = bench::EnvOr("CUIMG_BENCH_FRAMES", ""); !frames.empty()) {
    return bench::RunWorkloads(workloads, args.filter, [&](const bench::Workload& w) {
      const int offset = std::atoi(bench::EnvOr("CUIMG_BENCH_INPUT_OFFSET", "0").c_str());
      return bench::RunFrames(w, *model, std::atoi(frames.c_str()), offset, args.runs(),
                              device->stream.get());
    });
  }
  const int status = bench::RunWorkloads(workloads, args.filter, [&](const bench::Workload& w) {
    return bench::Run(w, *model, device->bandwidth, args.runs(), device->stream.get());
  });
  const int batch_status =
      bench::RunWorkloads(workloads, args.filter, [&](const bench::Workload& w) {
        for (int frames : {1, 4, 8, 16}) {
          CUIMG_RETURN_IF_ERROR(
              bench::RunBatch(w, *model, frames, args.runs(), device->stream.get()));
        }
        return absl::OkStatus();
      });
  return status != 0 ? status : batch_status;
}
