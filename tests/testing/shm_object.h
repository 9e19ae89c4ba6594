// A POSIX shared-memory object a test creates as a client would (shm_open + ftruncate + mmap),
// unlinked and unmapped when the test is done.
#ifndef CUIMG_TESTS_TESTING_SHM_OBJECT_H_
#define CUIMG_TESTS_TESTING_SHM_OBJECT_H_

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace cuimg::testing {

class ShmObject {
 public:
  // Named `prefix` + "cuimg-test-<pid>-<n>"; `prefix` is "/" or a key prefix such as "/alice.".
  explicit ShmObject(std::size_t bytes, const std::string& prefix = "/") : bytes_(bytes) {
    static std::atomic<int> counter{0};
    key_ = absl::StrCat(prefix, "cuimg-test-", getpid(), "-", counter++);
    fd_ = shm_open(key_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(bytes)) == 0) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
      data_ = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
    }
  }
  ~ShmObject() {
    if (data_ != nullptr) munmap(data_, bytes_);
    if (fd_ >= 0) close(fd_);
    shm_unlink(key_.c_str());
  }
  ShmObject(const ShmObject&) = delete;
  ShmObject& operator=(const ShmObject&) = delete;

  bool ok() const { return data_ != nullptr; }
  const std::string& key() const { return key_; }
  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return bytes_; }
  // Shrinks (or grows) the object under the server, as a misbehaving client could. The test's
  // own mapping keeps its length: touch only what the object still holds.
  bool Truncate(std::size_t bytes) { return ftruncate(fd_, static_cast<off_t>(bytes)) == 0; }

 private:
  std::size_t bytes_;
  std::string key_;
  int fd_ = -1;
  std::uint8_t* data_ = nullptr;
};

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_SHM_OBJECT_H_
