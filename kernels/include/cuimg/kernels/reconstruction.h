// Grey-level morphological reconstruction on the GPU: the primitive of the segmentation steps
// (fill_holes, reconstruct_*, open_rec/close_rec, hmax/hmin) that MorphologyPlan runs.
#ifndef CUIMG_KERNELS_RECONSTRUCTION_H_
#define CUIMG_KERNELS_RECONSTRUCTION_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/cancel_token.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/segmentation_types.h"

namespace cuimg {

// One round of the bricks (ReconstructionSchedule::kRounds), as ReconstructionStats::per_round
// records it.
struct ReconstructionRound {
  int bricks = 0;               // bricks on the round's worklist
  std::int64_t iterations = 0;  // the bricks' passes along x, summed
  float us = 0;                 // GPU time between events around the round's launch
};

// What a run did, for benchmarks and tests.
struct ReconstructionStats {
  bool two_levels = false;  // taken by the union-find route (no bricks)
  // kRounds: rounds that had bricks to run, and rounds launched (the last batch may end in empty
  // ones); kQueue: launches, both.
  int rounds = 0;
  int launched_rounds = 0;
  std::int64_t bricks = 0;      // brick runs
  std::int64_t iterations = 0;  // the brick runs' passes along x, summed
  // kRounds: set before Run to have the rounds recorded one by one in `per_round` (the host then
  // looks at the worklist after every round and times each between events: slower, for
  // benchmarks).
  bool profile = false;
  std::vector<ReconstructionRound> per_round;
};

// How the bricks are scheduled (ReconstructionPlan): kQueue, warps take bricks off one queue and
// queue the neighbours their changes reach, until none is queued or running; kRounds, each round
// runs the bricks on a worklist and fills the next round's (the host looks between batches).
enum class ReconstructionSchedule { kQueue, kRounds };

// Choices of ReconstructionPlan::Create that tests and benchmarks compare; the defaults are the
// service's.
struct ReconstructionTuning {
  // The queue: with the face-connectivity bricks, their exact marks and seeds by faces
  // (2026-12-03, H200) it beat the rounds on both workloads measured (hmax 10 on a 512x512x300
  // CT 9.5 against 11.6 ms, open_rec ellipse 9 on a 1080p natural image 156-159 against
  // 185-191 us); before the face bricks the rounds had been faster (35.3 against 37.4 ms, 317
  // against 354 us).
  ReconstructionSchedule schedule = ReconstructionSchedule::kQueue;
  // Bricks first run in raster order; by default in a scattered one, so that the bricks running
  // at once are rarely neighbours (each would run on the other's first values, then again).
  bool raster_first = false;
};

// kAuto: images whose mask and clamped marker hold two values between them (a 0/max mask and a
// marker of the same two values: hole filling, open_rec on masks) take the union-find route;
// the others the bricks. kBricks: always the bricks (tests and benchmarks of that route).
enum class ReconstructionRoute { kAuto, kBricks };

// Reconstruction of a marker under a mask (kDilation) or over it (kErosion), prepared for one
// pixel type, extent and connectivity, after Teodoro's irregular wavefront propagation. The image
// is cut into bricks of 32 x 32 pixels (2D) or 32 x 8 x 4 voxels (3D); a warp runs a brick in
// shared memory: it takes its outside neighbours' values, propagates inside until nothing moves
// (sweeps along x, y and z) and writes back what changed, and the neighbouring bricks its changed
// border pixels touch run again (with face connectivity, only those whose pixels beside them
// they raise). Quiet bricks cost nothing. By default (ReconstructionSchedule::
// kQueue) the bricks run off one queue until none is queued or running; with kRounds, in rounds
// over worklists. The work follows the geodesic paths: a path crossing from one brick into
// another makes the next brick run again (WorstCaseRounds bounds the crossings): a few runs a
// brick on natural images and CT, about the path's length / 32 runs on a one-pixel spiral.
//
// Where the mask and the clamped marker hold only two values lo < hi between them, the
// reconstruction is binary, and cheaper without rounds: by dilation, the components of
// {mask = hi} that hold a pixel where the marker is hi keep hi, every other pixel is lo (erosion:
// the dual). With ReconstructionRoute::kAuto, Run checks for that on the device (one pass, a host
// round trip) and then runs the labelling's union-find (FillUnseededComponentsOnDevice,
// mask_steps.h), whose work does not depend on the components' shapes.
//
// Copyable and immutable. Contract of Run():
// - Pixel types u8, u16, i16, u32, f32; one channel; 2D (depth 1) or 3D.
// - `d_mask` and `d_r` are device arrays of extent.Pixels() elements, densely packed (x fastest),
//   not overlapping each other or the workspace. `d_mask` is only read. `d_r` holds the marker on
//   entry (clamped by the mask here: min(marker, mask) for dilation, max for erosion) and the
//   reconstruction on return: ReconstructionReferenceInto(d_r, d_mask, d_r) bit for bit (f32 up
//   to the sign of zero), NaN included (NaN mask pixels stay NaN and block; NaN marker pixels seed
//   nothing).
// - `workspace` is WorkspaceBytes() of device memory, 256-byte aligned, used only by this call.
// - Runs on `stream` and synchronizes it between launches (the host reads whether bricks are
//   left: kQueue after a budget of 8 brick runs a brick, kRounds after batches of 1, 2, 4 ... 64
//   rounds), looking at `cancel` there: on return the result is complete on the stream (or the
//   token's status is returned and d_r is unspecified).
class ReconstructionPlan {
 public:
  // INVALID_ARGUMENT for an empty extent, a dimension over 2^30, 2^31 - 64 pixels or more (the
  // bricks index pixels in 32 bits; the server takes at most 2^30), or a connectivity that does
  // not suit the extent (field "connectivity").
  static absl::StatusOr<ReconstructionPlan> Create(
      PixelType type, const Extent& extent, ReconstructionMethod method, Connectivity connectivity,
      ReconstructionRoute route = ReconstructionRoute::kAuto,
      const ReconstructionTuning& tuning = ReconstructionTuning{});

  std::size_t WorkspaceBytes() const;
  absl::Status Run(const void* d_mask, void* d_r, void* workspace, cudaStream_t stream,
                   const CancelToken& cancel = NeverCancelled(),
                   ReconstructionStats* stats = nullptr) const;
  // fill_holes: d_r = the reconstruction by erosion over d_mask of the border marker (the mask on
  // the image's border, the type's maximum inside; FillHolesMarker), written here: d_r is not
  // read. Run's contract otherwise; a plan by erosion (INTERNAL otherwise). With the kAuto route a
  // mask of at most two values lo < hi takes the labelling's border-seeded fill (the components
  // of {mask = lo} that touch no border become hi) without the marker: one pass and a host round
  // trip first, as Run's.
  absl::Status RunFillHoles(const void* d_mask, void* d_r, void* workspace, cudaStream_t stream,
                            const CancelToken& cancel = NeverCancelled(),
                            ReconstructionStats* stats = nullptr) const;
  // Run's kernels on the host, brick by brick in queue or worklist order, with host buffers
  // `mask` and `r`
  // (same roles): CPU tests check the kernels' own code without a device. The union-find route
  // runs its CPU reference (FillUnseededComponentsReference) with the spec Run gives the device,
  // so this one member is in the library cuimg_kernel_emulation (kernels and references), not in
  // cuimg_kernels: link it to call it.
  absl::Status EmulateOnHost(const void* mask, void* r, ReconstructionStats* stats = nullptr) const;

  // Bricks of the plan's image.
  std::int64_t Bricks() const;
  // An upper bound on the rounds (kRounds) Run takes on `extent`, and on a brick's runs beyond
  // its first (kQueue), for admission: a geodesic path crosses at most once from one brick into
  // another per pixel it has, so rounds <= pixels + 1 (one final round finds nothing to do). A
  // one-pixel spiral takes about pixels / 64; natural images a few tens at most.
  static std::int64_t WorstCaseRounds(const Extent& extent);

  struct Impl;

 private:
  ReconstructionPlan() = default;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace cuimg

#endif  // CUIMG_KERNELS_RECONSTRUCTION_H_
