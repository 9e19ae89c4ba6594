// The server library's shared state under concurrent use, without gRPC's threads in the way (so
// that ThreadSanitizer, which cannot see into Debian's uninstrumented gRPC and Abseil, checks our
// code alone): the resident store, the CPU backend's device slots with a metrics scraper, and the
// work queue with the in-flight budget.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuimg/reference/morphology_reference.h"
#include "server/backend/backend.h"
#include "server/scheduling/work_queue.h"
#include "server/state/inflight_budget.h"
#include "server/state/resident_store.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

TEST(Concurrency, ResidentStoreKeepsEachIdentitysBudgetsUnderManyThreads) {
  constexpr std::uint64_t kBudget = 4096;
  constexpr std::uint32_t kMaxObjects = 8;
  ResidentStore store(ResidentStoreOptions{kBudget, 60, 600, kMaxObjects});
  const std::vector<std::string> identities = {"alice", "bob", "carol"};
  std::atomic<bool> over_budget{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      const std::string& me = identities[t % identities.size()];
      std::vector<std::string> mine;
      for (int i = 0; i < 300; ++i) {
        auto image = std::make_shared<StoredImage>();
        image->image = Image(PixelType::kU8, Extent{1 + (i * 37 + t) % 900, 1, 1});
        absl::StatusOr<ResidentInfo> info = store.Put(me, std::move(image), 0);
        if (info.ok()) mine.push_back(info->handle);
        if (!mine.empty() && i % 3 == 0) (void)store.Get(me, mine[i % mine.size()]);
        if (!mine.empty() && i % 7 == 0) (void)store.Release(me, mine[(i / 7) % mine.size()]);
        if (store.UsedBytes(me) > kBudget || store.List(me).size() > kMaxObjects) {
          over_budget = true;
        }
        (void)store.totals();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(over_budget.load());
  for (const std::string& id : identities) {
    EXPECT_LE(store.UsedBytes(id), kBudget);
    EXPECT_LE(store.List(id).size(), kMaxObjects);
  }
}

TEST(Concurrency, CpuBackendServesParallelRequestsWhileMetricsAreScraped) {
  ServerOptions options;
  options.cpu_devices = 2;
  options.cpu_threads_per_request = 2;
  std::unique_ptr<Backend> backend = CreateCpuBackend(options);
  const Image input = testing::RandomImage(PixelType::kU8, Extent{48, 40, 1}, 5);
  auto se =
      StructuringElement::Create(ElementSpec{ElementShape::kEllipse, 7, 5, 0, -1, -1, -1, {}});
  ASSERT_TRUE(se.ok());
  const std::vector<MorphologyStep> steps = {{MorphOp::kDilate, *se, 1, BorderMode::kNeutral, 0}};
  const Image expected = *MorphologyReference(input, steps);
  std::atomic<bool> stop{false};
  std::thread scraper([&] {
    while (!stop) {
      for (const DeviceStatus& d : backend->Devices()) EXPECT_GE(d.inflight, 0);
    }
  });
  std::atomic<int> mismatches{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < 4; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        Image out(PixelType::kU8, input.extent(), 1);
        StageTimes times;
        ASSERT_TRUE(
            backend->Morphology(input.view(), out.view(), steps, nullptr, &times, NeverCancelled())
                .ok());
        if (testing::FirstMismatch(out, expected) != -1) mismatches.fetch_add(1);
      }
    });
  }
  for (auto& t : workers) t.join();
  stop = true;
  scraper.join();
  EXPECT_EQ(mismatches.load(), 0);
  std::uint64_t requests = 0;
  for (const DeviceStatus& d : backend->Devices()) requests += d.requests;
  EXPECT_EQ(requests, 40u);
}

TEST(Concurrency, WorkQueueAndBudgetReleaseEverythingTheyAdmit) {
  InflightBudget budget(1000, 100);
  std::atomic<int> ran{0};
  std::atomic<int> refused{0};
  {
    WorkQueue queue(3, 16);
    std::vector<std::thread> submitters;
    for (int t = 0; t < 4; ++t) {
      submitters.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          absl::StatusOr<InflightBudget::Reservation> r = budget.Reserve(60, "task");
          if (!r.ok()) {
            refused.fetch_add(1);
            continue;
          }
          auto held = std::make_shared<InflightBudget::Reservation>(*std::move(r));
          if (!queue.Submit([held, &ran] { ran.fetch_add(1); }).ok()) refused.fetch_add(1);
        }
      });
    }
    for (auto& t : submitters) t.join();
  }  // the queue runs what it admitted, then joins
  EXPECT_EQ(ran.load() + refused.load(), 800);
  EXPECT_GT(ran.load(), 0);
  EXPECT_EQ(budget.used(), 0u);
}

}  // namespace
}  // namespace cuimg
