// Heap memory standing in for pinned host memory (HostMemorySource) in pool tests without a GPU:
// counts what is allocated and live, and fails on demand.
#ifndef CUIMG_TESTS_TESTING_COUNTING_HEAP_H_
#define CUIMG_TESTS_TESTING_COUNTING_HEAP_H_

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cuimg/common/pinned_staging_pool.h"

namespace cuimg::testing {

struct CountingHeap {
  int allocations = 0;
  int live = 0;
  bool fail = false;
  HostMemorySource Source() {
    return HostMemorySource{[this](std::size_t bytes) -> absl::StatusOr<void*> {
                              if (fail) return absl::ResourceExhaustedError("heap says no");
                              ++allocations;
                              ++live;
                              return std::malloc(bytes);
                            },
                            [this](void* data) {
                              --live;
                              std::free(data);
                            }};
  }
};

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_COUNTING_HEAP_H_
