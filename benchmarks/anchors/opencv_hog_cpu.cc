// OpenCV 4.6 CPU anchor for detect_bench: cv::HOGDescriptor::detectMultiScale with the default
// people detector and the same parameters (hit threshold 0, win stride 8x8, no padding, scale
// 1.05, group threshold 2, all levels), on every core (OpenCV's parallel_for_; the thread count is
// printed), wall-clock timed around the call: 2 warm-up runs, then 20 timed ones, median, inputs
// rotated among 3 frames of vtest.avi (CUIMG_DATA/vtest_NN.jpg) resized to the workload's size
// with INTER_LINEAR_EXACT, exactly detect_bench's inputs.
//
// Built here (Debian's OpenCV 4.6; the GPU machine's OpenCV 5 has no HOG) and carried in the GPU
// bundle with the OpenCV libraries it loads (core, imgproc, objdetect only: PNGs are decoded with
// cuimg's codec, so imgcodecs and its dependencies stay out of the bundle).
//   opencv_hog_cpu [--quick]
// Output: one JSON object per line ({"anchor":"opencv_cpu","workload":"opencv_cpu_detect_1080p",
// ...}); exit status 1 when the frames cannot be read.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>
#include <string>
#include <vector>

#include "cuimg/codec/image_codec.h"

namespace {

std::string DataDir() {
  const char* v = std::getenv("CUIMG_DATA");
  return v != nullptr && *v != '\0' ? v : "/usr/share/doc/opencv-doc/examples/data";
}

// vtest_NN.jpg as a BGR cv::Mat (decoded by cuimg's codec: BGR, as imread).
bool ReadFrame(int i, cv::Mat* out) {
  char path[4096];
  std::snprintf(path, sizeof(path), "%s/vtest_%02d.jpg", DataDir().c_str(), i);
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                        std::istreambuf_iterator<char>());
  absl::StatusOr<cuimg::Image> image = cuimg::DecodeImage(bytes);
  if (!image.ok() || image->channels() != 3) {
    std::fprintf(stderr, "%s: %s\n", path,
                 image.ok() ? "not a colour image" : image.status().ToString().c_str());
    return false;
  }
  cv::Mat(static_cast<int>(image->extent().height), static_cast<int>(image->extent().width),
          CV_8UC3, image->bytes())
      .copyTo(*out);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int runs = quick ? 5 : 20;
  std::vector<cv::Mat> frames(3);
  for (int i = 0; i < 3; ++i) {
    if (!ReadFrame(i, &frames[i])) {
      std::printf(
          "{\"anchor\":\"opencv_cpu\",\"workload\":\"opencv_cpu_detect\","
          "\"error\":\"cannot read vtest_%02d.jpg in %s\"}\n",
          i, DataDir().c_str());
      return 1;
    }
  }
  cv::HOGDescriptor hog;  // 64x128, gamma correction, as HOGDescriptor()
  hog.setSVMDetector(cv::HOGDescriptor::getDefaultPeopleDetector());
  struct Workload {
    const char* name;
    cv::Size size;
  };
  for (const Workload& w : {Workload{"opencv_cpu_detect_1080p", cv::Size(1920, 1080)},
                            Workload{"opencv_cpu_detect_768x576", cv::Size(768, 576)}}) {
    std::vector<cv::Mat> inputs(3);
    for (int i = 0; i < 3; ++i) {
      cv::resize(frames[i], inputs[i], w.size, 0, 0, cv::INTER_LINEAR_EXACT);
    }
    std::vector<double> us;
    std::size_t detections = 0;
    for (int i = 0; i < runs + 2; ++i) {
      std::vector<cv::Rect> found;
      std::vector<double> weights;
      const auto start = std::chrono::steady_clock::now();
      hog.detectMultiScale(inputs[i % 3], found, weights, 0, cv::Size(8, 8), cv::Size(), 1.05, 2,
                           false);
      const double t =
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
              .count();
      if (i >= 2) us.push_back(t);
      if (i % 3 == 0) detections = found.size();
    }
    std::sort(us.begin(), us.end());
    auto at = [&](double q) { return us[static_cast<std::size_t>(q * (us.size() - 1) + 0.5)]; };
    std::printf(
        "{\"anchor\":\"opencv_cpu\",\"workload\":\"%s\",\"median_us\":%.1f,"
        "\"p10_us\":%.1f,\"p90_us\":%.1f,\"runs\":%d,\"threads\":%d,"
        "\"detections_input0\":%zu,\"note\":\"OpenCV %s HOGDescriptor::detectMultiScale, "
        "default people detector, stride 8, scale 1.05, group 2; wall clock, all cores\"}\n",
        w.name, at(0.5), at(0.1), at(0.9), runs, cv::getNumThreads(), detections, CV_VERSION);
    std::fflush(stdout);
  }
  return 0;
}
