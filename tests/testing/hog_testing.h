// Inputs for the HOG detection tests: random linear SVMs and synthetic frames, by seed; the
// reference's scores on the block features a DetectPlan left in its workspace; and the comparison
// of a frame of a batched plan with the same frame detected alone.
#ifndef CUIMG_TESTS_TESTING_HOG_TESTING_H_
#define CUIMG_TESTS_TESTING_HOG_TESTING_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/hog_detect.h"
#include "cuimg/kernels/hog_types.h"
#include "cuimg/reference/hog_reference.h"

namespace cuimg::testing {

// A w x h window model with small normal weights and a bias that lets some windows through.
inline HogModel RandomModel(int w, int h, std::uint64_t seed) {
  HogModel m;
  m.name = "random";
  m.window_width = w;
  m.window_height = h;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0, 0.05f);
  m.weights.resize(m.DescriptorSize());
  for (float& v : m.weights) v = d(rng);
  m.bias = 0.3f;
  return m;
}

// Smooth structures plus noise, `channels` channels, reproducible by seed.
inline Image Synthetic(int w, int h, int channels, std::uint64_t seed) {
  Image image(PixelType::kU8, Extent{w, h, 1}, channels);
  std::mt19937_64 rng(seed);
  const double fx = 0.02 + (rng() % 100) * 1e-3;
  const double fy = 0.02 + (rng() % 100) * 1e-3;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < channels; ++c) {
        const double v = 128 + 90 * std::sin(x * fx + c) * std::cos(y * fy - c) +
                         static_cast<double>(rng() % 31) - 15;
        image.bytes()[(static_cast<std::size_t>(y) * w + x) * channels + c] =
            static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  }
  return image;
}

// The hits, in HitOrder, that the reference's ScoreWindow and threshold test give on the block
// features `plan`'s blocks kernel left in `workspace` (a host copy, DetectPlan::Features' layout).
inline std::vector<WindowHit> ReferenceHitsOnWorkspace(const DetectPlan& plan,
                                                       const float* workspace,
                                                       const HogModel& model,
                                                       const DetectSpec& spec) {
  std::vector<WindowHit> hits;
  const int step = spec.win_stride / kHogBlockStride;
  for (int li = 0; li < static_cast<int>(plan.geometry().levels.size()); ++li) {
    const DetectLevel& l = plan.geometry().levels[li];
    const DetectPlan::FeaturePlane plane = plan.Features(li);
    HogBlocks blocks;
    blocks.blocks_x = l.blocks_x;
    blocks.blocks_y = l.blocks_y;
    blocks.values.resize(static_cast<std::size_t>(l.blocks_x) * l.blocks_y * kHogBlockFeatures);
    float* out = blocks.values.data();
    for (int by = 0; by < l.blocks_y; ++by) {
      for (int bx = 0; bx < l.blocks_x; ++bx) {
        for (int f = 0; f < kHogBlockFeatures; ++f) {
          *out++ = workspace[plane.At(bx, by, f)];
        }
      }
    }
    for (int wy = 0; wy < l.windows_y; ++wy) {
      for (int wx = 0; wx < l.windows_x; ++wx) {
        const double score = ScoreWindow(blocks, wx * step, wy * step, model);
        if (score >= spec.hit_threshold) hits.push_back(WindowHit{li, wx, wy, score});
      }
    }
  }
  return hits;
}

// The first difference between frame `a_frame` of plan `a`'s results (a host copy of its
// workspace, and that frame's hits: DecodeFrameHits()[a_frame]) and frame `b_frame` of plan `b`'s,
// plans of one input size, model and spec (a batch and a plan of one frame, say): every level's
// block features bit for bit, then the hits (windows and scores). "" when there is none.
inline std::string FrameDifference(const DetectPlan& a, const float* a_workspace,
                                   const std::vector<WindowHit>& a_hits, int a_frame,
                                   const DetectPlan& b, const float* b_workspace,
                                   const std::vector<WindowHit>& b_hits, int b_frame) {
  const std::vector<DetectLevel>& levels = a.geometry().levels;
  const std::string where = absl::StrCat("frame ", a_frame, " vs ", b_frame);
  for (int li = 0; li < static_cast<int>(levels.size()); ++li) {
    const DetectPlan::FeaturePlane pa = a.Features(li, a_frame);
    const DetectPlan::FeaturePlane pb = b.Features(li, b_frame);
    for (int by = 0; by < levels[li].blocks_y; ++by) {
      for (int bx = 0; bx < levels[li].blocks_x; ++bx) {
        for (int f = 0; f < kHogBlockFeatures; ++f) {
          const float va = a_workspace[pa.At(bx, by, f)];
          const float vb = b_workspace[pb.At(bx, by, f)];
          if (std::memcmp(&va, &vb, sizeof(float)) != 0) {
            return absl::StrCat(where, ": level ", li, " block ", bx, ",", by, " feature ", f, " ",
                                va, " vs ", vb);
          }
        }
      }
    }
  }
  if (a_hits.size() != b_hits.size()) {
    return absl::StrCat(where, ": ", a_hits.size(), " hits vs ", b_hits.size());
  }
  for (std::size_t i = 0; i < a_hits.size(); ++i) {
    const WindowHit& ha = a_hits[i];
    const WindowHit& hb = b_hits[i];
    if (ha.level != hb.level || ha.window_x != hb.window_x || ha.window_y != hb.window_y ||
        std::memcmp(&ha.score, &hb.score, sizeof(double)) != 0) {
      return absl::StrCat(where, ": hit ", i, " level ", ha.level, " window ", ha.window_x, ",",
                          ha.window_y, " score ", ha.score, " vs level ", hb.level, " window ",
                          hb.window_x, ",", hb.window_y, " score ", hb.score);
    }
  }
  return "";
}

}  // namespace cuimg::testing

#endif  // CUIMG_TESTS_TESTING_HOG_TESTING_H_
