// A fresh directory under the system's temporary directory for one test, removed with everything
// in it when the object goes.
#ifndef CUIMG_TESTS_TESTING_TEMP_DIR_H_
#define CUIMG_TESTS_TESTING_TEMP_DIR_H_

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace cuimg::testing {

class TempDir {
 public:
  // The name holds the run's random seed and the object's address, so parallel tests never share
  // a directory.
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("cuimg_test_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                         reinterpret_cast<std::uintptr_t>(this));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` inside the directory.
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_TEMP_DIR_H_
