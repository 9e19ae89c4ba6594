#include "cuimg/reference/hog_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "cuimg/kernels/detect_geometry.h"
#include "cuimg/kernels/hog_block_votes.h"
#include "cuimg/kernels/pyramid_types.h"
#include "cuimg/reference/parallel_for.h"
#include "detect/hog_math.h"

namespace cuimg {
namespace {

absl::Status CheckDetectInput(const ImageView& image) {
  return ValidateDetectInput(image.type, image.extent, image.channels, "image");
}

std::vector<hog::ExactTap> ExactTaps(int dst, int src) {
  const double scale = ResizeScale(src, dst);
  std::vector<hog::ExactTap> taps(dst);
  for (int d = 0; d < dst; ++d) taps[d] = hog::LinearExactTap(d, scale, src);
  return taps;
}

// normalizeBlockHistogram with OpenCV's SIMD summation order (four lanes, then pairs).
void NormalizeBlock(float* hist) {
  auto sum_squares = [](const float* v) {
    float part[4] = {v[0] * v[0], v[1] * v[1], v[2] * v[2], v[3] * v[3]};
    for (int i = 4; i < kHogBlockFeatures; i += 4) {
      for (int k = 0; k < 4; ++k) part[k] += v[i + k] * v[i + k];
    }
    const float t0 = part[0] + part[1];
    const float t1 = part[2] + part[3];
    return t0 + t1;
  };
  float scale = 1.f / (std::sqrt(sum_squares(hist)) + kHogBlockFeatures * 0.1f);
  for (int i = 0; i < kHogBlockFeatures; ++i)
    hist[i] = std::min(hist[i] * scale, kHogL2HysThreshold);
  scale = 1.f / (std::sqrt(sum_squares(hist)) + 1e-3f);
  for (int i = 0; i < kHogBlockFeatures; ++i) hist[i] *= scale;
}

}  // namespace

absl::StatusOr<Image> ResizeLinearExactU8(const ImageView& src, int width, int height) {
  if (src.type != PixelType::kU8 || src.extent.depth != 1 || src.channels < 1 || src.channels > 4 ||
      src.extent.width < 1 || src.extent.height < 1 || width < 1 || height < 1) {
    return absl::InvalidArgumentError(
        "resize: needs a 2D U8 image of 1..4 channels and sizes >= 1");
  }
  const int sw = static_cast<int>(src.extent.width);
  const int sh = static_cast<int>(src.extent.height);
  const int cn = src.channels;
  const std::vector<hog::ExactTap> tx = ExactTaps(width, sw);
  const std::vector<hog::ExactTap> ty = ExactTaps(height, sh);
  Image out(PixelType::kU8, Extent{width, height, 1}, cn);
  const std::uint8_t* s = src.As<const std::uint8_t>();
  std::uint8_t* d = out.bytes();
  // One loop per channel count, so that the channel loop unrolls.
  auto resize = [&](auto channels) {
    constexpr int kCn = decltype(channels)::value;
    for (int y = 0; y < height; ++y) {
      const std::uint8_t* r0 = s + static_cast<std::size_t>(ty[y].i0) * sw * kCn;
      const std::uint8_t* r1 = s + static_cast<std::size_t>(ty[y].i1) * sw * kCn;
      std::uint8_t* row = d + static_cast<std::size_t>(y) * width * kCn;
      for (int x = 0; x < width; ++x) {
        const hog::ExactTap& t = tx[x];
        for (int c = 0; c < kCn; ++c) {
          const std::uint32_t h0 = hog::ExactRow(r0[t.i0 * kCn + c], r0[t.i1 * kCn + c], t);
          const std::uint32_t h1 = hog::ExactRow(r1[t.i0 * kCn + c], r1[t.i1 * kCn + c], t);
          row[x * kCn + c] = hog::ExactColumn(h0, h1, ty[y]);
        }
      }
    }
  };
  switch (cn) {
    case 1:
      resize(std::integral_constant<int, 1>{});
      break;
    case 2:
      resize(std::integral_constant<int, 2>{});
      break;
    case 3:
      resize(std::integral_constant<int, 3>{});
      break;
    default:
      resize(std::integral_constant<int, 4>{});
      break;
  }
  return out;
}

absl::StatusOr<HogVotes> ComputeHogVotes(const ImageView& level, int padding, bool gamma,
                                         int threads) {
  CUIMG_RETURN_IF_ERROR(CheckDetectInput(level));
  if (padding < 0) return absl::InvalidArgumentError("padding: is negative");
  const int w = static_cast<int>(level.extent.width);
  const int h = static_cast<int>(level.extent.height);
  const int cn = level.channels;
  HogVotes v;
  v.width = w + 2 * padding;
  v.height = h + 2 * padding;
  const std::size_t n = static_cast<std::size_t>(v.width) * v.height;
  v.w0.resize(n);
  v.w1.resize(n);
  v.bin.resize(n);
  float lut[256];
  for (int i = 0; i < 256; ++i) lut[i] = hog::GammaLut(i, gamma);
  // Source column of padded columns -1 .. width (the gradient's neighbours included).
  std::vector<int> xmap(v.width + 2);
  for (int x = -1; x <= v.width; ++x) xmap[x + 1] = hog::Reflect101(x - padding, w) * cn;
  // OpenCV's colour rule changes for the last width % 4 columns of a row (its scalar tail).
  const int simd_end = v.width & ~3;
  const auto* pixels = level.As<const std::uint8_t>();
  ParallelFor(v.height, threads, [&](std::int64_t yi) {
    const int y = static_cast<int>(yi);
    const std::size_t stride = static_cast<std::size_t>(w) * cn;
    const std::uint8_t* above = pixels + hog::Reflect101(y - 1 - padding, h) * stride;
    const std::uint8_t* row = pixels + hog::Reflect101(y - padding, h) * stride;
    const std::uint8_t* below = pixels + hog::Reflect101(y + 1 - padding, h) * stride;
    // The row's gradients first (gathers), then its votes in a loop the compiler vectorizes.
    std::vector<float> dxs(v.width);
    std::vector<float> dys(v.width);
    for (int x = 0; x < v.width; ++x) {
      const int left = xmap[x];
      const int centre = xmap[x + 1];
      const int right = xmap[x + 2];
      if (cn == 1) {
        dxs[x] = lut[row[right]] - lut[row[left]];
        dys[x] = lut[below[centre]] - lut[above[centre]];
        continue;
      }
      float cdx[3];
      float cdy[3];
      for (int c = 0; c < 3; ++c) {
        cdx[c] = lut[row[right + c]] - lut[row[left + c]];
        cdy[c] = lut[below[centre + c]] - lut[above[centre + c]];
      }
      hog::MaxChannel(cdx, cdy, x < simd_end, &dxs[x], &dys[x]);
    }
    const std::size_t first = static_cast<std::size_t>(y) * v.width;
    float* w0 = v.w0.data() + first;
    float* w1 = v.w1.data() + first;
    const int width = v.width;  // a local: the stores below cannot alias it
    std::vector<int> bins(width);
    for (int x = 0; x < width; ++x) {
      const hog::Vote vote = hog::VoteOf(dxs[x], dys[x]);
      w0[x] = vote.w0;
      w1[x] = vote.w1;
      bins[x] = vote.bin0;
    }
    std::copy(bins.begin(), bins.end(), v.bin.begin() + first);
  });
  return v;
}

absl::StatusOr<HogBlocks> ComputeHogBlocks(const HogVotes& votes, int blocks_x, int blocks_y,
                                           int threads) {
  if (blocks_x < 0 || blocks_y < 0 ||
      (blocks_x > 0 && (blocks_x - 1) * kHogBlockStride + kHogBlockSize > votes.width) ||
      (blocks_y > 0 && (blocks_y - 1) * kHogBlockStride + kHogBlockSize > votes.height)) {
    return absl::InvalidArgumentError(absl::StrCat("blocks: ", blocks_x, "x", blocks_y,
                                                   " do not fit ", votes.width, "x", votes.height,
                                                   " pixels"));
  }
  HogBlocks b;
  b.blocks_x = blocks_x;
  b.blocks_y = blocks_y;
  b.values.assign(static_cast<std::size_t>(blocks_x) * blocks_y * kHogBlockFeatures, 0.f);
  const auto& pixel_votes = HogBlockVotes();
  // Where the 2-cell and the 4-cell pixels start.
  std::size_t groups[2] = {0, 0};
  for (const HogPixelVote& pv : pixel_votes) {
    groups[0] += pv.cells == 1;
    groups[1] += pv.cells <= 2;
  }
  ParallelFor(blocks_y, threads, [&](std::int64_t by) {
    for (int bx = 0; bx < blocks_x; ++bx) {
      float* hist =
          b.values.data() + (static_cast<std::size_t>(by) * blocks_x + bx) * kHogBlockFeatures;
      const std::size_t origin =
          static_cast<std::size_t>(by) * kHogBlockStride * votes.width + bx * kHogBlockStride;
      // The table lists pixels voting into 1, then 2, then 4 cells: a loop per group with the
      // cell count fixed (the same order and arithmetic as one loop).
      auto accumulate = [&](auto cells, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const HogPixelVote& pv = pixel_votes[i];
          const std::size_t p = origin + static_cast<std::size_t>(pv.row) * votes.width + pv.col;
          const float a0 = votes.w0[p];
          const float a1 = votes.w1[p];
          const int h0 = votes.bin[p];
          const int h1 = h0 + 1 < kHogBins ? h0 + 1 : 0;
          for (int k = 0; k < decltype(cells)::value; ++k) {
            float* cell = hist + pv.cell[k] * kHogBins;
            const float t0 = cell[h0] + a0 * pv.weight[k];
            const float t1 = cell[h1] + a1 * pv.weight[k];
            cell[h0] = t0;
            cell[h1] = t1;
          }
        }
      };
      accumulate(std::integral_constant<int, 1>{}, 0, groups[0]);
      accumulate(std::integral_constant<int, 2>{}, groups[0], groups[1]);
      accumulate(std::integral_constant<int, 4>{}, groups[1], kHogBlockPixels);
      NormalizeBlock(hist);
    }
  });
  return b;
}

std::vector<float> WindowDescriptor(const HogBlocks& blocks, int bx, int by, int window_width,
                                    int window_height) {
  const int nx = (window_width - kHogBlockSize) / kHogBlockStride + 1;
  const int ny = (window_height - kHogBlockSize) / kHogBlockStride + 1;
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(nx) * ny * kHogBlockFeatures);
  for (int i = 0; i < nx; ++i) {
    for (int j = 0; j < ny; ++j) {
      const float* v = blocks.At(bx + i, by + j);
      out.insert(out.end(), v, v + kHogBlockFeatures);
    }
  }
  return out;
}

double ScoreWindow(const HogBlocks& blocks, int bx, int by, const HogModel& model) {
  double s = model.bias;
  const int nx = model.BlocksX();
  const int ny = model.BlocksY();
  // Column by column, as OpenCV and the weights run; each column's blocks summed on their own
  // first, the GPU's order (hog_scores.h), which differs from OpenCV's one running sum only in
  // the rounding of the double sums.
  for (int i = 0; i < nx; ++i) {
    double column = 0.0;
    for (int j = 0; j < ny; ++j) {
      const float* w =
          model.weights.data() + (static_cast<std::size_t>(i) * ny + j) * kHogBlockFeatures;
      const float* v = blocks.At(bx + i, by + j);
      float part[4] = {w[0] * v[0], w[1] * v[1], w[2] * v[2], w[3] * v[3]};
      for (int k = 4; k < kHogBlockFeatures; k += 4) {
        for (int l = 0; l < 4; ++l) part[l] += v[k + l] * w[k + l];
      }
      const double t0 = part[0] + part[1];
      const double t1 = part[2] + part[3];
      column += t0 + t1;
    }
    s += column;
  }
  return s;
}

absl::StatusOr<DetectResult> DetectReference(const ImageView& image, const HogModel& model,
                                             const DetectSpec& spec, int threads,
                                             const CancelToken& cancel) {
  CUIMG_RETURN_IF_ERROR(CheckDetectInput(image));
  CUIMG_RETURN_IF_ERROR(ValidateHogModel(model));
  DetectResult result;
  CUIMG_ASSIGN_OR_RETURN(
      result.geometry, PlanDetection(image.extent, model.window_width, model.window_height, spec));
  const DetectGeometry& g = result.geometry;
  const int step = g.win_stride / kHogBlockStride;
  for (std::size_t li = 0; li < g.levels.size(); ++li) {
    const DetectLevel& level = g.levels[li];
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    Image resized;
    ImageView view = image;
    if (level.width != image.extent.width || level.height != image.extent.height) {
      CUIMG_ASSIGN_OR_RETURN(resized, ResizeLinearExactU8(image, level.width, level.height));
      view = resized.view();
    }
    CUIMG_ASSIGN_OR_RETURN(HogVotes votes,
                           ComputeHogVotes(view, g.padding, spec.gamma_correction, threads));
    CUIMG_ASSIGN_OR_RETURN(HogBlocks blocks,
                           ComputeHogBlocks(votes, level.blocks_x, level.blocks_y, threads));
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    std::vector<std::vector<WindowHit>> rows(level.windows_y);
    ParallelFor(level.windows_y, threads, [&](std::int64_t wy) {
      if (cancel.Stopped()) return;  // the result is discarded below
      for (int wx = 0; wx < level.windows_x; ++wx) {
        const double score = ScoreWindow(blocks, wx * step, static_cast<int>(wy) * step, model);
        if (score >= spec.hit_threshold) {
          rows[wy].push_back(WindowHit{static_cast<int>(li), wx, static_cast<int>(wy), score});
        }
      }
    });
    CUIMG_RETURN_IF_ERROR(cancel.Check());
    for (const auto& row : rows) result.hits.insert(result.hits.end(), row.begin(), row.end());
  }
  return result;
}

}  // namespace cuimg
