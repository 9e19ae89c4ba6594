#include "element_plan.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

#include "common/kernel_attributes.h"

namespace cuimg::internal {
namespace {

// Pixels per 32-bit word (lane_ops.cuh): integers in 16-bit lanes, f32 alone.
int Pack(PixelType type) { return type == PixelType::kF32 ? 1 : 2; }

int FloorLog2(int v) {
  int k = 0;
  while ((2 << k) <= v) ++k;
  return k;
}

struct Span {
  int dx_min = INT_MAX, dx_end = INT_MIN;  // x offsets covered: [dx_min, dx_end]
  int dy_min = INT_MAX, dy_max = INT_MIN;
  int dz_min = INT_MAX, dz_max = INT_MIN;
  int max_length = 1;
  std::size_t chords = 0;
  void Add(const Chord& c) {
    ++chords;
    dx_min = std::min(dx_min, c.dx);
    dx_end = std::max(dx_end, c.dx + c.length - 1);
    dy_min = std::min(dy_min, c.dy);
    dy_max = std::max(dy_max, c.dy);
    dz_min = std::min(dz_min, c.dz);
    dz_max = std::max(dz_max, c.dz);
    max_length = std::max(max_length, c.length);
  }
};

// Region and cost of one tile shape for a band; smem_bytes 0 when the shape is invalid.
struct TileChoice {
  ChordBand band;
  double cost_per_output = 0;
};

int Log2(int v) { return FloorLog2(v); }

TileChoice Evaluate(const Span& s, std::size_t chords_lookups, PackMode mode, int pack, int tile_w,
                    int words_y, int words_z, int opt) {
  TileChoice t;
  ChordBand& b = t.band;
  b.mode = mode;
  b.opt = opt;
  b.tile_w = tile_w;
  b.log2_tile_w = Log2(tile_w);
  b.log2_words_y = Log2(words_y);
  const int span_x = s.dx_end - s.dx_min + 1;
  const int span_y = s.dy_max - s.dy_min + 1;
  const int span_z = s.dz_max - s.dz_min + 1;
  b.rx0 = s.dx_min;
  b.ry0 = s.dy_min;
  b.rz0 = s.dz_min;
  b.rw = tile_w + span_x - 1;
  if (mode == PackMode::kSlidingY) {
    b.tile_h = words_y * pack;
    b.tile_d = words_z;
    b.rh = b.tile_h - pack + span_y;
    b.rd = b.tile_d + span_z - 1;
  } else {
    b.tile_h = words_y;
    b.tile_d = words_z * pack;
    b.rh = b.tile_h + span_y - 1;
    b.rd = words_z;
  }
  b.levels = FloorLog2(s.max_length) + 1;
  const std::size_t region = static_cast<std::size_t>(b.rw) * b.rh * b.rd;
  b.smem_bytes = region * 4;  // + the chord table, added when chords are emitted
  const double outputs = static_cast<double>(tile_w) * words_y * words_z;
  // Per output word: building the levels over the region (load + doubling) and the lookups;
  // lower occupancy (large shared memory) hides latency worse.
  const double blocks_per_sm = std::min(8.0, std::floor(228.0 * 1024 / (b.smem_bytes + 1024)));
  t.cost_per_output = (region * (2.0 + b.levels) / outputs + static_cast<double>(chords_lookups)) *
                      (blocks_per_sm >= 3   ? 1.0
                       : blocks_per_sm >= 2 ? 1.15
                                            : 1.4);
  return t;
}

// The cheapest tile shape whose region fits the shared-memory budget, or smem_bytes 0.
ChordBand ChooseTile(const Span& s, std::size_t lookups, PackMode mode, int pack,
                     const Extent& extent, bool element_3d, std::size_t budget) {
  TileChoice best;
  best.cost_per_output = 1e300;
  for (int opt : {8, 4}) {
    const int words = kThreads * opt;
    for (int tile_w : {32, 64, 128}) {
      for (int words_z : {1, 2, 4, 8, 16}) {
        if (words % (tile_w * words_z) != 0) continue;
        const int words_y = words / (tile_w * words_z);
        if (words_y < 1) continue;
        // Do not tile far beyond the image: wasted threads.
        const int pixels_z = mode == PackMode::kStackedZ ? words_z * pack : words_z;
        if (words_z > 1 && pixels_z > extent.depth + (mode == PackMode::kStackedZ ? pack - 1 : 0)) {
          continue;
        }
        if (!element_3d && mode == PackMode::kSlidingY && words_z > 1 && extent.depth == 1)
          continue;
        TileChoice t = Evaluate(s, lookups, mode, pack, tile_w, words_y, words_z, opt);
        if (t.band.smem_bytes + 8 * s.chords > budget) continue;
        // Penalize tiles much larger than the image (idle threads).
        const double waste_x =
            static_cast<double>(std::max<std::int64_t>(tile_w, extent.width)) / extent.width;
        const double waste_y =
            static_cast<double>(std::max<std::int64_t>(t.band.tile_h, extent.height)) /
            extent.height;
        t.cost_per_output *= waste_x * waste_y;
        if (t.cost_per_output < best.cost_per_output) best = t;
      }
    }
  }
  if (best.cost_per_output == 1e300) return ChordBand{};
  return best.band;
}

std::size_t Lookups(const std::vector<Chord>& chords) {
  std::size_t n = 0;
  for (const Chord& c : chords) n += (c.length & (c.length - 1)) == 0 ? 1 : 2;
  return n;
}

// Fills the band's level ranges and appends its chord entries (int2: region offsets of the two
// lookups), sorted by level, and within a level single lookups (L = 2^k) first.
void EmitChords(std::vector<Chord> chords, ChordBand* b, std::vector<int>* table) {
  auto single = [](const Chord& c) { return (c.length & (c.length - 1)) == 0; };
  std::stable_sort(chords.begin(), chords.end(), [&](const Chord& a, const Chord& c) {
    const int la = FloorLog2(a.length);
    const int lc = FloorLog2(c.length);
    return la != lc ? la < lc : single(a) && !single(c);
  });
  b->chord_begin = table->size() / 2;
  b->chord_count = static_cast<int>(chords.size());
  std::size_t i = 0;
  for (int k = 0; k < kMaxLevels; ++k) {
    b->level_start[k] = static_cast<int>(i);
    while (i < chords.size() && FloorLog2(chords[i].length) == k && single(chords[i])) ++i;
    b->level_split[k] = static_cast<int>(i);
    while (i < chords.size() && FloorLog2(chords[i].length) == k) ++i;
  }
  b->level_start[kMaxLevels] = static_cast<int>(chords.size());
  for (const Chord& c : chords) {
    // kStackedZ bands hold 2D elements only (dz = 0); word planes are whole packs.
    const int ry = c.dy - b->ry0;
    const int rz = b->mode == PackMode::kSlidingY ? c.dz - b->rz0 : 0;
    const int offset = (rz * b->rh + ry) * b->rw + (c.dx - b->rx0);
    table->push_back(offset);
    table->push_back(offset + c.length - (1 << FloorLog2(c.length)));
  }
}

// A line pass along `axis` (morphology_box.cu). A strip of S outputs per line costs about L + 2S
// min/max steps (L + S when S <= L): S = 32 up to L = 64 (more lines in flight for the same steps
// per output), else S = L; rounded up to whole words, at most the line.
// 128 lines per block, halved until the staging (S + L positions per line; along x an odd number
// of words per row) and the H slots (L | 1 4-byte values per line) fit the budget; windows up to
// 1023 fit.
BoxPass PlanBoxPass(int axis, int length, int start, PixelType type, const Extent& extent) {
  constexpr std::size_t kBudget = 200 * 1024;
  BoxPass pass{axis, length, start};
  const std::int64_t n = axis == 0 ? extent.width : axis == 1 ? extent.height : extent.depth;
  pass.outputs = static_cast<int>(std::min<std::int64_t>(length <= 64 ? 32 : length, n));
  pass.outputs = (pass.outputs + 3) / 4 * 4;
  const std::size_t elem = PixelSize(type);
  const std::size_t per_word = elem < 4 ? 4 / elem : 1;
  const std::size_t span = static_cast<std::size_t>(pass.outputs) + length;
  for (pass.lines = kBoxLinesMaxThreads;; pass.lines /= 2) {
    std::size_t staged = 0;
    if (axis == 0) {
      const std::size_t words = ((per_word - 1 + span + per_word - 1) / per_word) | 1;
      pass.pitch = static_cast<int>(words);
      staged = pass.lines * words * 4;
    } else {
      pass.pitch = 0;
      staged = span * pass.lines * elem;
    }
    pass.h_offset = (staged + 15) / 16 * 16;
    pass.smem_bytes = pass.h_offset + static_cast<std::size_t>(pass.lines) * (length | 1) * 4;
    if (pass.smem_bytes <= kBudget || pass.lines == 8) return pass;
  }
}

// The fused x/y box pass for an lx x ly window over `extent`: of the tiles 32 or 64 words wide (a
// warp per row) and 8..64 rows that fit the two-blocks-per-SM budget, the one with the least
// estimated time: shared-memory work (staging plus the doubling steps of both axes, halos
// included; the kernel is instruction-bound) over the share of the current device's block slots
// it fills (kernel_attributes.h). Windows up to kBoxXYMaxWindow always fit.
BoxPass PlanBoxXY(int lx, int ly, int start_x, int start_y, PixelType type, const Extent& extent) {
  constexpr std::size_t kBudget = 100 * 1024;
  const DeviceLimits device = CurrentDeviceLimits();
  const double sms = device.multiprocessors;
  const double smem_per_sm = static_cast<double>(device.shared_memory_per_sm);
  const int per_word = type == PixelType::kF32 ? 1 : 2;  // morphology_box_xy.cu's Packed<T>
  auto steps = [](int length) {
    int n = 1;  // the final two-lookup combine (or staging for length 1)
    for (int k = 1; 2 * k <= length; k *= 2) ++n;
    return n;
  };
  BoxPass best;
  best.tile_h = 0;
  double best_time = 0;
  for (int tile_words : {32, 64}) {
    for (int tile_h = 64; tile_h >= 8; tile_h /= 2) {
      BoxPass pass;
      pass.xy = true;
      pass.length = lx;
      pass.length_y = ly;
      pass.start = start_x;
      pass.start_y = start_y;
      pass.tile_w = tile_words * per_word;
      pass.tile_h = tile_h;
      pass.region_words = (pass.tile_w + lx - 1 + per_word - 1) / per_word + 1;
      pass.region_rows = tile_h + ly - 1;
      pass.smem_bytes = 2 * static_cast<std::size_t>(pass.region_rows) * pass.region_words * 4;
      if (pass.smem_bytes > kBudget) continue;
      const double blocks = std::ceil(static_cast<double>(extent.width) / pass.tile_w) *
                            std::ceil(static_cast<double>(extent.height) / tile_h) * extent.depth;
      const double per_sm =
          std::min(2048.0 / kBoxXYThreads, std::floor(smem_per_sm / pass.smem_bytes));
      const double busy = std::min(1.0, blocks / (sms * per_sm));
      const double work = blocks * pass.region_rows *
                          (pass.region_words * (1.0 + steps(lx)) + tile_words * steps(ly));
      const double time = work / busy;
      if (best.tile_h == 0 || time < best_time) {
        best = pass;
        best_time = time;
      }
    }
  }
  return best;
}

// The index of `pass`'s column steps in kCompiledNestedSteps, -1 if not there.
int FindCompiledSteps(const NestedPass& pass) {
  const NestedRole role = pass.dz > 0         ? NestedRole::kFold
                          : pass.point_dz > 0 ? NestedRole::kWritePoints
                                              : NestedRole::kWrite;
  int steps[kNestedMaxRadius + 1];
  NestedColumnSteps(pass, steps);
  for (int i = 0; i < kCompiledNestedStepCount; ++i) {
    const CompiledNestedSteps& c = kCompiledNestedSteps[i];
    if (c.role == role && c.radius == pass.radius &&
        std::equal(steps, steps + pass.radius + 1, c.steps)) {
      return i;
    }
  }
  return -1;
}

// The nested-rows passes of an element whose sections (one per dz, symmetric in dz) are each
// made of one run per row, centred on the anchor column, symmetric about the anchor row and never
// wider away from it, within the kernel's radius and half-width limits; empty otherwise.
std::vector<NestedPass> PlanNested(const StructuringElement& se) {
  constexpr int kAbsent = -1;
  const int rz = std::max(se.anchor_z(), se.depth() - 1 - se.anchor_z());
  const int ry = std::max(se.anchor_y(), se.height() - 1 - se.anchor_y());
  // half[dz + rz][dy + ry]: the run's half-width, kAbsent for an empty row.
  std::vector<std::vector<int>> half(2 * rz + 1, std::vector<int>(2 * ry + 1, kAbsent));
  for (const Chord& c : se.Chords()) {
    int& h = half[c.dz + rz][c.dy + ry];
    if (h != kAbsent || c.dx > 0 || c.length != 1 - 2 * c.dx) return {};  // two runs or off-centre
    h = -c.dx;
  }
  std::vector<NestedPass> passes;
  for (int dz = 0; dz <= rz; ++dz) {
    const std::vector<int>& section = half[rz + dz];
    if (section != half[rz - dz]) return {};
    int radius = kAbsent;
    for (int dy = 0; dy <= ry; ++dy) {
      if (section[ry + dy] != section[ry - dy]) return {};
      if (section[ry + dy] == kAbsent) break;
      if (dy > 0 && section[ry + dy] > section[ry + dy - 1])
        return {};  // wider away from the centre
      radius = dy;
    }
    if (radius == kAbsent) {
      if (dz == 0) return {};  // the first pass writes the output: it needs the centre section
      // An empty section is skipped (each section is its own pass); a section with rows but no
      // centre row is not nested.
      if (std::any_of(section.begin(), section.end(), [](int h) { return h != kAbsent; }))
        return {};
      continue;
    }
    for (int dy = radius + 1; dy <= ry; ++dy) {
      if (section[ry + dy] != kAbsent) return {};  // a gap between rows
    }
    if (radius > kNestedMaxRadius || section[ry] > kNestedMaxHalfWidth) return {};
    NestedPass pass;
    pass.radius = radius;
    for (int k = 0; k <= radius; ++k) pass.half_width[k] = section[ry + k];
    pass.dz = dz;
    if (dz > 0 && radius == 0 && pass.half_width[0] == 0 && passes.front().point_dz == 0) {
      passes.front().point_dz = dz;  // the anchor pixel alone: folded by the first pass
      continue;
    }
    passes.push_back(pass);
  }
  return passes;
}

}  // namespace

absl::StatusOr<ElementPlan> PlanElement(const StructuringElement& se, PixelType type,
                                        const Extent& extent, std::vector<int>* chord_table) {
  ElementPlan plan;
  if (se.IsBox()) {
    plan.separable = true;
    const int lengths[3] = {se.width(), se.height(), se.depth()};
    const int anchors[3] = {se.anchor_x(), se.anchor_y(), se.anchor_z()};
    // Small windows: x and y in one fused launch (staging both halos costs little); larger
    // ones: a line pass per axis, whose cost does not grow with the window.
    const bool fused =
        (lengths[0] > 1 || lengths[1] > 1) && std::max(lengths[0], lengths[1]) <= kBoxXYMaxWindow;
    if (fused) {
      plan.box.push_back(PlanBoxXY(lengths[0], lengths[1], -anchors[0], -anchors[1], type, extent));
    } else {
      for (int axis = 0; axis < 2; ++axis) {
        if (lengths[axis] > 1) {
          plan.box.push_back(PlanBoxPass(axis, lengths[axis], -anchors[axis], type, extent));
        }
      }
    }
    if (lengths[2] > 1) plan.box.push_back(PlanBoxPass(2, lengths[2], -anchors[2], type, extent));
    return plan;
  }
  plan.nested = PlanNested(se);
  if (extent.width % 4 == 0) {  // the compiled kernels take 4-pixel-aligned rows only
    for (NestedPass& pass : plan.nested) pass.compiled = FindCompiledSteps(pass);
  }
  if (!plan.nested.empty()) return plan;
  const int pack = Pack(type);
  const bool element_3d = se.depth() > 1;
  const PackMode mode =
      (!element_3d && extent.depth > 1 && pack > 1) ? PackMode::kStackedZ : PackMode::kSlidingY;
  std::vector<Chord> chords = se.Chords();
  // Bands: consecutive (dz, dy) rows of chords, as many as fit one region in shared memory
  // (the two-blocks-per-SM budget first, a whole SM's shared memory for huge elements).
  std::size_t begin = 0;
  while (begin < chords.size()) {
    std::size_t end = chords.size();
    for (;;) {
      Span span;
      std::vector<Chord> part(chords.begin() + begin, chords.begin() + end);
      for (const Chord& c : part) span.Add(c);
      ChordBand band;
      for (std::size_t budget : {kSmemBudget, kSmemMax}) {
        band = ChooseTile(span, Lookups(part), mode, pack, extent, element_3d, budget);
        if (band.smem_bytes != 0) break;
      }
      if (band.smem_bytes != 0) {
        band.table_offset = (band.smem_bytes + 15) / 16 * 16;
        band.smem_bytes = band.table_offset + part.size() * 8;
        EmitChords(std::move(part), &band, chord_table);
        plan.bands.push_back(band);
        break;
      }
      // Too large: keep roughly half of the rows (whole rows: chords of one (dz, dy) together).
      std::size_t mid = begin + (end - begin) / 2;
      while (mid > begin + 1 && chords[mid].dy == chords[mid - 1].dy &&
             chords[mid].dz == chords[mid - 1].dz) {
        --mid;
      }
      if (end - begin == 1 || mid <= begin) {
        return absl::InvalidArgumentError(
            "structuring element: a row of chords does not fit shared memory");
      }
      end = mid;
    }
    begin = end;
  }
  return plan;
}

}  // namespace cuimg::internal
