// GPU tests skip cleanly where there is no usable CUDA device (CI, laptops).
#ifndef CUIMG_TESTS_TESTING_GPU_TEST_ENV_H_
#define CUIMG_TESTS_TESTING_GPU_TEST_ENV_H_

#include <gtest/gtest.h>

#include "cuimg/common/device_info.h"

namespace cuimg::testing {

inline bool HasCudaDevice() {
  static const bool has = !ListCudaDevices().empty();
  return has;
}

}  // namespace cuimg::testing

#define CUIMG_SKIP_IF_NO_GPU()                                        \
  do {                                                                \
    if (!::cuimg::testing::HasCudaDevice()) GTEST_SKIP() << "no GPU"; \
  } while (0)

#endif  // CUIMG_TESTS_TESTING_GPU_TEST_ENV_H_
