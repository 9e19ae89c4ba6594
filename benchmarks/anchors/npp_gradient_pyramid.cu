// NVIDIA NPP anchor for the gradient and pyramid benchmarks: the same workloads as
// gradient_pyramid_bench, done the way an NPP user would.
//
// Build and run on the GPU machine (CUDA 13 with NPP headers and libraries):
//   nvcc -O2 -std=c++17 -arch=sm_90 npp_gradient_pyramid.cu -o npp_gradient_pyramid
//        -lnppif -lnppig -lnppidei -lnppc   (one line)
//   ./npp_gradient_pyramid [--quick]
// nppif holds the separable filters, nppig the resizes, nppidei the 8u -> 32f conversion, nppc the
// core (nppGetLibVersion).
//
// NPP entry points used (CUDA 13 NPP has only the _Ctx variants):
//   NppStatus nppiConvert_8u32f_C1R_Ctx(const Npp8u* pSrc, int nSrcStep, Npp32f* pDst,
//       int nDstStep, NppiSize oSizeROI, NppStreamContext nppStreamCtx);
//   NppStatus nppiFilterRowBorder_32f_C1R_Ctx(const Npp32f* pSrc, Npp32s nSrcStep,
//       NppiSize oSrcSize, NppiPoint oSrcOffset, Npp32f* pDst, Npp32s nDstStep, NppiSize oSizeROI,
//       const Npp32f* pKernel, Npp32s nMaskSize, Npp32s nAnchor, NppiBorderType eBorderType,
//       NppStreamContext nppStreamCtx);
//   NppStatus nppiFilterColumnBorder_32f_C1R_Ctx(... same parameters ...);
//   NppStatus nppiResize_32f_C1R_Ctx(const Npp32f* pSrc, int nSrcStep, NppiSize oSrcSize,
//       NppiRect oSrcRectROI, Npp32f* pDst, int nDstStep, NppiSize oDstSize, NppiRect oDstRectROI,
//       int eInterpolation, NppStreamContext nppStreamCtx);
//   NppStatus nppiResizeBatch_32f_C1R_Advanced_Ctx(int nMaxWidth, int nMaxHeight,
//       NppiImageDescriptor* pBatchSrc, NppiImageDescriptor* pBatchDst,
//       NppiResizeBatchROI_Advanced* pBatchROI, unsigned int nBatchSize, int eInterpolation,
//       NppStreamContext nppStreamCtx);   // descriptor arrays in device memory
// The filter kernels are device arrays with the coefficients in reverse order (NPP convolves);
// the *Border filters support only NPP_BORDER_REPLICATE, so they differ from cuimg's reflect-101
// within 3 pixels of the border. NPP has no u8 -> f32 resize: the pyramid converts the base once,
// then resizes in 32f.
//
// Workloads (anchor "npp" = what an NPP user writes; "nppbatch" = the batched resize):
//   npp_gradient_<size>_u8_len7: 1 conversion + 4 filter passes (gx: row derivative then column
//     smoothing; gy: row smoothing then column derivative), sigma 1.4;
//   npp_pyramid31_1080p_u8_f32: 1 conversion + 31 nppiResize_32f calls from the base;
//   nppbatch_pyramid31_1080p_u8_f32: 1 conversion + 1 nppiResizeBatch_32f_C1R_Advanced call.
// Every timing is a CUDA event pair around the NPP calls only, enqueued while a spin kernel holds
// the stream (GPU time, not host submission; device data resident), 5 warm-up
// runs then 25 timed ones, median reported; inputs rotate among 3 random buffers. After timing,
// each workload's result for input 0 is compared with a host computation ("max_abs_diff":
// interior pixels for the gradient, every pixel of every level for the pyramid, in intensity
// units of the u8 input); it is reported, not enforced.
// Output: one JSON object per line on stdout; exit status 1 if any workload failed to run.
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "npp_anchor.cuh"

namespace {

using npp_anchor::DeviceBuffer;
using npp_anchor::MakeNppContext;
using npp_anchor::MedianUs;
using Device = DeviceBuffer<void>;

std::vector<Npp8u> RandomImage(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Npp8u> v(n);
  for (auto& x : v) x = static_cast<Npp8u>(rng());
  return v;
}

// cuimg's taps for length 7, sigma 1.4 (gradient_types.h): smoothing exp(-k^2/2s^2) normalized,
// derivative k exp(-k^2/2s^2) / sum_j j^2 exp(-j^2/2s^2); index k + 3.
void GradientTaps(std::vector<double>* smooth, std::vector<double>* deriv) {
  const double s2 = 2 * 1.4 * 1.4;
  double sum = 0, moment = 0;
  smooth->assign(7, 0);
  deriv->assign(7, 0);
  for (int k = -3; k <= 3; ++k) {
    (*smooth)[k + 3] = std::exp(-k * k / s2);
    sum += (*smooth)[k + 3];
    moment += k * k * std::exp(-k * k / s2);
  }
  for (int k = -3; k <= 3; ++k) {
    (*smooth)[k + 3] /= sum;
    (*deriv)[k + 3] = k * std::exp(-k * k / s2) / moment;
  }
}

std::string JsonEscape(const std::string& in) {
  std::string o;
  for (char c : in) {
    if (c == '"' || c == '\\') o += '\\';
    o += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return o;
}

struct Result {
  double median_us = 0;
  int calls = 0;
  double max_abs_diff = 0;
  std::string note;
};

// ---- gradient: convert, then row/column passes for gx and gy ----

Result Gradient(int w, int h, const NppStreamContext& ctx, int warmup, int runs) {
  const cudaStream_t stream = ctx.hStream;
  const size_t n = size_t(w) * h;
  constexpr int kInputs = 3;
  std::vector<std::unique_ptr<Device>> inputs;
  std::vector<Npp8u> host0;
  for (int i = 0; i < kInputs; ++i) {
    const std::vector<Npp8u> host = RandomImage(n, 1234 + i);
    if (i == 0) host0 = host;
    inputs.push_back(std::make_unique<Device>(n));
    CUDA_CHECK(cudaMemcpy(inputs.back()->p, host.data(), n, cudaMemcpyHostToDevice));
  }
  Device f32(n * 4), tmp(n * 4), gx(n * 4), gy(n * 4);
  std::vector<double> smooth, deriv;
  GradientTaps(&smooth, &deriv);
  // NPP convolves: coefficients reversed (the smoothing taps are symmetric anyway).
  std::vector<Npp32f> smooth_rev(7), deriv_rev(7);
  for (int i = 0; i < 7; ++i) {
    smooth_rev[i] = static_cast<Npp32f>(smooth[6 - i]);
    deriv_rev[i] = static_cast<Npp32f>(deriv[6 - i]);
  }
  Device d_smooth(7 * 4), d_deriv(7 * 4);
  CUDA_CHECK(cudaMemcpy(d_smooth.p, smooth_rev.data(), 7 * 4, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_deriv.p, deriv_rev.data(), 7 * 4, cudaMemcpyHostToDevice));
  const NppiSize size{w, h};
  const NppiPoint origin{0, 0};
  const int step = w * 4;
  auto op = [&](int i) {
    NPP_CHECK(nppiConvert_8u32f_C1R_Ctx(inputs[i % kInputs]->as<Npp8u>(), w, f32.as<Npp32f>(), step,
                                        size, ctx));
    NPP_CHECK(nppiFilterRowBorder_32f_C1R_Ctx(f32.as<Npp32f>(), step, size, origin,
                                              tmp.as<Npp32f>(), step, size, d_deriv.as<Npp32f>(), 7,
                                              3, NPP_BORDER_REPLICATE, ctx));
    NPP_CHECK(nppiFilterColumnBorder_32f_C1R_Ctx(tmp.as<Npp32f>(), step, size, origin,
                                                 gx.as<Npp32f>(), step, size, d_smooth.as<Npp32f>(),
                                                 7, 3, NPP_BORDER_REPLICATE, ctx));
    NPP_CHECK(nppiFilterRowBorder_32f_C1R_Ctx(f32.as<Npp32f>(), step, size, origin,
                                              tmp.as<Npp32f>(), step, size, d_smooth.as<Npp32f>(),
                                              7, 3, NPP_BORDER_REPLICATE, ctx));
    NPP_CHECK(nppiFilterColumnBorder_32f_C1R_Ctx(tmp.as<Npp32f>(), step, size, origin,
                                                 gy.as<Npp32f>(), step, size, d_deriv.as<Npp32f>(),
                                                 7, 3, NPP_BORDER_REPLICATE, ctx));
  };
  Result r;
  r.median_us = MedianUs(stream, warmup, runs, op);
  r.calls = 5;
  r.note =
      "nppiConvert_8u32f + 2x(nppiFilterRowBorder_32f + nppiFilterColumnBorder_32f), "
      "NPP_BORDER_REPLICATE, 7 taps sigma 1.4";
  // Check: interior pixels (replicate and reflect-101 agree there) against a float64 host sum.
  op(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> hx(n), hy(n);
  CUDA_CHECK(cudaMemcpy(hx.data(), gx.p, n * 4, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(hy.data(), gy.p, n * 4, cudaMemcpyDeviceToHost));
  std::mt19937 rng(7);
  for (int s = 0; s < 2000; ++s) {
    const int x = 3 + int(rng() % (w - 6)), y = 3 + int(rng() % (h - 6));
    double vx = 0, vy = 0;
    for (int j = -3; j <= 3; ++j) {
      for (int k = -3; k <= 3; ++k) {
        const double v = host0[size_t(y + j) * w + x + k];
        vx += smooth[j + 3] * deriv[k + 3] * v;
        vy += deriv[j + 3] * smooth[k + 3] * v;
      }
    }
    r.max_abs_diff = std::max({r.max_abs_diff, std::abs(hx[size_t(y) * w + x] - vx),
                               std::abs(hy[size_t(y) * w + x] - vy)});
  }
  return r;
}

// ---- pyramid: convert the base, then every level from it ----

struct Level {
  int w, h;
  size_t offset;  // floats
};

std::vector<Level> PyramidLevels(int w, int h) {
  std::vector<Level> levels;
  size_t offset = 0;
  for (int i = 0; i < 31; ++i) {
    const double s = std::pow(1.05, i);
    const int lw = int(std::llround(w / s)), lh = int(std::llround(h / s));
    if (lw < 8 || lh < 8) break;
    levels.push_back({lw, lh, offset});
    offset += (size_t(lw) * lh + 63) / 64 * 64;  // 256-byte aligned levels, as cuimg
  }
  return levels;
}

// OpenCV INTER_LINEAR (cuimg's definition) of one level, for the check.
float Bilinear(const std::vector<Npp8u>& src, int sw, int sh, int lw, int lh, int x, int y) {
  auto axis = [](int d, int s_len, int d_len, int* i0, int* i1, float* f) {
    const double scale = 1.0 / (double(d_len) / s_len);
    float v = float((d + 0.5) * scale - 0.5);
    int i = int(std::floor(v));
    v -= float(i);
    if (i < 0) i = 0, v = 0;
    if (i >= s_len - 1) i = s_len - 1, v = 0;
    *i0 = i;
    *i1 = std::min(i + 1, s_len - 1);
    *f = v;
  };
  int x0, x1, y0, y1;
  float fx, fy;
  axis(x, sw, lw, &x0, &x1, &fx);
  axis(y, sh, lh, &y0, &y1, &fy);
  auto at = [&](int yy, int xx) { return float(src[size_t(yy) * sw + xx]); };
  const float top = at(y0, x0) * (1 - fx) + at(y0, x1) * fx;
  const float bottom = at(y1, x0) * (1 - fx) + at(y1, x1) * fx;
  return top * (1 - fy) + bottom * fy;
}

Result Pyramid(int w, int h, bool batched, const NppStreamContext& ctx, int warmup, int runs) {
  const cudaStream_t stream = ctx.hStream;
  const size_t n = size_t(w) * h;
  constexpr int kInputs = 3;
  std::vector<std::unique_ptr<Device>> inputs;
  std::vector<Npp8u> host0;
  for (int i = 0; i < kInputs; ++i) {
    const std::vector<Npp8u> host = RandomImage(n, 1234 + i);
    if (i == 0) host0 = host;
    inputs.push_back(std::make_unique<Device>(n));
    CUDA_CHECK(cudaMemcpy(inputs.back()->p, host.data(), n, cudaMemcpyHostToDevice));
  }
  const std::vector<Level> levels = PyramidLevels(w, h);
  size_t total = 0;
  for (const Level& l : levels) total = l.offset + size_t(l.w) * l.h;
  Device base(n * 4), out(total * 4);
  const NppiSize base_size{w, h};
  const NppiRect base_roi{0, 0, w, h};
  // Batched: descriptors in device memory, prepared outside timing.
  const int count = int(levels.size());
  std::vector<NppiImageDescriptor> src_desc(count), dst_desc(count);
  std::vector<NppiResizeBatchROI_Advanced> rois(count);
  int max_w = 0, max_h = 0;
  for (int i = 0; i < count; ++i) {
    const Level& l = levels[i];
    src_desc[i] = {base.p, w * 4, base_size};
    dst_desc[i] = {out.as<Npp32f>() + l.offset, l.w * 4, NppiSize{l.w, l.h}};
    rois[i] = {base_roi, NppiRect{0, 0, l.w, l.h}};
    max_w = std::max(max_w, l.w);
    max_h = std::max(max_h, l.h);
  }
  Device d_src(count * sizeof(NppiImageDescriptor)), d_dst(count * sizeof(NppiImageDescriptor)),
      d_roi(count * sizeof(NppiResizeBatchROI_Advanced));
  CUDA_CHECK(cudaMemcpy(d_src.p, src_desc.data(), count * sizeof(NppiImageDescriptor),
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_dst.p, dst_desc.data(), count * sizeof(NppiImageDescriptor),
                        cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d_roi.p, rois.data(), count * sizeof(NppiResizeBatchROI_Advanced),
                        cudaMemcpyHostToDevice));
  auto op = [&](int i) {
    NPP_CHECK(nppiConvert_8u32f_C1R_Ctx(inputs[i % kInputs]->as<Npp8u>(), w, base.as<Npp32f>(),
                                        w * 4, base_size, ctx));
    if (batched) {
      NPP_CHECK(nppiResizeBatch_32f_C1R_Advanced_Ctx(
          max_w, max_h, d_src.as<NppiImageDescriptor>(), d_dst.as<NppiImageDescriptor>(),
          d_roi.as<NppiResizeBatchROI_Advanced>(), unsigned(count), NPPI_INTER_LINEAR, ctx));
      return;
    }
    for (const Level& l : levels) {
      NPP_CHECK(nppiResize_32f_C1R_Ctx(base.as<Npp32f>(), w * 4, base_size, base_roi,
                                       out.as<Npp32f>() + l.offset, l.w * 4, NppiSize{l.w, l.h},
                                       NppiRect{0, 0, l.w, l.h}, NPPI_INTER_LINEAR, ctx));
    }
  };
  Result r;
  r.median_us = MedianUs(stream, warmup, runs, op);
  r.calls = batched ? 2 : 1 + count;
  r.note = batched ? "nppiConvert_8u32f + 1 nppiResizeBatch_32f_C1R_Advanced (" +
                         std::to_string(count) + " levels), NPPI_INTER_LINEAR"
                   : "nppiConvert_8u32f + " + std::to_string(count) +
                         " nppiResize_32f_C1R from the base, NPPI_INTER_LINEAR";
  op(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> host(total);
  CUDA_CHECK(cudaMemcpy(host.data(), out.p, total * 4, cudaMemcpyDeviceToHost));
  for (const Level& l : levels) {
    for (int y = 0; y < l.h; y += 7) {
      for (int x = 0; x < l.w; x += 3) {
        const float want = Bilinear(host0, w, h, l.w, l.h, x, y);
        r.max_abs_diff =
            std::max(r.max_abs_diff, double(std::abs(host[l.offset + size_t(y) * l.w + x] - want)));
      }
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 25;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      runs = 5;
      continue;
    }
    std::fprintf(stderr, "usage: npp_gradient_pyramid [--quick]\n");
    return 2;
  }
  const int warmup = 5;
  cudaStream_t stream = nullptr;
  NppStreamContext ctx{};
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ctx = MakeNppContext(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npp_gradient_pyramid: CUDA setup failed: %s\n", e.what());
    return 1;
  }
  const NppLibraryVersion* v = nppGetLibVersion();
  const std::string version =
      v ? std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->build)
        : "?";
  struct Workload {
    std::string anchor, name;
    int w, h;
    int kind;  // 0 gradient, 1 pyramid (31 calls), 2 pyramid (batched)
  };
  const Workload workloads[] = {
      {"npp", "npp_gradient_1080p_u8_len7", 1920, 1080, 0},
      {"npp", "npp_gradient_640x480_u8_len7", 640, 480, 0},
      {"npp", "npp_gradient_320x240_u8_len7", 320, 240, 0},
      {"npp", "npp_pyramid31_1080p_u8_f32", 1920, 1080, 1},
      {"nppbatch", "nppbatch_pyramid31_1080p_u8_f32", 1920, 1080, 2},
  };
  int failures = 0;
  for (const Workload& w : workloads) {
    try {
      const Result r = w.kind == 0 ? Gradient(w.w, w.h, ctx, warmup, runs)
                                   : Pyramid(w.w, w.h, w.kind == 2, ctx, warmup, runs);
      std::printf(
          "{\"anchor\":\"%s\",\"workload\":\"%s\",\"median_us\":%.2f,\"runs\":%d,\"calls\":%d,"
          "\"max_abs_diff\":%.3g,\"note\":\"%s; npp %s\"}\n",
          w.anchor.c_str(), w.name.c_str(), r.median_us, runs, r.calls, r.max_abs_diff,
          JsonEscape(r.note).c_str(), version.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "npp_gradient_pyramid: %s failed: %s\n", w.name.c_str(), e.what());
      std::printf("{\"anchor\":\"%s\",\"workload\":\"%s\",\"error\":\"%s\"}\n", w.anchor.c_str(),
                  w.name.c_str(), JsonEscape(e.what()).c_str());
      ++failures;
    }
    std::fflush(stdout);
  }
  cudaStreamDestroy(stream);
  return failures == 0 ? 0 : 1;
}
