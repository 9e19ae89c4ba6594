// Our pixel types as OpenCV depths, for the tests that compare the CPU references with OpenCV.
#ifndef CUIMG_TESTS_TESTING_OPENCV_TYPES_H_
#define CUIMG_TESTS_TESTING_OPENCV_TYPES_H_

#include <opencv2/core.hpp>

#include "cuimg/common/pixel_type.h"

namespace cuimg::testing {

// U32 has no OpenCV 4 depth: -1 (the OpenCV comparisons cover the filter types only).
inline int CvDepth(PixelType t) {
  switch (t) {
    case PixelType::kU32:
      return -1;
    case PixelType::kU8:
      return CV_8U;
    case PixelType::kU16:
      return CV_16U;
    case PixelType::kI16:
      return CV_16S;
    case PixelType::kF32:
      break;
  }
  return CV_32F;
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_OPENCV_TYPES_H_
