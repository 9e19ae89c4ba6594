// A private temporary directory for fuzzers whose readers take paths (Teem, DCMTK): made once per
// process, emptied before each input, removed at exit.
#ifndef CUIMG_TESTS_FUZZ_FUZZ_TEMP_DIR_H_
#define CUIMG_TESTS_FUZZ_FUZZ_TEMP_DIR_H_

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/types/span.h"

namespace cuimg {

class FuzzTempDir {
 public:
  FuzzTempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cuimg-fuzz-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~FuzzTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  const std::filesystem::path& path() const { return path_; }

  // Removes everything inside, keeping the directory.
  void Clear() const {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
      std::filesystem::remove_all(entry.path(), ec);
    }
  }

  std::string Write(const std::string& name, absl::Span<const std::uint8_t> bytes) const {
    const std::string file = (path_ / name).string();
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) std::abort();
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cuimg

#endif  // CUIMG_TESTS_FUZZ_FUZZ_TEMP_DIR_H_
