// Model files: the repository's two files equal OpenCV 4.6's built-in detectors bit for bit
// (research check 1: 3781 and 1981 coefficients, biases -6.66579151 and -9.063785), formatting
// round-trips, and malformed files are refused with the line (and the file) named.
#include "cuimg/kernels/hog_model_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <opencv2/objdetect.hpp>
#include <string>
#include <vector>

#include "tests/testing/status_matchers.h"

namespace cuimg {
namespace {

using ::cuimg::testing::StatusIs;
using ::testing::HasSubstr;

const std::string kModels = CUIMG_SOURCE_MODELS_DIR;

void ExpectEqualsOpenCv(const HogModel& m, const std::vector<float>& svm, int w, int h) {
  EXPECT_EQ(m.window_width, w);
  EXPECT_EQ(m.window_height, h);
  ASSERT_EQ(m.weights.size() + 1, svm.size());
  for (std::size_t i = 0; i < m.weights.size(); ++i) ASSERT_EQ(m.weights[i], svm[i]) << i;
  EXPECT_EQ(m.bias, svm.back());
}

TEST(HogModelFile, RepositoryModelsEqualOpenCvDetectors) {
  absl::StatusOr<HogModel> people = ReadHogModelFile(kModels + "/opencv_people_64x128.hogsvm");
  ASSERT_TRUE(people.ok()) << people.status();
  EXPECT_EQ(people->name, "opencv_people_64x128");
  EXPECT_TRUE(people->gamma_correction);
  EXPECT_EQ(people->DescriptorSize(), 3780);
  EXPECT_FLOAT_EQ(people->bias, -6.66579151f);
  ExpectEqualsOpenCv(*people, cv::HOGDescriptor::getDefaultPeopleDetector(), 64, 128);

  absl::StatusOr<HogModel> daimler = ReadHogModelFile(kModels + "/opencv_daimler_48x96.hogsvm");
  ASSERT_TRUE(daimler.ok()) << daimler.status();
  EXPECT_FALSE(daimler->gamma_correction);
  EXPECT_EQ(daimler->DescriptorSize(), 1980);
  EXPECT_FLOAT_EQ(daimler->bias, -9.063785f);
  ExpectEqualsOpenCv(*daimler, cv::HOGDescriptor::getDaimlerPeopleDetector(), 48, 96);
}

TEST(HogModelFile, FormatRoundTripsExactly) {
  HogModel m;
  m.window_width = 16;
  m.window_height = 24;
  m.gamma_correction = false;
  m.description = "tiny test model";
  m.bias = 0.1f;
  for (int i = 0; i < m.DescriptorSize(); ++i) m.weights.push_back(1.0f / (i + 3) - 0.07f * i);
  absl::StatusOr<HogModel> back = ParseHogModel(FormatHogModel(m), "tiny");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "tiny");
  EXPECT_EQ(back->description, m.description);
  EXPECT_EQ(back->gamma_correction, false);
  EXPECT_EQ(back->weights, m.weights);
  EXPECT_EQ(back->bias, m.bias);
}

TEST(HogModelFile, MalformedFilesNameTheLine) {
  const std::string header =
      "# comment\ncuimg-hog-svm 1\nwindow 16 16\ngamma_correction 1\ndescription d\nbias 0\n";
  const std::string ok_weights = "weights 36\n" + std::string(36 * 2, ' ');
  struct Case {
    std::string text;
    std::string message;
  };
  std::string values;
  for (int i = 0; i < 36; ++i) values += "0.5 ";
  const std::vector<Case> cases = {
      {"", "unexpected end of file"},
      {"cuimg-hog-svm 2\nwindow 16 16\ngamma_correction 1\ndescription d\nbias 0\nweights 36\n",
       "line 1: unsupported version"},
      {"cuimg-hog-svm 1\nwindow 16\ngamma_correction 1\ndescription d\nbias 0\nweights 36\n",
       "line 2: window"},
      {"cuimg-hog-svm 1\nwindow 20 16\ngamma_correction 1\ndescription d\nbias 0\nweights 36\n" +
           values,
       "window_width"},
      {header + "weights 36\n" + values + "7\n", "line 8: more than the 36 weights"},
      {header + "weights 36\n0.5 nan\n", "line 8: weights[1]: 'nan' is not a finite number"},
      {header + "weights 36\n0.5\n", "found 1 weights, 36 announced"},
      {header + "weights 35\n" + values.substr(4), "weights: 35 values, expected 36"},
      {"cuimg-hog-svm 1\nwindow 16 16\ngamma 1\ndescription d\nbias 0\nweights 36\n",
       "line 3: expected 'gamma_correction'"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ParseHogModel(c.text, "x").status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.text;
  }
  EXPECT_TRUE(ParseHogModel(header + "weights 36\n" + values, "x").ok());
}

TEST(HogModelFile, UnreadableFilesAreNotFoundWithTheirPath) {
  EXPECT_THAT(ReadHogModelFile("/nonexistent/m.hogsvm").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/m.hogsvm")));
}

}  // namespace
}  // namespace cuimg
