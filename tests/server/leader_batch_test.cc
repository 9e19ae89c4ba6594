// LeaderBatch: a lone call runs at once and alone; calls arriving while a batch runs are
// gathered into the next batches (never more than the maximum, oldest first); every call returns
// after its own item ran, exactly once.
#include "server/backend/leader_batch.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace cuimg {
namespace {

struct Item {
  int id = 0;
  int runs = 0;
  int batch_size = 0;
};

TEST(LeaderBatch, ALoneCallRunsAtOnceAlone) {
  std::vector<int> sizes;
  LeaderBatch<Item> batcher(4, [&](absl::Span<Item* const> items) {
    sizes.push_back(static_cast<int>(items.size()));
    for (Item* i : items) ++i->runs;
  });
  Item a{1}, b{2};
  batcher.Submit(&a);
  batcher.Submit(&b);
  EXPECT_EQ(a.runs, 1);
  EXPECT_EQ(b.runs, 1);
  EXPECT_EQ(sizes, (std::vector<int>{1, 1}));
}

TEST(LeaderBatch, CallsArrivingDuringABatchShareTheNextOnesUpToTheMaximum) {
  constexpr int kMax = 3;
  constexpr int kCallers = 10;
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  std::vector<int> sizes;  // written by one batch at a time
  std::vector<int> order;
  LeaderBatch<Item> batcher(kMax, [&](absl::Span<Item* const> items) {
    started.fetch_add(1);
    // The first batch holds the engine until every other caller is queued.
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    sizes.push_back(static_cast<int>(items.size()));
    for (Item* i : items) {
      ++i->runs;
      i->batch_size = static_cast<int>(items.size());
      order.push_back(i->id);
    }
  });
  std::vector<Item> items(kCallers);
  for (int i = 0; i < kCallers; ++i) items[i].id = i;
  std::thread first([&] { batcher.Submit(&items[0]); });
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<std::thread> rest;
  for (int i = 1; i < kCallers; ++i) {
    rest.emplace_back([&, i] { batcher.Submit(&items[i]); });
    // Arrival order = id order.
    while (batcher.waiting() < static_cast<std::size_t>(i)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  release.store(true);
  first.join();
  for (auto& t : rest) t.join();
  for (const Item& i : items) EXPECT_EQ(i.runs, 1) << i.id;
  EXPECT_EQ(items[0].batch_size, 1);
  // The 9 queued calls: three batches of 3, in arrival order.
  EXPECT_EQ(sizes, (std::vector<int>{1, 3, 3, 3}));
  for (int i = 0; i < kCallers; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(batcher.batches(), 4);
}

TEST(LeaderBatch, ManyThreadsEachRunOnceAndBatchesStayWithinTheMaximum) {
  constexpr int kMax = 4;
  std::atomic<int> over{0};
  std::atomic<int> running{0};
  std::atomic<int> overlapped{0};
  LeaderBatch<Item> batcher(kMax, [&](absl::Span<Item* const> items) {
    if (running.fetch_add(1) != 0) overlapped.fetch_add(1);
    if (items.size() > kMax || items.empty()) over.fetch_add(1);
    for (Item* i : items) ++i->runs;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    running.fetch_sub(1);
  });
  constexpr int kThreads = 16;
  constexpr int kCalls = 50;
  std::vector<std::vector<Item>> items(kThreads, std::vector<Item>(kCalls));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (Item& i : items[t]) batcher.Submit(&i);
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& row : items) {
    for (const Item& i : row) EXPECT_EQ(i.runs, 1);
  }
  EXPECT_EQ(over.load(), 0);
  EXPECT_EQ(overlapped.load(), 0);                  // one batch at a time
  EXPECT_LT(batcher.batches(), kThreads * kCalls);  // some calls did share a batch
}

}  // namespace
}  // namespace cuimg
