// DetectBatcher's rules without a GPU, through a fake group runner: frames of one plan share a
// group (at most max_batch, their workspace bounded), frames of other plans run apart, every
// frame gets its own hits, a bad frame fails only its own call, a lone frame runs at once and
// alone, a frame whose call stops while it waits leaves unrun, and two lanes run two groups at
// once.
#include "server/backend/detect_batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace cuimg {
namespace {

HogModel Model() {
  HogModel m;
  m.name = "fake";
  return m;
}

// A frame whose "pixels" are its id (the fake runner reads d_in as a number).
DetectItem Frame(std::uintptr_t id, const HogModel* model, Extent extent = {64, 128, 1},
                 int channels = 3, std::size_t workspace = 100) {
  DetectItem item;
  item.d_in = reinterpret_cast<const void*>(id);
  item.extent = extent;
  item.channels = channels;
  item.model = model;
  item.workspace_bytes = workspace;
  return item;
}

std::uintptr_t Id(const DetectItem* item) { return reinterpret_cast<std::uintptr_t>(item->d_in); }

std::vector<std::vector<std::uintptr_t>> Ids(const std::vector<std::vector<DetectItem*>>& groups) {
  std::vector<std::vector<std::uintptr_t>> ids;
  for (const auto& g : groups) {
    ids.emplace_back();
    for (const DetectItem* item : g) ids.back().push_back(Id(item));
  }
  return ids;
}

using IdGroups = std::vector<std::vector<std::uintptr_t>>;

TEST(DetectBatcherGroup, FramesOfOnePlanShareAGroupOthersRunApart) {
  const HogModel a = Model();
  const HogModel b = Model();
  DetectSpec other_scale;
  other_scale.scale = 1.2;
  std::vector<DetectItem> frames = {Frame(1, &a), Frame(2, &a, {80, 128, 1}),
                                    Frame(3, &a), Frame(4, &a, {64, 128, 1}, 1),
                                    Frame(5, &b), Frame(6, &a),
                                    Frame(7, &a), Frame(8, &a)};
  frames[6].spec = other_scale;
  std::vector<DetectItem*> items;
  for (DetectItem& f : frames) items.push_back(&f);
  // Classes in order of their first frame, each in arrival order.
  EXPECT_EQ(Ids(DetectBatcher::Group(items, 64, 1 << 20)),
            (IdGroups{{1, 3, 6, 8}, {2}, {4}, {5}, {7}}));
  // At most max_batch frames a group.
  EXPECT_EQ(Ids(DetectBatcher::Group(items, 3, 1 << 20)),
            (IdGroups{{1, 3, 6}, {8}, {2}, {4}, {5}, {7}}));
  // A batch's workspace stays within the bound: 250 bytes hold two frames of 100.
  EXPECT_EQ(Ids(DetectBatcher::Group(items, 64, 250)),
            (IdGroups{{1, 3}, {6, 8}, {2}, {4}, {5}, {7}}));
  // A frame larger than the bound still runs, alone.
  frames[0].workspace_bytes = 1000;
  EXPECT_EQ(Ids(DetectBatcher::Group(items, 64, 250)),
            (IdGroups{{1}, {3, 6}, {8}, {2}, {4}, {5}, {7}}));
}

// A runner that gives frame `id` one hit at (id, id), holds each group until released, and
// fails every group holding the frame `bad`.
struct FakeRunner {
  std::uintptr_t bad = 0;
  std::atomic<bool> hold{false};
  std::atomic<int> started{0};
  std::mutex mu;
  std::vector<std::vector<std::uintptr_t>> groups;  // guarded by mu

  DetectGroupRunner Runner() {
    return [this](absl::Span<DetectItem* const> group)
               -> absl::StatusOr<std::vector<std::vector<WindowHit>>> {
      started.fetch_add(1);
      while (hold.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::vector<std::vector<WindowHit>> hits;
      {
        std::lock_guard<std::mutex> lock(mu);
        groups.emplace_back();
        for (const DetectItem* item : group) groups.back().push_back(Id(item));
      }
      for (const DetectItem* item : group) {
        if (Id(item) == bad) return absl::DataLossError("bad frame");
        const int id = static_cast<int>(Id(item));
        hits.push_back({WindowHit{0, id, id, 1.0}});
      }
      return hits;
    };
  }
};

TEST(DetectBatcher, ALoneFrameRunsAtOnceAlone) {
  FakeRunner fake;
  DetectBatcher batcher({4, std::chrono::microseconds(0)}, fake.Runner());
  const HogModel m = Model();
  DetectItem item = Frame(7, &m);
  ASSERT_TRUE(batcher.Submit(&item, nullptr, NeverCancelled()).ok());
  ASSERT_TRUE(item.hits.ok());
  ASSERT_EQ(item.hits->size(), 1u);
  EXPECT_EQ((*item.hits)[0].window_x, 7);
  EXPECT_EQ(item.frames, 1);
  EXPECT_TRUE(item.first);
}

// Frames 2..kFrames queue while frame 1's group is held; released, they run in groups of at most
// kMax, the bad frame's group again frame by frame.
TEST(DetectBatcher, FramesArrivingTogetherShareGroupsAndABadFrameFailsAlone) {
  constexpr int kMax = 4;
  constexpr int kFrames = 9;
  FakeRunner fake;
  fake.bad = 5;
  fake.hold = true;
  DetectBatcher batcher({kMax, std::chrono::microseconds(0)}, fake.Runner());
  const HogModel m = Model();
  std::vector<DetectItem> items;
  for (int i = 1; i <= kFrames; ++i) items.push_back(Frame(static_cast<std::uintptr_t>(i), &m));
  std::vector<absl::Status> submitted(kFrames);
  std::vector<std::thread> threads;
  threads.emplace_back(
      [&] { submitted[0] = batcher.Submit(&items[0], nullptr, NeverCancelled()); });
  while (fake.started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 1; i < kFrames; ++i) {
    threads.emplace_back(
        [&, i] { submitted[i] = batcher.Submit(&items[i], nullptr, NeverCancelled()); });
    // Arrival order = id order.
    while (batcher.waiting() < static_cast<std::size_t>(i)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  fake.hold = false;
  for (std::thread& t : threads) t.join();
  int firsts = 0;
  int largest = 0;
  for (int i = 0; i < kFrames; ++i) {
    SCOPED_TRACE(i + 1);
    EXPECT_TRUE(submitted[i].ok()) << submitted[i];
    EXPECT_LE(items[i].frames, kMax);
    largest = std::max(largest, items[i].frames);
    firsts += items[i].first ? 1 : 0;
    if (i + 1 == 5) {
      EXPECT_EQ(items[i].hits.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_EQ(items[i].frames, 1);  // rerun alone
      continue;
    }
    ASSERT_TRUE(items[i].hits.ok()) << items[i].hits.status();
    ASSERT_EQ(items[i].hits->size(), 1u);
    EXPECT_EQ((*items[i].hits)[0].window_x, i + 1);
  }
  EXPECT_EQ(largest, kMax);
  // Groups: {1}, {2,3,4,5} failed, then 2, 3, 4, 5 alone, {6,7,8,9}: one `first` each that ran.
  std::lock_guard<std::mutex> lock(fake.mu);
  EXPECT_EQ(fake.groups, (IdGroups{{1}, {2, 3, 4, 5}, {2}, {3}, {4}, {5}, {6, 7, 8, 9}}));
  EXPECT_EQ(firsts, 6);
}

TEST(DetectBatcher, AFrameWhoseCallStopsWhileItWaitsLeavesUnrun) {
  FakeRunner fake;
  fake.hold = true;
  DetectBatcher batcher({4, std::chrono::microseconds(0)}, fake.Runner());
  const HogModel m = Model();
  DetectItem first = Frame(1, &m);
  DetectItem waiting = Frame(2, &m);
  std::thread leader([&] { EXPECT_TRUE(batcher.Submit(&first, nullptr, NeverCancelled()).ok()); });
  while (fake.started.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CancelToken cancel;
  absl::Status status;
  std::thread waiter([&] { status = batcher.Submit(&waiting, nullptr, cancel); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cancel.Cancel();
  waiter.join();  // returns while the first group is still held
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(waiting.frames, 0);
  fake.hold = false;
  leader.join();
  std::lock_guard<std::mutex> lock(fake.mu);
  EXPECT_EQ(fake.groups, (IdGroups{{1}}));
}

// With two lanes a second frame runs while the first's group is held; a third, finding both lanes
// taken, waits, and leaves unrun when its call stops.
TEST(DetectBatcher, TwoLanesRunTwoGroupsAtOnceAndAThirdFrameWaits) {
  FakeRunner fake;
  fake.hold = true;
  DetectBatcher::Options options{4, std::chrono::microseconds(0)};
  options.lanes = 2;
  DetectBatcher batcher(options, fake.Runner());
  const HogModel m = Model();
  DetectItem a = Frame(1, &m);
  DetectItem b = Frame(2, &m);
  DetectItem c = Frame(3, &m);
  std::thread first([&] { EXPECT_TRUE(batcher.Submit(&a, nullptr, NeverCancelled()).ok()); });
  while (fake.started.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread second([&] { EXPECT_TRUE(batcher.Submit(&b, nullptr, NeverCancelled()).ok()); });
  // Both groups start although the first is held (10 s at most: one lane would never start it).
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.started.load() < 2 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(fake.started.load(), 2);
  CancelToken cancel;
  absl::Status status;
  std::thread third([&] { status = batcher.Submit(&c, nullptr, cancel); });
  while (batcher.waiting() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cancel.Cancel();
  third.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(c.frames, 0);
  fake.hold = false;
  first.join();
  second.join();
  EXPECT_EQ(a.frames, 1);
  EXPECT_EQ(b.frames, 1);
  std::lock_guard<std::mutex> lock(fake.mu);
  EXPECT_EQ(fake.groups.size(), 2u);
}

TEST(DetectBatcher, ABatchWaitsForAnnouncedFramesUpToTheDelay) {
  FakeRunner fake;
  DetectBatcher batcher({4, std::chrono::seconds(10)}, fake.Runner());
  const HogModel m = Model();
  DetectItem a = Frame(1, &m);
  DetectItem b = Frame(2, &m);
  BatchArrivals::Ticket ticket_a = batcher.Expect();
  BatchArrivals::Ticket ticket_b = batcher.Expect();
  // `a` leads and waits for `b`, announced and on its way: one group of both.
  std::thread ta([&] { EXPECT_TRUE(batcher.Submit(&a, &ticket_a, NeverCancelled()).ok()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(batcher.Submit(&b, &ticket_b, NeverCancelled()).ok());
  ta.join();
  EXPECT_EQ(a.frames, 2);
  EXPECT_EQ(b.frames, 2);
  std::lock_guard<std::mutex> lock(fake.mu);
  EXPECT_EQ(fake.groups, (IdGroups{{1, 2}}));
}

}  // namespace
}  // namespace cuimg
