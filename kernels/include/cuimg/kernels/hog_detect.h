// Pedestrian detection on the GPU: HOG + a linear SVM over every pyramid level, as a plan built
// once on the host and run asynchronously on a stream, writing the window hits to device memory.
#ifndef CUIMG_KERNELS_HOG_DETECT_H_
#define CUIMG_KERNELS_HOG_DETECT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/hog_types.h"

namespace cuimg {

// One hit as the kernels write it (16 bytes).
struct DeviceHit {
  // frame * geometry().levels.size() + the index into geometry().levels (the index alone for a
  // plan of one frame)
  std::int32_t level;
  std::int32_t window_x;
  std::int32_t window_y;
  float score;
};

// Frames one DetectPlan runs at once (in the same launches).
inline constexpr int kMaxDetectFrames = 64;

// A detection prepared for one input size and channel count, one model window and one spec
// (PlanDetection has the level list), over `frames` inputs of that size at once: the frames'
// levels share the launches, frame after frame in each level's part of the grid, so the launches'
// tails and the blocks kernel's strip heights are those of N times the work (a batch of frames of
// one size, as a camera's). Two launches per 64 levels whatever the frames, no host
// synchronization:
//  1. blocks: for every level and frame at once (a flattened grid of strips 14 HOG blocks wide and
//     3 to 16 high, taller for the first levels, sized to the current device's multiprocessors and
//     the frames; the level found from a table in the kernel parameters, the frame from the
//     level's part of the grid), each CUDA block walks 128 columns of its
//     strip down, one thread per column: it samples the level from the input (INTER_LINEAR_EXACT,
//     reflect-101 padding), takes gradients and votes (hog_math.h, the CPU reference's own
//     arithmetic: -fmad=false), sums them into its column's cell rows in shared memory (the block
//     weight is a row factor times a column factor), then 112 threads take the sums across the
//     cells' columns (no atomics) and write the blocks L2-Hys normalized, in quads of four
//     features (Features()), to the workspace (hog_strip.h). The features do not depend on the
//     strips' heights, nor on the other frames;
//  2. scores: all levels and frames at once. A window's score is the CPU reference's sum (per
//     block float partial sums, added in double per block column, the columns' sums then added to
//     the bias in order) and score >= hit_threshold (in double, as the reference decides) goes to
//     the hit list (one atomic counter; the set of hits is deterministic, their order is not:
//     DecodeHits sorts them). With win_stride 8 and a model of at most 16 block rows (the people
//     models) a TF32 tensor-core filter first gives every window an approximate score and lists
//     those within a proven margin of the threshold (S / 128, S the sum of the model blocks'
//     weight norms: 0.37 for the people model), and a CUDA block per listed window computes its
//     exact score (hog_filter.h); otherwise a CUDA block per tile of 32 x 6 windows with a warp per
//     model block column computes every window's exact score (hog_scores.h). Three launches and
//     a 4-byte memset per 64 levels with the filter, two launches without it.
// Copyable and immutable.
//
// Contract of Run() (RunBlocks() then RunScores(), which the benchmark times apart; RunBlocks
// zeroes the hit count and RunScores appends to it, so a RunScores without a RunBlocks before it
// needs the count zeroed: records past the buffer's capacity are dropped, never written):
// - `in`: frames() device pointers, frame f's input at in[f], each U8, extent.Pixels() x channels
//   bytes, channels interleaved, densely packed (1 = gray, 3 = BGR, 4 = BGRA whose alpha is
//   ignored); only read. The frames need not be contiguous, and may be the same buffer.
// - `weights`: device pointer to the DescriptorSize() floats, in its order (HogModel), of the
//   model given to Create(), 16-byte aligned; only read. The bias and a copy of part of the
//   weights (above) travel in the plan.
// - `workspace`: WorkspaceBytes() bytes (frames() x one frame's), 256-byte aligned, used
//   exclusively by this call until the stream reaches its end (may be null when 0).
// - `hits`: HitsBytes() bytes, 16-byte aligned: a uint32 count at byte 0, then from byte 16 that
//   many DeviceHit records, every frame's in one list (DecodeFrameHits splits them). At most
//   frames() x geometry().windows hits, so it never overflows.
// - No buffer may overlap another. Asynchronous on `stream`; the caller synchronizes. Kernel
//   parameters are copied at launch, so the plan may be destroyed once Run() returns.
// - Votes and blocks' inputs are bit-identical to the reference's; a block's 36 features equal
//   its reference block within float rounding (the cells' sums run in another order). From the
//   features, scores and the hit test follow the reference's arithmetic exactly: a hit's score
//   is its double score rounded to float. Against DetectReference, hits may differ only for
//   windows whose score is within about 1e-4 of hit_threshold.
// - Deterministic: the same inputs give the same set of hits with the same scores. A frame's
//   features and hits are bit for bit those of a plan of one frame run on it alone (the frames
//   share launches, never arithmetic).
// - Limits: frames() <= kMaxDetectFrames (64) a plan; the 64 levels a launch pair takes do not
//   depend on the frames. Create refuses frames whose hits could pass 2^32 - 1 records or whose
//   grids pass 2^31 - 1 CUDA blocks (inputs of hundreds of megapixels). The workspace grows with
//   the frames: at 1080p 54 MB a frame, at 768x576 12 MB, and with the filter 16 bytes a window
//   more for its candidate list (WorkspaceBytes()).
class DetectPlan {
 public:
  // INVALID_ARGUMENT for an input ValidateDetectInput refuses (channels other than 1, 3, 4; not
  // a 2D image), frames outside [1, kMaxDetectFrames] or past the limits above, and the errors of
  // ValidateHogModel and PlanDetection. The strips' heights follow how many blocks-kernel CUDA
  // blocks the current device holds at once (an H100's where there is no device) and the frames;
  // the plan runs on any device.
  static absl::StatusOr<DetectPlan> Create(const Extent& extent, int channels,
                                           const HogModel& model, const DetectSpec& spec,
                                           int frames = 1);

  // One frame's levels and windows.
  const DetectGeometry& geometry() const;
  int frames() const;
  std::size_t WorkspaceBytes() const;
  // The workspace's first bytes, which hold the frames' features (Features()); the filter's
  // candidate list follows them.
  std::size_t FeatureBytes() const;
  std::size_t HitsBytes() const;
  // The bytes of a hits buffer holding its count and its first `hits` records: copy this much
  // back first, then the rest only when HitCount says there are more.
  static std::size_t HitsPrefixBytes(std::size_t hits);
  static std::uint32_t HitCount(const void* host_hits);
  // The first `count` hits of a host copy of a hits buffer of a plan of one frame, in HitOrder
  // (a plan of several frames: DecodeFrameHits).
  static std::vector<WindowHit> DecodeHits(const void* host_hits, std::uint32_t count);
  // The first `count` hits of a host copy of this plan's hits buffer, frame by frame: element f
  // holds frame f's hits in HitOrder, as DecodeHits gives a plan of one frame run on it alone.
  std::vector<std::vector<WindowHit>> DecodeFrameHits(const void* host_hits,
                                                      std::uint32_t count) const;

  // INVALID_ARGUMENT unless in.size() == frames() and none is null (one frame: Run({d_in}, ...)).
  absl::Status Run(absl::Span<const void* const> in, const float* weights, void* workspace,
                   void* hits, cudaStream_t stream) const;
  absl::Status RunBlocks(absl::Span<const void* const> in, void* workspace, void* hits,
                         cudaStream_t stream) const;
  absl::Status RunScores(const float* weights, const void* workspace, void* hits,
                         cudaStream_t stream) const;
  // The scores kernels: RunScores takes kDefault; the others stay for detect_bench's before/after
  // in one run. Same contract as RunScores.
  enum class ScoresPath {
    // Where win_stride is 8 and the model has at most 16 block rows and 256 blocks: a TF32
    // tensor-core filter that lists the windows within a margin of hit_threshold, then their
    // exact scores (issue 50). Otherwise kEveryWindow.
    kDefault,
    kEveryWindow,  // every window's exact score (the kernel of issues 33 and 50 before the filter)
    kPerWindow,    // issue 5's: a thread per window, one fused float sum (within 1e-4)
  };
  absl::Status RunScoresWith(ScoresPath path, const float* weights, const void* workspace,
                             void* hits, cudaStream_t stream) const;

  // Runs the kernels' own code (hog_strip.h's and hog_scores.h's phases) on the host, thread by
  // thread and block by block, with host buffers laid out as Run()'s: the same results bit for bit,
  // hits in another order. For tests on machines without a GPU; slow.
  absl::Status EmulateOnHost(absl::Span<const void* const> in, const float* weights,
                             void* workspace, void* hits) const;

  // Where the blocks kernel leaves level `level`'s features (0 <= level < geometry().levels.size())
  // of frame `frame` in the workspace: feature f (0..35, HogBlocks' order) of block (bx, by) is
  // the float at At(bx, by, f), offset + ((by * 9 + f / 4) * pitch + bx) * 4 + f % 4 (in quads of
  // 4 features of one block). For tests and tools that read the workspace back.
  struct FeaturePlane {
    std::int64_t offset = 0;  // floats from the workspace's start
    int pitch = 0;            // quads (4 floats) between rows of quads
    std::int64_t At(int bx, int by, int f) const {
      return offset + ((static_cast<std::int64_t>(by) * 9 + f / 4) * pitch + bx) * 4 + f % 4;
    }
  };
  FeaturePlane Features(int level, int frame = 0) const;

  // How many windows the filter listed (ScoresPath::kDefault) in the last run on a host copy of
  // its workspace (all WorkspaceBytes()): of its last 64 levels; 0 for a plan without the filter.
  // For tests and benchmarks.
  std::uint32_t FilterCandidates(const void* host_workspace) const;

  // Kernel launches Run() makes: 3 per 64 levels with the filter, else 2 (0 without windows:
  // then Run only zeroes the count).
  int LaunchCount() const;
  // Levels, windows, blocks and grid sizes, for logs and benchmarks.
  std::string Describe() const;

  // Opaque; defined where the kernels are launched.
  struct Impl;

 private:
  DetectPlan() = default;

  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_HOG_DETECT_H_
