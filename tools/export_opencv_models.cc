// export_opencv_models: writes OpenCV's built-in people detectors as cuimg model files
// (models/README.md), or converts a HOGDescriptor that OpenCV saved (HOGDescriptor::save, YAML or
// XML) into one. Built only where OpenCV is (the test oracle machines); the repository carries its
// output in models/, so the server itself never needs OpenCV.
//
//   export_opencv_models OUT_DIR                          both built-in detectors
//   export_opencv_models --from FILE --name NAME OUT_DIR  a saved HOGDescriptor with an SVM
//
// Exit status 0 on success, 1 when a file cannot be read or written or the descriptor's
// geometry is not OpenCV's default (the only one cuimg computes), 2 for usage.
#include <cstdio>
#include <fstream>
#include <opencv2/objdetect.hpp>
#include <string>
#include <vector>

#include "cuimg/kernels/hog_model_file.h"

namespace {

constexpr char kAttribution[] =
    "Copyright Intel Corporation, Willow Garage Inc., OpenCV Foundation and contributors; "
    "BSD-3-Clause and Apache-2.0, see models/LICENSE.opencv";

int Write(const cuimg::HogModel& model, const std::string& dir) {
  if (absl::Status s = cuimg::ValidateHogModel(model); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", model.name.c_str(), std::string(s.message()).c_str());
    return 1;
  }
  const std::string path = dir + "/" + model.name + cuimg::kHogModelExtension;
  std::ofstream out(path, std::ios::binary);
  out << cuimg::FormatHogModel(model);
  if (!out.flush()) {
    std::fprintf(stderr, "%s: cannot be written\n", path.c_str());
    return 1;
  }
  std::printf("wrote %s (%dx%d, %zu weights)\n", path.c_str(), model.window_width,
              model.window_height, model.weights.size());
  return 0;
}

// svm = DescriptorSize() weights followed by the bias (OpenCV's layout).
cuimg::HogModel FromSvm(const std::string& name, int width, int height, bool gamma,
                        const std::vector<float>& svm, const std::string& description) {
  cuimg::HogModel m;
  m.name = name;
  m.window_width = width;
  m.window_height = height;
  m.gamma_correction = gamma;
  m.description = description;
  if (!svm.empty()) {
    m.weights.assign(svm.begin(), svm.end() - 1);
    m.bias = svm.back();
  }
  return m;
}

int ExportBuiltIn(const std::string& dir) {
  // HOGDescriptor() enables gamma correction; OpenCV's peopledetect sample builds its 48x96
  // descriptor with the full constructor, whose default is no gamma correction.
  const int a = Write(
      FromSvm("opencv_people_64x128", 64, 128, true, cv::HOGDescriptor::getDefaultPeopleDetector(),
              std::string("OpenCV ") + CV_VERSION +
                  " HOGDescriptor::getDefaultPeopleDetector(): Dalal-Triggs people detector, "
                  "64x128 window. " +
                  kAttribution),
      dir);
  const int b = Write(
      FromSvm("opencv_daimler_48x96", 48, 96, false, cv::HOGDescriptor::getDaimlerPeopleDetector(),
              std::string("OpenCV ") + CV_VERSION +
                  " HOGDescriptor::getDaimlerPeopleDetector(): people detector trained on the "
                  "Daimler pedestrian data, 48x96 window. " +
                  kAttribution),
      dir);
  return a != 0 || b != 0 ? 1 : 0;
}

int Convert(const std::string& file, const std::string& name, const std::string& dir) {
  cv::HOGDescriptor hog;
  if (!hog.load(file)) {
    std::fprintf(stderr, "%s: not a HOGDescriptor OpenCV can load\n", file.c_str());
    return 1;
  }
  if (hog.blockSize != cv::Size(16, 16) || hog.blockStride != cv::Size(8, 8) ||
      hog.cellSize != cv::Size(8, 8) || hog.nbins != 9 || hog.signedGradient ||
      hog.histogramNormType != cv::HOGDescriptor::L2Hys || hog.L2HysThreshold != 0.2 ||
      (hog.winSigma > 0 && hog.winSigma != 4.0)) {
    std::fprintf(stderr,
                 "%s: cuimg computes OpenCV's default HOG geometry only (block 16, stride 8, "
                 "cell 8, 9 unsigned bins, L2-Hys 0.2, window sigma 4)\n",
                 file.c_str());
    return 1;
  }
  if (hog.svmDetector.size() != hog.getDescriptorSize() + 1) {
    std::fprintf(stderr, "%s: %zu SVM coefficients, expected %zu weights + 1 bias\n", file.c_str(),
                 hog.svmDetector.size(), hog.getDescriptorSize());
    return 1;
  }
  return Write(FromSvm(name, hog.winSize.width, hog.winSize.height, hog.gammaCorrection,
                       hog.svmDetector, "converted from " + file + " by export_opencv_models"),
               dir);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1) return ExportBuiltIn(args[0]);
  if (args.size() == 5 && args[0] == "--from" && args[2] == "--name") {
    return Convert(args[1], args[3], args[4]);
  }
  std::fprintf(stderr,
               "usage: export_opencv_models OUT_DIR\n"
               "       export_opencv_models --from FILE --name NAME OUT_DIR\n");
  return 2;
}
