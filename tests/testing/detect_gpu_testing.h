// Helpers of detect_gpu_test.cc (one translation unit): its data and models, GPU runs of a
// DetectPlan on one image or a batch of frames, and the comparisons against the CPU reference.
#ifndef CUIMG_TESTS_TESTING_DETECT_GPU_TESTING_H_
#define CUIMG_TESTS_TESTING_DETECT_GPU_TESTING_H_

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/cuda_stream.h"
#include "cuimg/common/device_buffer.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/group_rectangles.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_model_file.h"
#include "cuimg/reference/hog_reference.h"
#include "tests/testing/detection_matching.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/hog_testing.h"

namespace cuimg {
namespace detect_gpu_testing {

using testing::RandomModel;
using testing::Synthetic;

inline std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

inline const std::string kData = EnvOr("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data");
inline const std::string kModels = EnvOr("CUIMG_MODELS_DIR", CUIMG_SOURCE_MODELS_DIR);

inline absl::StatusOr<Image> ReadImage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  return DecodeImage(bytes);
}

inline HogModel LoadModel(const std::string& name) {
  absl::StatusOr<HogModel> m = ReadHogModelFile(kModels + "/" + name + kHogModelExtension);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : HogModel{};
}

inline Image WithChannels(const Image& gray_or_bgr, int channels) {
  const Extent e = gray_or_bgr.extent();
  Image out(PixelType::kU8, e, channels);
  const int in_cn = gray_or_bgr.channels();
  for (std::int64_t i = 0; i < e.Pixels(); ++i) {
    for (int c = 0; c < channels; ++c) {
      out.bytes()[i * channels + c] = c < 3
                                          ? gray_or_bgr.bytes()[i * in_cn + std::min(c, in_cn - 1)]
                                          : static_cast<std::uint8_t>(i * 13);
    }
  }
  return out;
}

struct GpuResult {
  std::vector<WindowHit> hits;  // HitOrder
  DetectGeometry geometry;
  int launches = 0;
  std::vector<float> workspace;  // the block features, when asked for
};

inline absl::StatusOr<GpuResult> RunOnGpu(const Image& image, const HogModel& model,
                                          const DetectSpec& spec, bool read_workspace = false) {
  CUIMG_ASSIGN_OR_RETURN(DetectPlan plan,
                         DetectPlan::Create(image.extent(), image.channels(), model, spec));
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(image.size_bytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_w,
                         DeviceBuffer::Allocate(model.weights.size() * sizeof(float)));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_hits, DeviceBuffer::Allocate(plan.HitsBytes()));
  // Poison: NaN features (0xFF bytes) make any unwritten block visible in a score; a stale count
  // shows if the kernels do not reset it.
  if (cudaMemcpy(d_in.data(), image.bytes(), image.size_bytes(), cudaMemcpyHostToDevice) !=
          cudaSuccess ||
      cudaMemcpy(d_w.data(), model.weights.data(), model.weights.size() * sizeof(float),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      (plan.WorkspaceBytes() > 0 &&
       cudaMemset(d_ws.data(), 0xFF, plan.WorkspaceBytes()) != cudaSuccess) ||
      cudaMemset(d_hits.data(), 0x7F, plan.HitsBytes()) != cudaSuccess ||
      // Legacy-stream copies and memsets may return early; the plan's stream does not wait.
      cudaDeviceSynchronize() != cudaSuccess) {
    return absl::InternalError("copy in");
  }
  CUIMG_RETURN_IF_ERROR(
      plan.Run({d_in.data()}, d_w.As<float>(), d_ws.data(), d_hits.data(), stream.get()));
  CUIMG_RETURN_IF_ERROR(stream.Synchronize());
  std::vector<std::uint8_t> host(plan.HitsBytes());
  if (cudaMemcpy(host.data(), d_hits.data(), host.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    return absl::InternalError("copy back");
  }
  const std::uint32_t count = DetectPlan::HitCount(host.data());
  if (count > plan.geometry().windows) {
    return absl::InternalError(
        absl::StrCat("hit count ", count, " exceeds the ", plan.geometry().windows, " windows"));
  }
  GpuResult r;
  if (read_workspace) {
    r.workspace.resize(plan.WorkspaceBytes() / sizeof(float));
    if (cudaMemcpy(r.workspace.data(), d_ws.data(), plan.WorkspaceBytes(),
                   cudaMemcpyDeviceToHost) != cudaSuccess) {
      return absl::InternalError("copy the workspace back");
    }
  }
  r.hits = DetectPlan::DecodeHits(host.data(), count);
  r.geometry = plan.geometry();
  r.launches = plan.LaunchCount();
  return r;
}

// A plan of frames.size() frames run on the device, each frame's input in a buffer of its own
// (`repeat`: frame 1 given frame 0's buffer instead), the workspace read back.
struct GpuBatch {
  std::vector<std::vector<WindowHit>> hits;  // per frame, HitOrder
  std::vector<float> workspace;
};
inline absl::StatusOr<GpuBatch> RunBatchOnGpu(const DetectPlan& plan,
                                              const std::vector<Image>& frames,
                                              const HogModel& model, bool repeat = false) {
  CUIMG_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  std::vector<DeviceBuffer> d_in;
  std::vector<const void*> in;
  for (const Image& f : frames) {
    CUIMG_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(f.size_bytes()));
    if (cudaMemcpy(b.data(), f.bytes(), f.size_bytes(), cudaMemcpyHostToDevice) != cudaSuccess) {
      return absl::InternalError("copy in");
    }
    in.push_back(b.data());
    d_in.push_back(std::move(b));
  }
  if (repeat) in[1] = in[0];
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_w,
                         DeviceBuffer::Allocate(model.weights.size() * sizeof(float)));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_ws, DeviceBuffer::Allocate(plan.WorkspaceBytes()));
  CUIMG_ASSIGN_OR_RETURN(DeviceBuffer d_hits, DeviceBuffer::Allocate(plan.HitsBytes()));
  if (cudaMemcpy(d_w.data(), model.weights.data(), model.weights.size() * sizeof(float),
                 cudaMemcpyHostToDevice) != cudaSuccess ||
      (plan.WorkspaceBytes() > 0 &&
       cudaMemset(d_ws.data(), 0xFF, plan.WorkspaceBytes()) != cudaSuccess) ||
      cudaMemset(d_hits.data(), 0x7F, plan.HitsBytes()) != cudaSuccess ||
      // Legacy-stream copies and memsets may return early; the plan's stream does not wait.
      cudaDeviceSynchronize() != cudaSuccess) {
    return absl::InternalError("fill");
  }
  CUIMG_RETURN_IF_ERROR(plan.Run(in, d_w.As<float>(), d_ws.data(), d_hits.data(), stream.get()));
  CUIMG_RETURN_IF_ERROR(stream.Synchronize());
  std::vector<std::uint8_t> host(plan.HitsBytes());
  GpuBatch r;
  r.workspace.resize(plan.WorkspaceBytes() / sizeof(float));
  if (cudaMemcpy(host.data(), d_hits.data(), host.size(), cudaMemcpyDeviceToHost) != cudaSuccess ||
      cudaMemcpy(r.workspace.data(), d_ws.data(), plan.WorkspaceBytes(), cudaMemcpyDeviceToHost) !=
          cudaSuccess) {
    return absl::InternalError("copy back");
  }
  const std::uint32_t count = DetectPlan::HitCount(host.data());
  if (count > plan.frames() * plan.geometry().windows) {
    return absl::InternalError(absl::StrCat("hit count ", count, " exceeds the windows"));
  }
  r.hits = plan.DecodeFrameHits(host.data(), count);
  return r;
}

// frames.size() frames in one plan on the device against each frame alone on the device:
// features and hits bit for bit. Returns the hits compared.
inline std::size_t ExpectBatchMatchesAlone(const std::vector<Image>& frames, const HogModel& model,
                                           const DetectSpec& spec, const std::string& what,
                                           bool repeat = false) {
  const Image& first = frames[0];
  absl::StatusOr<DetectPlan> batch = DetectPlan::Create(first.extent(), first.channels(), model,
                                                        spec, static_cast<int>(frames.size()));
  EXPECT_TRUE(batch.ok()) << batch.status() << " " << what;
  absl::StatusOr<DetectPlan> alone =
      DetectPlan::Create(first.extent(), first.channels(), model, spec);
  if (!batch.ok() || !alone.ok()) return 0;
  absl::StatusOr<GpuBatch> got = RunBatchOnGpu(*batch, frames, model, repeat);
  EXPECT_TRUE(got.ok()) << got.status() << " " << what;
  if (!got.ok()) return 0;
  std::size_t hits = 0;
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const Image& image = repeat && f == 1 ? frames[0] : frames[f];
    absl::StatusOr<GpuBatch> want = RunBatchOnGpu(*alone, {image}, model);
    EXPECT_TRUE(want.ok()) << want.status() << " " << what;
    if (!want.ok()) return hits;
    EXPECT_EQ(
        testing::FrameDifference(*batch, got->workspace.data(), got->hits[f], static_cast<int>(f),
                                 *alone, want->workspace.data(), want->hits[0], 0),
        "")
        << what;
    hits += want->hits[0].size();
  }
  return hits;
}

// With the threshold far below every score, every window is a hit: compares them all.
inline void ExpectEveryScoreMatches(const Image& image, const HogModel& model, DetectSpec spec,
                                    const std::string& what) {
  spec.hit_threshold = -1e9;
  absl::StatusOr<DetectResult> want = DetectReference(image.view(), model, spec);
  ASSERT_TRUE(want.ok()) << want.status() << " " << what;
  absl::StatusOr<GpuResult> got = RunOnGpu(image, model, spec);
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  ASSERT_EQ(got->geometry.levels.size(), want->geometry.levels.size()) << what;
  ASSERT_EQ(static_cast<std::int64_t>(want->hits.size()), want->geometry.windows) << what;
  ASSERT_EQ(got->hits.size(), want->hits.size()) << what;
  double worst = 0;
  for (std::size_t i = 0; i < got->hits.size(); ++i) {
    const WindowHit& g = got->hits[i];
    const WindowHit& w = want->hits[i];
    ASSERT_TRUE(g.level == w.level && g.window_x == w.window_x && g.window_y == w.window_y)
        << what << " hit " << i;
    ASSERT_TRUE(std::isfinite(g.score))
        << what << " level " << g.level << " window " << g.window_x << "," << g.window_y;
    worst = std::max(worst, std::abs(g.score - w.score));
  }
  EXPECT_LE(worst, 1e-4) << what;
}

inline std::string Name(const Image& image, const HogModel& model, const DetectSpec& spec) {
  return absl::StrCat(image.extent().width, "x", image.extent().height, "x", image.channels(), " ",
                      model.name, " gamma ", spec.gamma_correction, " pad ", spec.padding,
                      " stride ", spec.win_stride, " scale ", spec.scale);
}

inline std::vector<Image> VtestFrames() {
  std::vector<Image> frames;
  for (int i = 0; i < 100; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/vtest_%02d.jpg", i);
    absl::StatusOr<Image> f = ReadImage(kData + name);
    if (f.ok()) frames.push_back(*std::move(f));
  }
  return frames;
}

}  // namespace detect_gpu_testing
}  // namespace cuimg

#endif  // CUIMG_TESTS_TESTING_DETECT_GPU_TESTING_H_
