// DetectPedestrians on the CUDA backend with frames batched (DetectBatcher: --detect_batch_max_size
// 8 in two lanes, 16 streams, 16 callers at once, frames of three kinds mixed) gives every frame
// exactly the hits of a backend that runs one frame at a time (--detect_batch_max_size 1), and
// frames did share launches. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "server/backend/backend.h"
#include "tests/testing/gpu_test_env.h"
#include "tests/testing/hog_testing.h"

namespace cuimg {
namespace {

bool SameHits(const std::vector<WindowHit>& a, const std::vector<WindowHit>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const WindowHit& x, const WindowHit& y) {
                      return x.level == y.level && x.window_x == y.window_x &&
                             x.window_y == y.window_y && x.score == y.score;
                    });
}

TEST(DetectBatchGpu, BatchedFramesEqualFramesAlone) {
  CUIMG_SKIP_IF_NO_GPU();
  ServerOptions alone_options;
  alone_options.detect_batch_max_size = 1;
  ServerOptions batched_options;
  batched_options.detect_batch_max_size = 8;
  batched_options.detect_batch_lanes = 2;
  batched_options.worker_threads = 16;
  absl::StatusOr<std::unique_ptr<Backend>> alone = CreateCudaBackend(alone_options);
  ASSERT_TRUE(alone.ok()) << alone.status();
  absl::StatusOr<std::unique_ptr<Backend>> batched = CreateCudaBackend(batched_options);
  ASSERT_TRUE(batched.ok()) << batched.status();

  const HogModel model = testing::RandomModel(64, 128, 5);
  DetectSpec spec;
  // Three kinds of frame (two shapes, two channel counts), four of each.
  std::vector<Image> frames;
  for (int k = 0; k < 4; ++k) {
    frames.push_back(testing::Synthetic(320, 240, 3, 100 + k));
    frames.push_back(testing::Synthetic(320, 240, 1, 200 + k));
    frames.push_back(testing::Synthetic(256, 192, 3, 300 + k));
  }
  std::vector<std::vector<WindowHit>> expected;
  std::size_t hits = 0;
  for (const Image& f : frames) {
    StageTimes times;
    absl::StatusOr<DetectResult> r =
        (*alone)->DetectPedestrians(f.view(), model, spec, &times, NeverCancelled());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(times.detect_batch, 0);  // nothing batched with --detect_batch_max_size 1
    hits += r->hits.size();
    expected.push_back(r->hits);
  }
  ASSERT_GT(hits, 0u) << "the model finds nothing: the comparison would prove nothing";

  constexpr int kCallers = 16;
  constexpr int kRounds = 6;
  std::atomic<int> mismatches{0};
  std::atomic<int> failures{0};
  std::atomic<int> largest{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        const std::size_t i = static_cast<std::size_t>(t * 7 + round * 5) % frames.size();
        StageTimes times;
        absl::StatusOr<DetectResult> r =
            (*batched)->DetectPedestrians(frames[i].view(), model, spec, &times, NeverCancelled());
        if (!r.ok()) {
          failures.fetch_add(1);
          ADD_FAILURE() << r.status();
          continue;
        }
        if (!SameHits(r->hits, expected[i])) mismatches.fetch_add(1);
        int seen = largest.load();
        while (times.detect_batch > seen &&
               !largest.compare_exchange_weak(seen, times.detect_batch)) {
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  // 16 callers on 16 streams: launches were shared (else this test compared nothing batched).
  EXPECT_GT(largest.load(), 1);
  EXPECT_LE(largest.load(), 8);
}

}  // namespace
}  // namespace cuimg
