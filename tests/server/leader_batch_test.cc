// LeaderBatch: a lone call runs at once and alone; calls arriving while a batch runs are
// gathered into the next batches (never more than the maximum, oldest first); every call returns
// after its own item ran, exactly once. With a delay, a leader waits for callers announced on
// their way (BatchArrivals) and for them only: never when nobody is announced, and no longer than
// the delay for one that went elsewhere. Each batch is reported by exactly one of its items. With
// lanes, batches run at once, each lane one batch at a time, and every call still runs once.
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
  LeaderBatch<Item> batcher(4, [&](int, absl::Span<Item* const> items) {
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
  LeaderBatch<Item> batcher(kMax, [&](int, absl::Span<Item* const> items) {
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
  LeaderBatch<Item> batcher(kMax, [&](int, absl::Span<Item* const> items) {
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

TEST(LeaderBatch, ALeaderWaitsForACallerAnnouncedOnItsWay) {
  BatchArrivals arrivals;
  std::vector<int> sizes;
  LeaderBatch<Item> batcher({4, std::chrono::seconds(30), &arrivals},
                            [&](int, absl::Span<Item* const> items) {
                              sizes.push_back(static_cast<int>(items.size()));
                              for (Item* i : items) ++i->runs;
                            });
  BatchArrivals::Ticket on_its_way = arrivals.Expect();
  EXPECT_EQ(arrivals.coming(), 1);
  Item a{1}, b{2};
  BatchOutcome first;
  std::thread leader([&] { first = batcher.Submit(&a); });
  while (batcher.waiting() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The leader holds its batch for the announced caller (within the 30 s delay).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(a.runs, 0);
  const BatchOutcome second = batcher.Submit(&b, &on_its_way);
  leader.join();
  EXPECT_EQ(arrivals.coming(), 0);
  EXPECT_EQ(sizes, (std::vector<int>{2}));
  EXPECT_EQ(first.size, 2);
  EXPECT_EQ(second.size, 2);
  EXPECT_TRUE(first.first);
  EXPECT_FALSE(second.first);
  EXPECT_GT(first.waited_us, 0);
  EXPECT_EQ(second.waited_us, 0);
}

TEST(LeaderBatch, ALoneCallWithNobodyAnnouncedNeverWaits) {
  BatchArrivals arrivals;
  LeaderBatch<Item> batcher({4, std::chrono::hours(1), &arrivals},
                            [](int, absl::Span<Item* const> items) {
                              for (Item* i : items) ++i->runs;
                            });
  Item a{1};
  BatchArrivals::Ticket mine = arrivals.Expect();
  const BatchOutcome outcome = batcher.Submit(&a, &mine);
  EXPECT_EQ(a.runs, 1);
  EXPECT_EQ(outcome.size, 1);
  EXPECT_TRUE(outcome.first);
  EXPECT_EQ(outcome.waited_us, 0);
  EXPECT_EQ(arrivals.coming(), 0);
}

TEST(LeaderBatch, ACallerThatGoesElsewhereHoldsABatchNoLongerThanTheDelay) {
  BatchArrivals arrivals;
  LeaderBatch<Item> batcher({4, std::chrono::milliseconds(30), &arrivals},
                            [](int, absl::Span<Item* const> items) {
                              for (Item* i : items) ++i->runs;
                            });
  Item a{1};
  BatchOutcome outcome;
  {
    BatchArrivals::Ticket gone = arrivals.Expect();
    outcome = batcher.Submit(&a);  // waits out the delay: `gone` never arrives
  }
  EXPECT_EQ(a.runs, 1);
  EXPECT_EQ(outcome.size, 1);
  EXPECT_EQ(arrivals.coming(), 0);
}

TEST(LeaderBatch, EveryBatchIsReportedByExactlyOneOfItsItems) {
  constexpr int kMax = 3;
  BatchArrivals arrivals;
  std::atomic<int> batches{0};
  LeaderBatch<Item> batcher({kMax, std::chrono::microseconds(500), &arrivals},
                            [&](int, absl::Span<Item* const> items) {
                              batches.fetch_add(1);
                              for (Item* i : items) ++i->runs;
                              std::this_thread::sleep_for(std::chrono::microseconds(100));
                            });
  constexpr int kThreads = 8;
  constexpr int kCalls = 30;
  std::atomic<int> reported{0};
  std::atomic<int> items_in_reported{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int c = 0; c < kCalls; ++c) {
        Item item;
        BatchArrivals::Ticket ticket = arrivals.Expect();
        const BatchOutcome outcome = batcher.Submit(&item, &ticket);
        EXPECT_EQ(item.runs, 1);
        EXPECT_GE(outcome.size, 1);
        EXPECT_LE(outcome.size, kMax);
        if (outcome.first) {
          reported.fetch_add(1);
          items_in_reported.fetch_add(outcome.size);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reported.load(), batches.load());
  EXPECT_EQ(items_in_reported.load(), kThreads * kCalls);
  EXPECT_EQ(arrivals.coming(), 0);
}

TEST(LeaderBatch, TwoLanesRunTwoBatchesAtOnce) {
  std::atomic<int> started{0};
  std::atomic<bool> both{false};
  std::vector<int> lanes_seen(2, 0);
  LeaderBatch<Item> batcher(
      {4, std::chrono::microseconds(0), nullptr, /*lanes=*/2},
      [&](int lane, absl::Span<Item* const> items) {
        ++lanes_seen.at(static_cast<std::size_t>(lane));
        started.fetch_add(1);
        // Each batch holds its lane until the other has started (10 s at
        // most, so that a batcher running one at a time fails, not hangs).
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (started.load() >= 2) both.store(true);
        for (Item* i : items) ++i->runs;
      });
  Item a{1}, b{2};
  std::thread first([&] { batcher.Submit(&a); });
  while (started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  batcher.Submit(&b);
  first.join();
  EXPECT_TRUE(both.load());
  EXPECT_EQ(a.runs, 1);
  EXPECT_EQ(b.runs, 1);
  EXPECT_EQ(lanes_seen, (std::vector<int>{1, 1}));  // one batch in each lane
}

TEST(LeaderBatch, LanesUnderLoadRunEachCallOnceAndEachLaneOneBatchAtATime) {
  constexpr int kMax = 3;
  constexpr int kLanes = 3;
  BatchArrivals arrivals;
  std::atomic<int> in_lane[kLanes] = {};
  std::atomic<int> running{0};
  std::atomic<int> most_running{0};
  std::atomic<int> bad{0};
  std::atomic<int> batches{0};
  LeaderBatch<Item> batcher(
      {kMax, std::chrono::microseconds(300), &arrivals, kLanes},
      [&](int lane, absl::Span<Item* const> items) {
        if (lane < 0 || lane >= kLanes || items.empty() || items.size() > kMax) {
          bad.fetch_add(1);
          return;
        }
        if (in_lane[lane].fetch_add(1) != 0) bad.fetch_add(1);  // a lane runs one batch
        const int now = running.fetch_add(1) + 1;
        int seen = most_running.load();
        while (now > seen && !most_running.compare_exchange_weak(seen, now)) {
        }
        batches.fetch_add(1);
        for (Item* i : items) ++i->runs;
        std::this_thread::sleep_for(std::chrono::microseconds(150));
        running.fetch_sub(1);
        in_lane[lane].fetch_sub(1);
      });
  constexpr int kThreads = 16;
  constexpr int kCalls = 40;
  std::atomic<int> reported{0};
  std::vector<std::vector<Item>> items(kThreads, std::vector<Item>(kCalls));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (Item& item : items[t]) {
        // Half the calls announce themselves first, so that leaders wait for arrivals while
        // other lanes' leaders take the queue.
        BatchArrivals::Ticket ticket;
        if (t % 2 == 0) ticket = arrivals.Expect();
        const BatchOutcome outcome = batcher.Submit(&item, t % 2 == 0 ? &ticket : nullptr);
        if (outcome.first) reported.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& row : items) {
    for (const Item& i : row) EXPECT_EQ(i.runs, 1);
  }
  EXPECT_EQ(bad.load(), 0);
  EXPECT_LE(most_running.load(), kLanes);
  EXPECT_EQ(reported.load(), batches.load());
  EXPECT_EQ(arrivals.coming(), 0);
}

}  // namespace
}  // namespace cuimg
