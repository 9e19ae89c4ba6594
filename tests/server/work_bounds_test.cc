// Bounds on a request's work: the cancel token, the work estimates that admission caps, the cap
// on grouped hits, and the CPU backend stopping mid-chain once a request's token stops.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "cuimg/common/cancel_token.h"
#include "cuimg/kernels/structuring_element.h"
#include "server/backend/backend.h"
#include "server/scheduling/work_estimate.h"
#include "server/server_options.h"
#include "tests/testing/random_image.h"

namespace cuimg {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

StructuringElement Element(ElementShape shape, int width, int height, int depth = 0) {
  absl::StatusOr<StructuringElement> se =
      StructuringElement::Create(ElementSpec{shape, width, height, depth, -1, -1, -1, {}});
  EXPECT_TRUE(se.ok()) << se.status();
  return *se;
}

MorphologyStep Step(MorphOp op, const StructuringElement& se, int iterations = 1) {
  return MorphologyStep{op, se, iterations, BorderMode::kNeutral, 0};
}

TEST(CancelToken, ReportsWhyWorkStops) {
  EXPECT_TRUE(NeverCancelled().Check().ok());

  std::atomic<bool> hard_stop{false};
  CancelToken token(Clock::now() + std::chrono::hours(1), &hard_stop);
  EXPECT_TRUE(token.Check().ok());
  token.Cancel();
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kCancelled);
  token.MarkDeadlinePassed();  // the first mark stays
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kCancelled);
  hard_stop = true;  // shutdown wins over the client's reasons
  EXPECT_EQ(token.Check().code(), absl::StatusCode::kUnavailable);

  CancelToken expired(Clock::now() - milliseconds(1), nullptr);
  EXPECT_EQ(expired.Check().code(), absl::StatusCode::kDeadlineExceeded);
  CancelToken marked(Clock::time_point::max(), nullptr);
  marked.MarkDeadlinePassed();
  EXPECT_EQ(marked.Check().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(marked.Stopped());
}

TEST(CancelToken, ConvertsGrpcDeadlines) {
  EXPECT_EQ(CancelToken::SteadyDeadline(std::chrono::system_clock::time_point::max()),
            Clock::time_point::max());
  const auto steady =
      CancelToken::SteadyDeadline(std::chrono::system_clock::now() + milliseconds(500));
  EXPECT_GT(steady, Clock::now() + milliseconds(400));
  EXPECT_LT(steady, Clock::now() + milliseconds(600));
}

TEST(WorkEstimate, MorphologyFollowsEachBackendsAlgorithm) {
  const Extent e{100, 100, 1};  // 10^4 pixels
  const StructuringElement rect3 = Element(ElementShape::kRect, 3, 3);
  const StructuringElement line5 = Element(ElementShape::kRect, 5, 1);
  const StructuringElement disk5 = Element(ElementShape::kEllipse, 5, 5);
  struct Case {
    std::vector<MorphologyStep> steps;
    WorkModel model;
    double want;
  };
  const std::vector<Case> cases = {
      // The CPU reference reads every member in every pass.
      {{Step(MorphOp::kDilate, rect3)}, WorkModel::kCpuReference, 1e4 * 9},
      {{Step(MorphOp::kOpen, rect3, 2)}, WorkModel::kCpuReference, 1e4 * (4 * 9 + 1)},
      {{Step(MorphOp::kErode, disk5), Step(MorphOp::kDilate, line5)},
       WorkModel::kCpuReference,
       1e4 * (static_cast<double>(disk5.MemberCount()) + 5)},
      // The CUDA kernels: three operations per box axis, two lookups per chord plus the tables.
      {{Step(MorphOp::kDilate, rect3)}, WorkModel::kCudaKernels, 1e4 * 6},
      {{Step(MorphOp::kDilate, line5, 3)}, WorkModel::kCudaKernels, 1e4 * 3 * 3},
      {{Step(MorphOp::kGradient, disk5)}, WorkModel::kCudaKernels, 1e4 * (2 * (2 * 5 + 3) + 1)},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_DOUBLE_EQ(MorphologyWork(e, cases[i].steps, cases[i].model), cases[i].want) << i;
  }
  EXPECT_EQ(WorkModelOf("cuda"), WorkModel::kCudaKernels);
  EXPECT_EQ(WorkModelOf("cpu"), WorkModel::kCpuReference);
}

TEST(WorkEstimate, OtherRpcs) {
  GradientSpec gradient;
  gradient.kernel_length = 7;
  EXPECT_DOUBLE_EQ(GradientWork(Extent{10, 10, 2}, gradient), 200.0 * 4 * 7);
  std::vector<PyramidLevel> levels(2);
  levels[0].width = levels[0].height = 4;
  levels[1].width = levels[1].height = 2;
  EXPECT_DOUBLE_EQ(PyramidWork(levels), 4.0 * 20);
  DetectGeometry geometry;
  geometry.windows = 10;
  geometry.levels.resize(1);
  geometry.levels[0].width = 64;
  geometry.levels[0].height = 128;
  EXPECT_DOUBLE_EQ(DetectWork(geometry, 3780), 10.0 * 3780 + 64.0 * 64 * 128);
  EXPECT_DOUBLE_EQ(DeformWork(10, 4, 8), 10.0 * 3 * 8 + 8 * 4);
}

TEST(WorkEstimate, TheDefaultCapAdmitsDocumentedRequestsAndRefusesTheAttack) {
  const double cap = ServerOptions().max_request_work;
  for (WorkModel model : {WorkModel::kCpuReference, WorkModel::kCudaKernels}) {
    // README and demo sizes, and the benchmarks' largest: a 1080p frame through a 63x63 disk, a
    // 512x512x300 volume closed by a 9x9x9 ball.
    EXPECT_TRUE(CheckRequestWork(
                    MorphologyWork(
                        Extent{1920, 1080, 1},
                        {Step(MorphOp::kDilate, Element(ElementShape::kEllipse, 63, 63))}, model),
                    cap)
                    .ok());
    EXPECT_TRUE(CheckRequestWork(
                    MorphologyWork(
                        Extent{512, 512, 300},
                        {Step(MorphOp::kClose, Element(ElementShape::kEllipse, 9, 9, 9))}, model),
                    cap)
                    .ok());
    // Issue #38: 64 steps of 1023x1023 disks on 4096x4096.
    const std::vector<MorphologyStep> attack(
        64, Step(MorphOp::kDilate, Element(ElementShape::kEllipse, 1023, 1023)));
    const absl::Status refused =
        CheckRequestWork(MorphologyWork(Extent{4096, 4096, 1}, attack, model), cap);
    EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(refused.message().find("--max_request_work"), absl::string_view::npos);
    EXPECT_NE(refused.message().find("estimated work is"), absl::string_view::npos);
  }
  EXPECT_TRUE(CheckRequestWork(1e30, 0).ok());  // 0: no cap
}

TEST(WorkEstimate, GroupingTakesAtMostTheCap) {
  DetectSpec spec;
  EXPECT_TRUE(CheckGroupedHits(100, spec, 100).ok());
  const absl::Status over = CheckGroupedHits(101, spec, 100);
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(over.message().rfind("hit_threshold: ", 0), 0u) << over.message();
  EXPECT_NE(over.message().find("--max_grouped_hits"), absl::string_view::npos);
  EXPECT_TRUE(CheckGroupedHits(101, spec, 0).ok());
  spec.grouping = DetectGrouping::kNone;  // every hit is returned as it is: linear
  EXPECT_TRUE(CheckGroupedHits(101, spec, 100).ok());
}

// A chain of about a minute of one core: the backend must give up within a fraction of a second
// of its token stopping, from any of its three causes.
class CpuBackendStops : public ::testing::Test {
 protected:
  CpuBackendStops()
      : input_(testing::RandomImage(PixelType::kU8, Extent{512, 512, 1}, 7)),
        output_(PixelType::kU8, input_.extent(), 1),
        steps_(16, Step(MorphOp::kDilate, Element(ElementShape::kEllipse, 101, 101))) {
    ServerOptions options;
    options.cpu_threads_per_request = 1;
    backend_ = CreateCpuBackend(options);
  }

  // Runs the chain; returns its status and how long it ran.
  std::pair<absl::Status, double> Run(const CancelToken& cancel) {
    StageTimes times;
    const auto start = Clock::now();
    absl::Status status =
        backend_->Morphology(input_.view(), output_.view(), steps_, nullptr, &times, cancel);
    return {status, std::chrono::duration<double>(Clock::now() - start).count()};
  }

  Image input_;
  Image output_;
  std::vector<MorphologyStep> steps_;
  std::unique_ptr<Backend> backend_;
};

TEST_F(CpuBackendStops, AtItsDeadline) {
  CancelToken cancel(Clock::now() + milliseconds(200), nullptr);
  const auto [status, seconds] = Run(cancel);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_LT(seconds, 1.0);
}

TEST_F(CpuBackendStops, WhenCancelledFromAnotherThread) {
  CancelToken cancel(Clock::time_point::max(), nullptr);
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    cancel.Cancel();
  });
  const auto [status, seconds] = Run(cancel);
  canceller.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_LT(seconds, 1.0);
}

TEST_F(CpuBackendStops, OnAHardStop) {
  std::atomic<bool> hard_stop{false};
  CancelToken cancel(Clock::time_point::max(), &hard_stop);
  std::thread stopper([&] {
    std::this_thread::sleep_for(milliseconds(200));
    hard_stop = true;
  });
  const auto [status, seconds] = Run(cancel);
  stopper.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_LT(seconds, 1.0);
}

TEST_F(CpuBackendStops, AndEveryWorkCallChecksItsToken) {
  CancelToken cancel(Clock::time_point::max(), nullptr);
  cancel.Cancel();
  StageTimes times;
  GradientOutputs g;
  std::vector<float> gx(input_.extent().Pixels()), gy(input_.extent().Pixels());
  g.gx = gx.data();
  g.gy = gy.data();
  EXPECT_EQ(backend_->Gradient(input_.view(), GradientSpec{}, g, &times, cancel).code(),
            absl::StatusCode::kCancelled);
  PyramidSpec pyramid;
  absl::StatusOr<std::vector<PyramidLevel>> levels =
      PlanPyramidLevels(input_.type(), input_.extent(), pyramid);
  ASSERT_TRUE(levels.ok()) << levels.status();
  std::vector<std::uint8_t> packed(PyramidOutputBytes(*levels));
  const std::vector<PackedPiece> pieces = {PackedPiece{0, packed.size(), packed.data()}};
  EXPECT_EQ(backend_->Pyramid(input_.view(), pyramid, pieces, &times, cancel).code(),
            absl::StatusCode::kCancelled);
  // Not cancelled, the same call runs to the end.
  EXPECT_TRUE(backend_->Gradient(input_.view(), GradientSpec{}, g, &times, NeverCancelled()).ok());
}

}  // namespace
}  // namespace cuimg
