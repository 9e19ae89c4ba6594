// The HOG reference against OpenCV 4.6 itself: INTER_LINEAR_EXACT level images bit for bit,
// descriptors (HOGDescriptor::compute) on real images, gray and colour, with and without gamma and
// padding, for both windows; single-scale window scores (detect) and hit sets; groupRectangles on
// random rectangle sets; and detectMultiScale's detections on 50 frames of vtest.avi plus
// basketball1/2.png, as precision and recall at IoU >= 0.5 (the bar: 0.95 each), and the
// raw hit counts (no grouping) of every 10th image.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>
#include <opencv2/videoio.hpp>
#include <random>
#include <string>
#include <vector>

#include "cuimg/kernels/group_rectangles.h"
#include "cuimg/reference/hog_reference.h"
#include "tests/testing/detection_matching.h"

namespace cuimg {
namespace {

const std::string kData = "/usr/share/doc/opencv-doc/examples/data/";

HogModel OpenCvModel(bool daimler) {
  const std::vector<float> svm = daimler ? cv::HOGDescriptor::getDaimlerPeopleDetector()
                                         : cv::HOGDescriptor::getDefaultPeopleDetector();
  HogModel m;
  m.name = daimler ? "daimler" : "people";
  m.window_width = daimler ? 48 : 64;
  m.window_height = daimler ? 96 : 128;
  m.weights.assign(svm.begin(), svm.end() - 1);
  m.bias = svm.back();
  return m;
}

cv::HOGDescriptor OpenCvHog(bool daimler, bool gamma) {
  cv::HOGDescriptor hog(cv::Size(daimler ? 48 : 64, daimler ? 96 : 128), cv::Size(16, 16),
                        cv::Size(8, 8), cv::Size(8, 8), 9, 1, -1, cv::HOGDescriptor::L2Hys, 0.2,
                        gamma);
  const HogModel m = OpenCvModel(daimler);
  std::vector<float> svm = m.weights;
  svm.push_back(m.bias);
  hog.setSVMDetector(svm);
  return hog;
}

ImageView View(const cv::Mat& m) {
  return ImageView{PixelType::kU8, Extent{m.cols, m.rows, 1}, m.channels(),
                   const_cast<std::uint8_t*>(m.ptr<std::uint8_t>())};
}

cv::Mat ReadImage(const std::string& name, int flags) {
  cv::Mat m = cv::imread(kData + name, flags);
  EXPECT_FALSE(m.empty()) << name;
  return m;
}

// Every 16th frame of vtest.avi (795 frames -> 50), BGR. grab() decodes every frame (they depend
// on each other) but converts to BGR only those retrieved.
const std::vector<cv::Mat>& VtestFrames() {
  static const std::vector<cv::Mat> frames = [] {
    std::vector<cv::Mat> out;
    cv::VideoCapture cap(kData + "vtest.avi");
    cv::Mat frame;
    for (int i = 0; cap.grab(); ++i) {
      if (i % 16 == 0 && cap.retrieve(frame)) out.push_back(frame.clone());
    }
    return out;
  }();
  return frames;
}

TEST(HogReferenceOpenCv, ResizeLinearExactIsBitExact) {
  std::mt19937 rng(3);
  for (int channels : {1, 3, 4}) {
    for (const cv::Size size : {cv::Size(1, 1), cv::Size(2, 3), cv::Size(97, 61),
                                cv::Size(640, 480), cv::Size(333, 201)}) {
      cv::Mat src(size, CV_8UC(channels));
      cv::randu(src, 0, 256);
      std::vector<cv::Size> targets = {
          cv::Size(1, 1), cv::Size(size.width * 2, size.height * 3),
          cv::Size(std::max(1, size.width / 2), std::max(1, size.height / 2))};
      double s = 1.0;
      for (int k = 0; k < 12; ++k, s *= 1.05) {
        targets.emplace_back(std::max(1, cvRound(size.width / s)),
                             std::max(1, cvRound(size.height / s)));
      }
      for (int k = 0; k < 5; ++k) {
        targets.emplace_back(1 + static_cast<int>(rng() % 700), 1 + static_cast<int>(rng() % 500));
      }
      for (const cv::Size& t : targets) {
        cv::Mat want;
        cv::resize(src, want, t, 0, 0, cv::INTER_LINEAR_EXACT);
        absl::StatusOr<Image> got = ResizeLinearExactU8(View(src), t.width, t.height);
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_EQ(std::memcmp(got->bytes(), want.data, got->size_bytes()), 0)
            << channels << " channels " << size << " -> " << t;
      }
    }
  }
}

struct DescriptorError {
  double max_abs = 0;
  double mean_abs = 0;
};

// OpenCV's descriptors of every window (stride 8) against ours.
DescriptorError CompareDescriptors(const cv::Mat& image, bool daimler, bool gamma, int padding) {
  cv::HOGDescriptor hog = OpenCvHog(daimler, gamma);
  cv::Mat bgr = image;
  if (image.channels() == 4) cv::cvtColor(image, bgr, cv::COLOR_BGRA2BGR);
  std::vector<float> want;
  hog.compute(bgr, want, cv::Size(8, 8), cv::Size(padding, padding));
  const int ww = hog.winSize.width;
  const int wh = hog.winSize.height;
  absl::StatusOr<HogVotes> votes = ComputeHogVotes(View(image), padding, gamma, 2);
  EXPECT_TRUE(votes.ok()) << votes.status();
  const int nwx = (votes->width - ww) / 8 + 1;
  const int nwy = (votes->height - wh) / 8 + 1;
  absl::StatusOr<HogBlocks> blocks =
      ComputeHogBlocks(*votes, (votes->width - 16) / 8 + 1, (votes->height - 16) / 8 + 1, 2);
  EXPECT_TRUE(blocks.ok()) << blocks.status();
  const std::size_t d = hog.getDescriptorSize();
  EXPECT_EQ(want.size(), static_cast<std::size_t>(nwx) * nwy * d);
  DescriptorError e;
  double sum = 0;
  std::size_t n = 0;
  for (int w = 0; w < nwx * nwy && (w + 1) * d <= want.size(); ++w) {
    const std::vector<float> got = WindowDescriptor(*blocks, w % nwx, w / nwx, ww, wh);
    for (std::size_t i = 0; i < d; ++i) {
      const double diff = std::abs(double{got[i]} - want[w * d + i]);
      e.max_abs = std::max(e.max_abs, diff);
      sum += diff;
      ++n;
    }
  }
  e.mean_abs = n > 0 ? sum / n : 0;
  return e;
}

TEST(HogReferenceOpenCv, DescriptorsMatchComputeOnRealImages) {
  struct Case {
    std::string what;
    cv::Mat image;
  };
  std::vector<Case> cases = {
      {"basketball1 gray", ReadImage("basketball1.png", cv::IMREAD_GRAYSCALE)},
      {"basketball2 gray", ReadImage("basketball2.png", cv::IMREAD_GRAYSCALE)},
      {"fruits bgr", ReadImage("fruits.jpg", cv::IMREAD_COLOR)},
      {"vtest frame 0 bgr", VtestFrames()[0]},
      {"vtest frame 20 bgr", VtestFrames()[20]},
  };
  cv::Mat bgra;
  cv::cvtColor(cases[2].image, bgra, cv::COLOR_BGR2BGRA);
  cases.push_back({"fruits bgra", bgra});
  // An odd-sized crop, so that OpenCV's per-4-columns colour rule meets its scalar tail.
  cases.push_back({"vtest crop 301x203 bgr", VtestFrames()[5](cv::Rect(17, 33, 301, 203)).clone()});
  double worst_max = 0, worst_mean = 0;
  for (const Case& c : cases) {
    for (bool daimler : {false, true}) {
      for (bool gamma : {true, false}) {
        for (int padding : {0, 16}) {
          const DescriptorError e = CompareDescriptors(c.image, daimler, gamma, padding);
          EXPECT_LE(e.max_abs, 1e-2) << c.what << (daimler ? " daimler" : " people") << " gamma "
                                     << gamma << " padding " << padding;
          EXPECT_LE(e.mean_abs, 1e-3) << c.what;
          worst_max = std::max(worst_max, e.max_abs);
          worst_mean = std::max(worst_mean, e.mean_abs);
        }
      }
    }
  }
  std::printf("descriptor vs OpenCV compute: max |diff| %.3g, worst mean |diff| %.3g\n", worst_max,
              worst_mean);
}

TEST(HogReferenceOpenCv, WindowScoresMatchDetect) {
  const cv::Mat image = ReadImage("basketball2.png", cv::IMREAD_GRAYSCALE);
  for (bool daimler : {false, true}) {
    cv::HOGDescriptor hog = OpenCvHog(daimler, true);
    std::vector<cv::Point> locations;
    std::vector<double> weights;
    hog.detect(image, locations, weights, -1e9, cv::Size(8, 8), cv::Size(0, 0));
    const HogModel model = OpenCvModel(daimler);
    absl::StatusOr<HogVotes> votes = ComputeHogVotes(View(image), 0, true, 2);
    ASSERT_TRUE(votes.ok());
    absl::StatusOr<HogBlocks> blocks =
        ComputeHogBlocks(*votes, (votes->width - 16) / 8 + 1, (votes->height - 16) / 8 + 1, 2);
    ASSERT_TRUE(blocks.ok());
    ASSERT_FALSE(locations.empty());
    double worst = 0;
    int flips = 0;
    for (std::size_t i = 0; i < locations.size(); ++i) {
      const double ours = ScoreWindow(*blocks, locations[i].x / 8, locations[i].y / 8, model);
      worst = std::max(worst, std::abs(ours - weights[i]));
      // Hit sets at threshold 0 agree except within 1e-3 of it (research check 6).
      if ((ours >= 0) != (weights[i] >= 0) && std::abs(weights[i]) >= 1e-3) ++flips;
    }
    EXPECT_LE(worst, 1e-3) << (daimler ? "daimler" : "people");
    EXPECT_EQ(flips, 0);
    std::printf("%s: %zu window scores, max |ours - OpenCV| %.3g\n", daimler ? "daimler" : "people",
                locations.size(), worst);
  }
}

TEST(HogReferenceOpenCv, GroupRectanglesMatchesOpenCv) {
  std::mt19937 rng(11);
  const cv::HOGDescriptor hog;
  for (int trial = 0; trial < 200; ++trial) {
    const int n = static_cast<int>(rng() % 60);
    std::vector<cv::Rect> rects;
    std::vector<double> weights;
    std::vector<Detection> ours;
    for (int i = 0; i < n; ++i) {
      // Clumps, so that clusters form: a few centres, jittered.
      const int centre = static_cast<int>(rng() % 4);
      const int w = 40 + static_cast<int>(rng() % 40);
      const cv::Rect r(centre * 90 + static_cast<int>(rng() % 15),
                       centre * 20 + static_cast<int>(rng() % 15), w, 2 * w);
      const double score = static_cast<double>(rng() % 1000) / 100.0;
      rects.push_back(r);
      weights.push_back(score);
      ours.push_back(Detection{r.x, r.y, r.width, r.height, score, 1.0});
    }
    const int threshold = static_cast<int>(rng() % 4);
    const double eps = trial % 2 == 0 ? 0.2 : 0.35;
    hog.groupRectangles(rects, weights, threshold, eps);
    const std::vector<Detection> got = GroupRectangles(ours, threshold, eps);
    ASSERT_EQ(got.size(), rects.size()) << "trial " << trial;
    std::vector<std::tuple<int, int, int, int, double>> a, b;
    for (std::size_t i = 0; i < got.size(); ++i) {
      a.emplace_back(got[i].x, got[i].y, got[i].width, got[i].height, got[i].score);
      b.emplace_back(rects[i].x, rects[i].y, rects[i].width, rects[i].height, weights[i]);
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "trial " << trial;
  }
}

// OpenCV's detectMultiScale (default people detector, its defaults: stride 8, scale 1.05,
// group threshold 2) against ours, summed over the images.
// With `raw_hit_mismatch`, every 10th image's raw hit count (no grouping) is compared too.
testing::MatchCounts CompareDetections(const std::vector<cv::Mat>& images, bool daimler,
                                       const DetectSpec& spec, int* raw_hit_mismatch) {
  cv::HOGDescriptor hog = OpenCvHog(daimler, spec.gamma_correction);
  const HogModel model = OpenCvModel(daimler);
  testing::MatchCounts total;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const cv::Mat& image = images[i];
    std::vector<cv::Rect> found;
    std::vector<double> weights;
    hog.detectMultiScale(
        image, found, weights, spec.hit_threshold, cv::Size(spec.win_stride, spec.win_stride),
        cv::Size(spec.padding, spec.padding), spec.scale, spec.group_threshold, false);
    absl::StatusOr<DetectResult> ours = DetectReference(View(image), model, spec, 2);
    EXPECT_TRUE(ours.ok()) << ours.status();
    if (!ours.ok()) continue;
    std::vector<testing::Box> want, got;
    for (const cv::Rect& r : found) want.push_back({r.x, r.y, r.width, r.height});
    for (const Detection& d : FinishDetections(ours->geometry, ours->hits, spec)) {
      got.push_back({d.x, d.y, d.width, d.height});
    }
    total += testing::MatchBoxes(got, want, 0.5);
    if (raw_hit_mismatch != nullptr && i % 10 == 0) {
      // Raw hits too: same count within a handful (windows within float rounding of the
      // threshold may flip).
      std::vector<cv::Rect> raw;
      std::vector<double> raw_weights;
      hog.detectMultiScale(image, raw, raw_weights, spec.hit_threshold,
                           cv::Size(spec.win_stride, spec.win_stride),
                           cv::Size(spec.padding, spec.padding), spec.scale, 0, false);
      *raw_hit_mismatch +=
          std::abs(static_cast<int>(raw.size()) - static_cast<int>(ours->hits.size()));
    }
  }
  return total;
}

TEST(HogReferenceOpenCv, DetectionsMatchDetectMultiScaleOnVtestAndBasketball) {
  std::vector<cv::Mat> images = VtestFrames();
  ASSERT_GE(images.size(), 50u);
  const std::size_t frames = images.size();
  images.push_back(ReadImage("basketball1.png", cv::IMREAD_COLOR));
  images.push_back(ReadImage("basketball2.png", cv::IMREAD_COLOR));
  DetectSpec spec;  // OpenCV's defaults
  int raw_mismatch = 0;
  const testing::MatchCounts m = CompareDetections(images, false, spec, &raw_mismatch);
  std::printf(
      "detections vs detectMultiScale on %zu vtest frames + basketball1/2: %s; raw hit "
      "count difference %d\n",
      frames, m.Describe().c_str(), raw_mismatch);
  EXPECT_GT(m.reference, 50);
  EXPECT_GE(m.Precision(), 0.95);
  EXPECT_GE(m.Recall(), 0.95);
}

TEST(HogReferenceOpenCv, DetectionsMatchWithPaddingStrideAndDaimler) {
  const std::vector<cv::Mat> images = {VtestFrames()[3], VtestFrames()[40],
                                       ReadImage("basketball2.png", cv::IMREAD_GRAYSCALE)};
  DetectSpec padded;
  padded.padding = 32;
  padded.win_stride = 16;
  padded.scale = 1.1;
  DetectSpec daimler;
  daimler.gamma_correction = false;
  daimler.hit_threshold = 0.5;
  for (const auto& [spec, is_daimler] : {std::pair{padded, false}, std::pair{daimler, true}}) {
    const testing::MatchCounts m = CompareDetections(images, is_daimler, spec, nullptr);
    std::printf("%s: %s\n", is_daimler ? "daimler, no gamma" : "padding 32, stride 16, scale 1.1",
                m.Describe().c_str());
    EXPECT_GE(m.Precision(), 0.95);
    EXPECT_GE(m.Recall(), 0.95);
  }
}

}  // namespace
}  // namespace cuimg
