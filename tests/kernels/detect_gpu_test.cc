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
#include "tests/testing/detect_gpu_testing.h"

namespace cuimg {
namespace {

using testing::RandomModel;
using testing::Synthetic;

using namespace detect_gpu_testing;  // NOLINT: the test's own helpers

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
  EXPECT_EQ(plan->LaunchCount(), 9);  // blocks, filter and exact pass per 64 levels
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
