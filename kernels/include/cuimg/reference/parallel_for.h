// ParallelFor: splits [0, n) into contiguous ranges over a few std::threads. For the CPU
// reference and backend, whose work items are independent rows.
#ifndef CUIMG_REFERENCE_PARALLEL_FOR_H_
#define CUIMG_REFERENCE_PARALLEL_FOR_H_

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace cuimg {

// Calls fn(i) for every i in [0, n), using up to `threads` threads (0 = hardware concurrency).
// Returns when all calls have returned. fn must be safe to call concurrently for distinct i.
template <typename Fn>
void ParallelFor(std::int64_t n, int threads, const Fn& fn) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Small jobs are not worth a thread start.
  const std::int64_t workers = std::min<std::int64_t>(threads, std::max<std::int64_t>(1, n / 16));
  if (workers <= 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (std::int64_t w = 0; w < workers; ++w) {
    const std::int64_t begin = n * w / workers;
    const std::int64_t end = n * (w + 1) / workers;
    pool.emplace_back([&fn, begin, end] {
      for (std::int64_t i = begin; i < end; ++i) fn(i);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace cuimg

#endif  // CUIMG_REFERENCE_PARALLEL_FOR_H_
