// GPU detection (DetectPlan) against the CPU reference (DetectReference, itself checked against
// OpenCV 4.6 in hog_reference_opencv_test): every window's score within 1e-4 with the threshold
// far below (so every window is a hit) on real and synthetic images of odd sizes, 1, 3 and 4
// channels, gamma on and off, padding, strides and scales, both repository models and random
// ones; detections (grouped as the server does) with precision and recall >= 0.95 at IoU >= 0.5
// on basketball1/2, fruits and vtest frames; no hits and no error without windows; more than 64
// levels over several launches; determinism; on the GPU's own features (read back), every
// window's score and hit test are the reference's arithmetic bit for bit; plans of several frames
// (issue 50): each frame's features and hits bit for bit those of the frame detected alone
// (1080p x 8, 768x576 x 4, odd sizes, inputs in separate buffers and one buffer twice), and the
// host emulation's (EmulateOnHost) bit for bit the device's. Buffers are poisoned first, so
// anything the kernels fail to write shows. Labelled `gpu`; skips without a device.
//
// Data: CUIMG_DATA (default Debian opencv-doc's examples/data) must hold basketball1.png,
// basketball2.png, fruits.jpg and vtest_NN.jpg (frames the bundle extracts from vtest.avi; the
// test uses those present, at least one). Models: CUIMG_MODELS_DIR (default the repository's).
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
namespace {

using testing::RandomModel;
using testing::Synthetic;

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

const std::string kData = EnvOr("CUIMG_DATA", "/usr/share/doc/opencv-doc/examples/data");
const std::string kModels = EnvOr("CUIMG_MODELS_DIR", CUIMG_SOURCE_MODELS_DIR);

absl::StatusOr<Image> ReadImage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(path);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  return DecodeImage(bytes);
}

HogModel LoadModel(const std::string& name) {
  absl::StatusOr<HogModel> m = ReadHogModelFile(kModels + "/" + name + kHogModelExtension);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m : HogModel{};
}

Image WithChannels(const Image& gray_or_bgr, int channels) {
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

absl::StatusOr<GpuResult> RunOnGpu(const Image& image, const HogModel& model,
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
absl::StatusOr<GpuBatch> RunBatchOnGpu(const DetectPlan& plan, const std::vector<Image>& frames,
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
std::size_t ExpectBatchMatchesAlone(const std::vector<Image>& frames, const HogModel& model,
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
void ExpectEveryScoreMatches(const Image& image, const HogModel& model, DetectSpec spec,
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

std::string Name(const Image& image, const HogModel& model, const DetectSpec& spec) {
  return absl::StrCat(image.extent().width, "x", image.extent().height, "x", image.channels(), " ",
                      model.name, " gamma ", spec.gamma_correction, " pad ", spec.padding,
                      " stride ", spec.win_stride, " scale ", spec.scale);
}

std::vector<Image> VtestFrames() {
  std::vector<Image> frames;
  for (int i = 0; i < 100; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/vtest_%02d.jpg", i);
    absl::StatusOr<Image> f = ReadImage(kData + name);
    if (f.ok()) frames.push_back(*std::move(f));
  }
  return frames;
}

TEST(DetectGpu, ScoresEveryWindowAsTheReferenceDoes) {
  CUIMG_SKIP_IF_NO_GPU();
  const HogModel people = LoadModel("opencv_people_64x128");
  const HogModel daimler = LoadModel("opencv_daimler_48x96");
  absl::StatusOr<Image> basketball = ReadImage(kData + "/basketball1.png");
  ASSERT_TRUE(basketball.ok()) << basketball.status();
  DetectSpec padded;
  padded.padding = 24;  // rounded up to 32
  padded.win_stride = 16;
  padded.scale = 1.2;
  DetectSpec no_gamma;
  no_gamma.gamma_correction = false;
  DetectSpec coarse;
  coarse.scale = 2.5;
  coarse.padding = 8;
  coarse.win_stride = 24;
  std::uint64_t seed = 1;
  for (const Extent e : {Extent{64, 128, 1}, Extent{65, 129, 1}, Extent{97, 201, 1},
                         Extent{333, 257, 1}, Extent{641, 479, 1}}) {
    for (int channels : {1, 3, 4}) {
      const Image image =
          Synthetic(static_cast<int>(e.width), static_cast<int>(e.height), channels, ++seed);
      for (const DetectSpec& spec : {DetectSpec{}, padded, no_gamma, coarse}) {
        ExpectEveryScoreMatches(image, people, spec, Name(image, people, spec));
      }
      ExpectEveryScoreMatches(image, daimler, no_gamma, Name(image, daimler, no_gamma));
      const HogModel odd = RandomModel(40, 72, seed);
      ExpectEveryScoreMatches(image, odd, padded, Name(image, odd, padded));
      // 11 block columns: more than a scores block's 7 warps, so its columns go in two rounds;
      // a one-block window (one warp); and 465 blocks, more than the kernel's parameters take
      // (every weight from global memory).
      const HogModel wide = RandomModel(96, 48, seed);
      ExpectEveryScoreMatches(image, wide, DetectSpec{}, Name(image, wide, DetectSpec{}));
      if (e.width >= 128 && e.height >= 256) {
        const HogModel tall = RandomModel(128, 256, seed);
        ExpectEveryScoreMatches(image, tall, DetectSpec{}, Name(image, tall, DetectSpec{}));
      }
      const HogModel one = RandomModel(16, 16, seed);
      ExpectEveryScoreMatches(image, one, coarse, Name(image, one, coarse));
    }
  }
  for (int channels : {1, 3, 4}) {
    const Image image = WithChannels(*basketball, channels);
    ExpectEveryScoreMatches(image, people, DetectSpec{}, Name(image, people, DetectSpec{}));
  }
}

TEST(DetectGpu, ScoresEveryWindowOfA1080pFrame) {
  CUIMG_SKIP_IF_NO_GPU();
  const std::vector<Image> frames = VtestFrames();
  ASSERT_FALSE(frames.empty()) << "no vtest_NN.jpg in " << kData;
  absl::StatusOr<Image> hd = ResizeLinearExactU8(frames[0].view(), 1920, 1080);
  ASSERT_TRUE(hd.ok());
  const HogModel people = LoadModel("opencv_people_64x128");
  ExpectEveryScoreMatches(*hd, people, DetectSpec{}, Name(*hd, people, DetectSpec{}));
}

// The reference's ScoreWindow and threshold test on the GPU's own features give the GPU's hits
// exactly: the same windows, each score the reference's double rounded to float.
void ExpectScoresFollowTheReference(const Image& image, const HogModel& model,
                                    const DetectSpec& spec, const std::string& what) {
  absl::StatusOr<GpuResult> got = RunOnGpu(image, model, spec, true);
  ASSERT_TRUE(got.ok()) << got.status() << " " << what;
  absl::StatusOr<DetectPlan> plan =
      DetectPlan::Create(image.extent(), image.channels(), model, spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<WindowHit> want =
      testing::ReferenceHitsOnWorkspace(*plan, got->workspace.data(), model, spec);
  ASSERT_EQ(got->hits.size(), want.size()) << what;
  ASSERT_FALSE(want.empty()) << what;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const WindowHit& g = got->hits[i];
    ASSERT_TRUE(g.level == want[i].level && g.window_x == want[i].window_x &&
                g.window_y == want[i].window_y)
        << what << " hit " << i;
    ASSERT_EQ(g.score, static_cast<double>(static_cast<float>(want[i].score)))
        << what << " level " << g.level << " window " << g.window_x << "," << g.window_y;
  }
}

TEST(DetectGpu, ScoresAreTheReferenceArithmeticOnTheGpusFeatures) {
  CUIMG_SKIP_IF_NO_GPU();
  const std::vector<Image> frames = VtestFrames();
  ASSERT_FALSE(frames.empty()) << "no vtest_NN.jpg in " << kData;
  absl::StatusOr<Image> hd = ResizeLinearExactU8(frames[0].view(), 1920, 1080);
  ASSERT_TRUE(hd.ok());
  const HogModel people = LoadModel("opencv_people_64x128");
  const HogModel daimler = LoadModel("opencv_daimler_48x96");
  DetectSpec all;
  all.hit_threshold = -1e9;
  DetectSpec low;  // many hits near the threshold: the hit test is the reference's too
  low.hit_threshold = -0.5;
  DetectSpec stride;
  stride.hit_threshold = -0.5;
  stride.win_stride = 16;
  stride.padding = 16;
  stride.scale = 1.2;
  for (const DetectSpec& spec : {all, low, stride}) {
    ExpectScoresFollowTheReference(*hd, people, spec, Name(*hd, people, spec));
  }
  DetectSpec daimler_spec = low;
  daimler_spec.gamma_correction = false;
  ExpectScoresFollowTheReference(frames[0], daimler, daimler_spec,
                                 Name(frames[0], daimler, daimler_spec));
  const Image odd = Synthetic(333, 257, 4, 31);
  const HogModel random = RandomModel(40, 72, 32);
  ExpectScoresFollowTheReference(odd, random, all, Name(odd, random, all));
  const HogModel tall = RandomModel(128, 256, 33);  // every weight from global memory
  ExpectScoresFollowTheReference(odd, tall, all, Name(odd, tall, all));
  ExpectScoresFollowTheReference(*hd, tall, all, Name(*hd, tall, all));
}

TEST(DetectGpu, DetectionsMatchTheReferenceOnRealImages) {
  CUIMG_SKIP_IF_NO_GPU();
  std::vector<Image> images = VtestFrames();
  ASSERT_FALSE(images.empty()) << "no vtest_NN.jpg in " << kData;
  for (const char* name : {"/basketball1.png", "/basketball2.png", "/fruits.jpg"}) {
    absl::StatusOr<Image> image = ReadImage(kData + name);
    ASSERT_TRUE(image.ok()) << image.status();
    images.push_back(*image);
    images.push_back(WithChannels(*image, image->channels() == 1 ? 3 : 4));
  }
  const HogModel people = LoadModel("opencv_people_64x128");
  const HogModel daimler = LoadModel("opencv_daimler_48x96");
  DetectSpec padded;
  padded.padding = 32;
  padded.scale = 1.1;
  DetectSpec daimler_spec;
  daimler_spec.gamma_correction = false;
  daimler_spec.hit_threshold = 0.5;
  struct Run {
    const HogModel* model;
    DetectSpec spec;
  };
  testing::MatchCounts total;
  int raw_hits = 0;
  int raw_hit_difference = 0;
  for (const Run& run :
       {Run{&people, DetectSpec{}}, Run{&people, padded}, Run{&daimler, daimler_spec}}) {
    for (const Image& image : images) {
      absl::StatusOr<DetectResult> want = DetectReference(image.view(), *run.model, run.spec);
      ASSERT_TRUE(want.ok()) << want.status();
      absl::StatusOr<GpuResult> got = RunOnGpu(image, *run.model, run.spec);
      ASSERT_TRUE(got.ok()) << got.status();
      raw_hits += static_cast<int>(want->hits.size());
      raw_hit_difference +=
          std::abs(static_cast<int>(got->hits.size()) - static_cast<int>(want->hits.size()));
      std::vector<testing::Box> a, b;
      for (const Detection& d : FinishDetections(got->geometry, got->hits, run.spec)) {
        a.push_back({d.x, d.y, d.width, d.height});
      }
      for (const Detection& d : FinishDetections(want->geometry, want->hits, run.spec)) {
        b.push_back({d.x, d.y, d.width, d.height});
      }
      total += testing::MatchBoxes(a, b, 0.5);
    }
  }
  std::printf("GPU vs CPU reference: %s; raw hits %d, count difference %d\n",
              total.Describe().c_str(), raw_hits, raw_hit_difference);
  EXPECT_GT(total.reference, 20);
  EXPECT_GE(total.Precision(), 0.95);
  EXPECT_GE(total.Recall(), 0.95);
}

TEST(DetectGpu, ImagesWithoutWindowsGiveNoHits) {
  CUIMG_SKIP_IF_NO_GPU();
  const HogModel people = LoadModel("opencv_people_64x128");
  for (const Extent e : {Extent{1, 1, 1}, Extent{63, 300, 1}, Extent{300, 127, 1}}) {
    const Image image = Synthetic(static_cast<int>(e.width), static_cast<int>(e.height), 3, 5);
    DetectSpec spec;
    spec.hit_threshold = -1e9;
    absl::StatusOr<GpuResult> got = RunOnGpu(image, people, spec);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->hits.empty());
    EXPECT_EQ(got->launches, 0);
  }
}

TEST(DetectGpu, SplitsMoreThan64LevelsOverLaunches) {
  CUIMG_SKIP_IF_NO_GPU();
  const Image image = Synthetic(400, 300, 1, 8);
  const HogModel people = LoadModel("opencv_people_64x128");
  DetectSpec spec;
  spec.scale = 1.005;
  spec.max_levels = 150;
  absl::StatusOr<DetectPlan> plan = DetectPlan::Create(image.extent(), 1, people, spec);
  ASSERT_TRUE(plan.ok());
  ASSERT_GT(plan->geometry().levels.size(), 128u);
  EXPECT_EQ(plan->LaunchCount(), 6);
  ExpectEveryScoreMatches(image, people, spec, "150 levels at 1.005");
}

TEST(DetectGpu, IsDeterministic) {
  CUIMG_SKIP_IF_NO_GPU();
  // A real frame with people (random images gave no hits even at a lowered threshold).
  absl::StatusOr<Image> image = ReadImage(kData + "/basketball1.png");
  ASSERT_TRUE(image.ok()) << image.status();
  const HogModel people = LoadModel("opencv_people_64x128");
  DetectSpec spec;
  spec.hit_threshold = -0.5;
  absl::StatusOr<GpuResult> a = RunOnGpu(*image, people, spec);
  absl::StatusOr<GpuResult> b = RunOnGpu(*image, people, spec);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_FALSE(a->hits.empty());
  ASSERT_EQ(a->hits.size(), b->hits.size());
  for (std::size_t i = 0; i < a->hits.size(); ++i) {
    EXPECT_TRUE(a->hits[i].level == b->hits[i].level &&
                a->hits[i].window_x == b->hits[i].window_x &&
                a->hits[i].window_y == b->hits[i].window_y && a->hits[i].score == b->hits[i].score)
        << i;
  }
}

// Issue 50: plans of several frames give each frame what it gets alone, bit for bit.
TEST(DetectGpu, BatchedFramesAreEachFramesDetectionAlone) {
  CUIMG_SKIP_IF_NO_GPU();
  const std::vector<Image> vtest = VtestFrames();
  ASSERT_GE(vtest.size(), 8u) << "fewer than 8 vtest_NN.jpg in " << kData;
  const HogModel people = LoadModel("opencv_people_64x128");
  const HogModel daimler = LoadModel("opencv_daimler_48x96");
  DetectSpec low;  // the served default but a lower threshold: hits on every frame
  low.hit_threshold = -0.5;
  std::vector<Image> hd;
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<Image> f = ResizeLinearExactU8(vtest[i].view(), 1920, 1080);
    ASSERT_TRUE(f.ok());
    hd.push_back(*std::move(f));
  }
  EXPECT_GT(ExpectBatchMatchesAlone(hd, people, low, "1080p x8"), 0u);
  const std::vector<Image> sd(vtest.begin(), vtest.begin() + 4);
  EXPECT_GT(ExpectBatchMatchesAlone(sd, people, low, "768x576 x4"), 0u);
  DetectSpec daimler_spec = low;
  daimler_spec.gamma_correction = false;
  EXPECT_GT(ExpectBatchMatchesAlone(sd, daimler, daimler_spec, "768x576 x4 daimler"), 0u);
  EXPECT_GT(ExpectBatchMatchesAlone(sd, people, low, "768x576 x4, one buffer twice", true), 0u);
  DetectSpec all;
  all.hit_threshold = -1e9;
  all.padding = 16;
  all.scale = 1.2;
  for (int channels : {1, 3, 4}) {
    std::vector<Image> odd;
    for (int i = 0; i < 3; ++i) odd.push_back(Synthetic(333, 257, channels, 40 + i));
    ExpectBatchMatchesAlone(odd, people, all, absl::StrCat("333x257x", channels, " x3"));
    ExpectBatchMatchesAlone(odd, RandomModel(128, 256, 41), all,
                            absl::StrCat("333x257x", channels, " x3 128x256"));
  }
}

// EmulateOnHost is the kernels bit for bit (what hog_detect_batch_test and
// hog_detect_emulation_test rely on): features and hits of a plan of 3 frames; 3 channels both
// byte by byte (201 wide) and from 32-bit words (204 wide: rows of whole words).
TEST(DetectGpu, EmulationIsTheDeviceBitForBit) {
  CUIMG_SKIP_IF_NO_GPU();
  const HogModel people = LoadModel("opencv_people_64x128");
  DetectSpec spec;
  spec.hit_threshold = -1e9;
  spec.padding = 8;
  for (const auto& [width, channels] :
       {std::pair{201, 1}, std::pair{201, 3}, std::pair{201, 4}, std::pair{204, 3}}) {
    std::vector<Image> frames;
    std::vector<const void*> in;
    for (int i = 0; i < 3; ++i) frames.push_back(Synthetic(width, 163, channels, 50 + i));
    for (const Image& f : frames) in.push_back(f.bytes());
    absl::StatusOr<DetectPlan> plan = DetectPlan::Create(frames[0].extent(), channels, people, spec,
                                                         static_cast<int>(frames.size()));
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<GpuBatch> got = RunBatchOnGpu(*plan, frames, people);
    ASSERT_TRUE(got.ok()) << got.status();
    std::vector<float> workspace(plan->WorkspaceBytes() / sizeof(float));
    std::vector<std::uint8_t> hits(plan->HitsBytes());
    ASSERT_TRUE(plan->EmulateOnHost(in, people.weights.data(), workspace.data(), hits.data()).ok());
    const std::vector<std::vector<WindowHit>> want =
        plan->DecodeFrameHits(hits.data(), DetectPlan::HitCount(hits.data()));
    for (int f = 0; f < 3; ++f) {
      EXPECT_EQ(testing::FrameDifference(*plan, got->workspace.data(), got->hits[f], f, *plan,
                                         workspace.data(), want[f], f),
                "")
          << width << "x163x" << channels;
    }
  }
}

}  // namespace
}  // namespace cuimg
