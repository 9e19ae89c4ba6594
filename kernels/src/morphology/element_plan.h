// Host-side planning of one structuring element (ElementPlan, internal to cuimg_kernels): which
// kernel runs it, with which tiles, and the chord tables it reads.
#ifndef CUIMG_KERNELS_SRC_MORPHOLOGY_ELEMENT_PLAN_H_
#define CUIMG_KERNELS_SRC_MORPHOLOGY_ELEMENT_PLAN_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/structuring_element.h"
#include "nested_steps.h"

namespace cuimg::internal {

inline constexpr int kMaxLevels = 11;  // chord lengths < 2^11 (elements are <= 1023 wide)
inline constexpr int kThreads = 256;   // threads per chord-tile block
inline constexpr int kMaxOpt = 8;      // output words per thread (4 or 8)
inline constexpr std::size_t kSmemBudget = 100 * 1024;  // two blocks per SM on Hopper
inline constexpr std::size_t kSmemMax = 220 * 1024;     // one block per SM (huge elements)

// How pixels are packed into 32-bit words for SIMD min/max (integer types; f32 is one per word).
// kSlidingY: word (x, y, z) holds rows y .. y+P-1, for every y, so a lookup at any (dx, dy, dz)
//   is one aligned word. kStackedZ: word holds slices z .. z+P-1 for z a multiple of P; used for
//   2D elements on volumes, where lookups never move in z.
enum class PackMode { kSlidingY, kStackedZ };

// One launch of the chord-tile kernel: a band of the element's chords (all of them unless the
// element is too large for one region in shared memory).
struct ChordBand {
  PackMode mode = PackMode::kSlidingY;
  int tile_w = 0, tile_h = 0, tile_d = 0;  // output tile, pixels
  int rx0 = 0, ry0 = 0, rz0 = 0;           // region origin relative to the tile origin, pixels
  int rw = 0, rh = 0, rd = 0;              // region extent, words
  int levels = 0;                          // doubling tables T_1 .. T_{2^(levels-1)}
  // Chords of level k: [level_start[k], level_split[k]) need one lookup (length 2^k),
  // [level_split[k], level_start[k + 1]) two. Relative to chord_begin.
  int level_start[kMaxLevels + 1] = {};
  int level_split[kMaxLevels] = {};
  std::size_t chord_begin = 0;  // into the plan's chord table (int2 entries)
  int chord_count = 0;
  std::size_t table_offset = 0;  // where the block stages the chords in shared memory
  int opt = 1;                   // output words per thread
  int log2_tile_w = 0;           // tile_w = 1 << log2_tile_w
  int log2_words_y = 0;          // output word rows per tile, a power of two
  std::size_t smem_bytes = 0;    // region words + the chord table
};

inline constexpr int kBoxXYThreads = 256;        // threads per fused box block
inline constexpr int kBoxLinesMaxThreads = 128;  // lines (one thread each) per line-pass block
// Boxes up to this window per axis take the fused kernel, larger ones a line pass per axis
// (measured on 1080p u8, H200: fused 20.2 / 25.0 µs at 5x5 / 9x9, line passes 27.6 / 21.9).
inline constexpr int kBoxXYMaxWindow = 7;

// One pass of a box element. `xy`: the fused x-and-y kernel (morphology_box_xy.cu), window
// `length` x `length_y` at offset (`start`, `start_y`) (= -anchor) from each output, output tiles
// of `tile_w` x `tile_h` staged as `region_rows` x `region_words` packed words (small windows).
// Otherwise a line pass (morphology_box.cu): van Herk/Gil-Werman along `axis` (0 = x, 1 = y,
// 2 = z), window `length` from `start`, a block of `lines` threads handling `outputs` positions
// of as many lines (along x its staged rows `pitch` words apart), its H slots `h_offset` bytes
// into shared memory.
struct BoxPass {
  int axis = 0;
  int length = 1;
  int start = 0;
  int lines = kBoxLinesMaxThreads;
  int outputs = 0;
  int pitch = 0;
  std::size_t h_offset = 0;
  bool xy = false;
  int length_y = 1;
  int start_y = 0;
  int tile_w = 0, tile_h = 0;
  int region_words = 0, region_rows = 0;
  std::size_t smem_bytes = 0;
};

// One launch of the nested-rows kernel (morphology_nested.cu): a 2D section whose rows are runs
// centred on the anchor, symmetric about the anchor row and never wider away from it, applied to
// the min/max of slices z - dz and z + dz. The pass at dz = 0 (always first) writes the output;
// those at dz > 0 (a 3D element's other sections) fold into it. A section that is the anchor
// pixel alone (a ball's poles) needs no pass of its own: the dz = 0 pass folds slices
// z +- point_dz into what it writes.
struct NestedPass {
  int radius = 0;                             // rows -radius .. radius
  int half_width[kNestedMaxRadius + 1] = {};  // of rows +-k, non-increasing in k
  int dz = 0;
  int point_dz = 0;   // dz = 0 pass only; 0: none
  int compiled = -1;  // index of its steps in kCompiledNestedSteps; -1: steps read at run time
};

// The kernel's column steps for `pass`: [k] (k >= 1) before rows +-k join, [0] after the last
// rows join (u_R); zero beyond the radius.
inline void NestedColumnSteps(const NestedPass& pass, int (&steps)[kNestedMaxRadius + 1]) {
  for (int k = 0; k <= kNestedMaxRadius; ++k) steps[k] = 0;
  for (int k = 1; k <= pass.radius; ++k) steps[k] = pass.half_width[k - 1] - pass.half_width[k];
  steps[0] = pass.half_width[pass.radius];
}

// How one erosion/dilation by one element runs.
struct ElementPlan {
  bool separable = false;    // box element: `box` passes; else `nested` if not empty,
  std::vector<BoxPass> box;  // else `bands`. Empty and separable: the 1x1 element (a copy)
  std::vector<NestedPass> nested;
  std::vector<ChordBand> bands;
};

// Plans one element for images of `type` and `extent`; appends its chords (int2: the region
// offsets of the two lookups) to `chord_table`. INVALID_ARGUMENT if a row of chords cannot fit
// shared memory at any tile size (not the case for elements up to 1023 per axis).
absl::StatusOr<ElementPlan> PlanElement(const StructuringElement& se, PixelType type,
                                        const Extent& extent, std::vector<int>* chord_table);

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_SRC_MORPHOLOGY_ELEMENT_PLAN_H_
