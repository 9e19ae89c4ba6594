// NVIDIA NPP anchor for the morphology benchmarks: times NPP dilation / max filter on the same
// workloads as morphology_bench so cuimg's numbers have a vendor-library reference.
//
// Build and run on the GPU machine (CUDA 13 with NPP headers and libraries):
//   nvcc -O2 -std=c++17 -arch=sm_90 npp_morphology.cu -o npp_morphology -lnppim -lnppidei -lnppif
//   -lnppc
//   ./npp_morphology [--quick] [--gradient-pyramid]
// nppim holds the morphology (nppiDilateBorder / nppiDilate), nppif the rank filters
// (nppiFilterMaxBorder), nppc the core (nppGetLibVersion); nppidei is not needed by this file but
// is harmless on the link line.
//
// Every timing is a CUDA event pair around the NPP call(s) only, enqueued while a spin kernel holds
// the stream (GPU time, not host submission; device data resident), 5 warm-up
// runs then 25 timed ones, median reported; inputs rotate among 3 random buffers. Only the _Ctx
// entry points are used (CUDA 13 NPP has no others) and the NppStreamContext is filled by hand
// (nppGetStreamContext is deprecated since CUDA 12.9).
// Output: one JSON object per line on stdout; exit status 1 if any workload failed.
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
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

// ---- setup helpers ----

// OpenCV MORPH_ELLIPSE rasterisation (getStructuringElement): row i spans c-dx .. c+dx with
// dx = round_half_even(c * sqrt((r^2 - dy^2) / r^2)); std::lrint rounds half to even.
std::vector<Npp8u> EllipseMask(int w, int h) {
  std::vector<Npp8u> m(static_cast<size_t>(w) * h, 0);
  const int r = h / 2, c = w / 2;
  const double inv_r2 = r ? 1.0 / (double(r) * r) : 0.0;
  for (int i = 0; i < h; ++i) {
    const int dy = i - r;
    if (std::abs(dy) > r) continue;
    const int dx = static_cast<int>(std::lrint(c * std::sqrt((double(r) * r - dy * dy) * inv_r2)));
    for (int j = std::max(c - dx, 0); j < std::min(c + dx + 1, w); ++j) m[size_t(i) * w + j] = 1;
  }
  return m;
}

std::vector<Npp8u> RectMask(int w, int h) { return std::vector<Npp8u>(size_t(w) * h, 1); }

// Cheap integer hash per byte: non-constant random data without a host round trip.
__global__ void FillRandomKernel(Npp8u* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    uint32_t x = static_cast<uint32_t>(i) * 0x9E3779B9u + seed * 0x85EBCA6Bu + 1u;
    x ^= x >> 16;
    x *= 0x7FEB352Du;
    x ^= x >> 15;
    x *= 0x846CA68Bu;
    x ^= x >> 16;
    p[i] = static_cast<Npp8u>(x);
  }
}

// Replicate-pads each w x h slice by (rx, ry) on every side; only used by the fallback path.
__global__ void PadReplicateKernel(const Npp8u* src, int w, int h, Npp8u* dst, int rx, int ry) {
  const int pw = w + 2 * rx, ph = h + 2 * ry;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= pw || y >= ph) return;
  const int sx = min(max(x - rx, 0), w - 1), sy = min(max(y - ry, 0), h - 1);
  dst[size_t(blockIdx.z) * pw * ph + size_t(y) * pw + x] =
      src[size_t(blockIdx.z) * w * h + size_t(sy) * w + sx];
}

// ---- workloads ----

enum class Op { kDilate, kFilterMax };

struct Workload {
  std::string name;
  int w, h, slices;  // slices > 1: one NPP call per slice, all inside one event pair
  int mw, mh;
  bool ellipse;
  Op op;
};

struct Result {
  double median_us = 0;
  std::string note;
  bool check_ok = false;   // dilation property: out >= in at every pixel
  int ref_mismatches = 0;  // of kRefSamples sampled pixels vs a brute-force host reference
};

constexpr int kRefSamples = 2000;

// Host check on the result of input 0: dilation never lowers a pixel (out >= in everywhere), and
// sampled pixels (half of them on an image edge) should equal a brute-force max over the mask with
// replicate (clamped) borders.
void CheckResult(const Workload& w, const std::vector<Npp8u>& mask, const std::vector<Npp8u>& in,
                 const std::vector<Npp8u>& out, Result* r) {
  r->check_ok = true;
  for (size_t i = 0; i < in.size() && r->check_ok; ++i) r->check_ok = out[i] >= in[i];
  std::mt19937 rng(42);
  const int ax = w.mw / 2, ay = w.mh / 2;
  r->ref_mismatches = 0;
  for (int k = 0; k < kRefSamples; ++k) {
    const int z = int(rng() % w.slices);
    int x = int(rng() % w.w), y = int(rng() % w.h);
    if (k % 4 == 0) x = (k % 8 == 0) ? 0 : w.w - 1;
    if (k % 4 == 1) y = (k % 8 == 1) ? 0 : w.h - 1;
    const Npp8u* s = in.data() + size_t(z) * w.w * w.h;
    int ref = 0;
    for (int i = 0; i < w.mh; ++i)
      for (int j = 0; j < w.mw; ++j) {
        if (!mask[size_t(i) * w.mw + j]) continue;
        const int sx = std::min(std::max(x + j - ax, 0), w.w - 1);
        const int sy = std::min(std::max(y + i - ay, 0), w.h - 1);
        ref = std::max(ref, int(s[size_t(sy) * w.w + sx]));
      }
    if (out[size_t(z) * w.w * w.h + size_t(y) * w.w + x] != ref) ++r->ref_mismatches;
  }
}

// Minimal JSON string escaping for error messages.
std::string JsonEscape(const std::string& in) {
  std::string o;
  for (char c : in) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    o += c;
  }
  return o;
}

Result RunWorkload(const Workload& w, const NppStreamContext& ctx, int warmup, int runs) {
  const cudaStream_t stream = ctx.hStream;
  const size_t plane = size_t(w.w) * w.h, bytes = plane * w.slices;
  const std::vector<Npp8u> mask = w.ellipse ? EllipseMask(w.mw, w.mh) : RectMask(w.mw, w.mh);
  DeviceBuffer<Npp8u> d_mask(mask.size());
  CUDA_CHECK(cudaMemcpy(d_mask.p, mask.data(), mask.size(), cudaMemcpyHostToDevice));

  constexpr int kInputs = 3;
  std::vector<std::unique_ptr<DeviceBuffer<Npp8u>>> inputs;
  for (int i = 0; i < kInputs; ++i) {
    inputs.push_back(std::make_unique<DeviceBuffer<Npp8u>>(bytes));
    FillRandomKernel<<<1024, 256, 0, stream>>>(inputs.back()->p, bytes, 1234u + i);
    CUDA_CHECK(cudaGetLastError());
  }
  DeviceBuffer<Npp8u> out(bytes);
  CUDA_CHECK(cudaStreamSynchronize(stream));

  const NppiSize size{w.w, w.h}, msize{w.mw, w.mh};
  const NppiPoint zero{0, 0}, anchor{w.mw / 2, w.mh / 2};
  Result r;

  // One full operation (all slices) from input buffer `src` into `out`.
  std::function<void(int)> op;
  if (w.op == Op::kFilterMax) {
    r.note = "nppiFilterMaxBorder_8u_C1R_Ctx, NPP_BORDER_REPLICATE";
    op = [&](int i) {
      const Npp8u* src = inputs[i % kInputs]->p;
      for (int z = 0; z < w.slices; ++z)
        NPP_CHECK(nppiFilterMaxBorder_8u_C1R_Ctx(src + z * plane, w.w, size, zero,
                                                 out.p + z * plane, w.w, size, msize, anchor,
                                                 NPP_BORDER_REPLICATE, ctx));
    };
  } else {
    // Preferred path: nppiDilateBorder with replicate border over the whole image. Probe it once;
    // if this NPP build rejects it, fall back to nppiDilate on a replicate-padded copy (ROI = the
    // image, offset by the half-size, so the mask never reads outside the padded buffer).
    const NppStatus probe =
        nppiDilateBorder_8u_C1R_Ctx(inputs[0]->p, w.w, size, zero, out.p, w.w, size, d_mask.p,
                                    msize, anchor, NPP_BORDER_REPLICATE, ctx);
    if (probe >= 0) {
      r.note = "nppiDilateBorder_8u_C1R_Ctx, NPP_BORDER_REPLICATE";
      op = [&](int i) {
        const Npp8u* src = inputs[i % kInputs]->p;
        for (int z = 0; z < w.slices; ++z)
          NPP_CHECK(nppiDilateBorder_8u_C1R_Ctx(src + z * plane, w.w, size, zero, out.p + z * plane,
                                                w.w, size, d_mask.p, msize, anchor,
                                                NPP_BORDER_REPLICATE, ctx));
      };
    } else {
      std::fprintf(stderr, "%s: nppiDilateBorder_8u_C1R_Ctx returned %d; using padded nppiDilate\n",
                   w.name.c_str(), static_cast<int>(probe));
      r.note = "FALLBACK nppiDilate_8u_C1R_Ctx on replicate-padded source (DilateBorder status " +
               std::to_string(static_cast<int>(probe)) + ")";
    }
  }
  // Padded copies exist only on the fallback path; built outside timing.
  const int rx = w.mw / 2, ry = w.mh / 2, pw = w.w + 2 * rx, ph = w.h + 2 * ry;
  std::vector<std::unique_ptr<DeviceBuffer<Npp8u>>> padded;
  if (!op) {
    for (int i = 0; i < kInputs; ++i) {
      padded.push_back(std::make_unique<DeviceBuffer<Npp8u>>(size_t(pw) * ph * w.slices));
      const dim3 block(32, 8), grid((pw + 31) / 32, (ph + 7) / 8, w.slices);
      PadReplicateKernel<<<grid, block, 0, stream>>>(inputs[i]->p, w.w, w.h, padded.back()->p, rx,
                                                     ry);
      CUDA_CHECK(cudaGetLastError());
    }
    op = [&](int i) {
      const Npp8u* src = padded[i % kInputs]->p;
      for (int z = 0; z < w.slices; ++z) {
        const Npp8u* roi = src + size_t(z) * pw * ph + size_t(ry) * pw + rx;
        NPP_CHECK(nppiDilate_8u_C1R_Ctx(roi, pw, out.p + z * plane, w.w, size, d_mask.p, msize,
                                        anchor, ctx));
      }
    };
  }

  r.median_us = MedianUs(stream, warmup, runs, op);

  // Correctness sanity on input 0 (outside timing).
  op(0);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<Npp8u> h_in(bytes), h_out(bytes);
  CUDA_CHECK(cudaMemcpy(h_in.data(), inputs[0]->p, bytes, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(h_out.data(), out.p, bytes, cudaMemcpyDeviceToHost));
  CheckResult(w, mask, h_in, h_out, &r);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 25;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--gradient-pyramid") == 0) continue;  // reserved for later workloads
    if (std::strcmp(argv[i], "--quick") == 0) {
      runs = 5;
      continue;
    }
    std::fprintf(stderr, "usage: npp_morphology [--quick] [--gradient-pyramid]\n");
    return 2;
  }
  const int warmup = 5;

  NppStreamContext ctx{};
  cudaStream_t stream = nullptr;
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ctx = MakeNppContext(stream);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npp_morphology: CUDA setup failed: %s\n", e.what());
    return 1;
  }
  const NppLibraryVersion* v = nppGetLibVersion();
  const std::string ver =
      v ? std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->build)
        : "?";

  const std::vector<Workload> workloads = {
      {"npp_dilate_2d_disk63_u8", 1920, 1080, 1, 63, 63, true, Op::kDilate},
      {"npp_dilate_2d_rect63_u8", 1920, 1080, 1, 63, 63, false, Op::kDilate},
      {"npp_filtermax_2d_rect63_u8", 1920, 1080, 1, 63, 63, false, Op::kFilterMax},
      {"npp_dilate_volume_disk9_u8", 512, 512, 300, 9, 9, true, Op::kDilate},
      {"npp_dilate_2d_3x3_640x480_u8", 640, 480, 1, 3, 3, false, Op::kDilate},
  };
  int failures = 0;
  for (const Workload& w : workloads) {
    try {
      const Result r = RunWorkload(w, ctx, warmup, runs);
      std::string note = r.note + "; mask " + std::to_string(w.mw) + "x" + std::to_string(w.mh) +
                         (w.ellipse ? " ellipse" : " rect") + "; npp " + ver;
      if (w.slices > 1)
        note += "; " + std::to_string(w.slices) + " per-slice calls in one event pair";
      std::printf(
          "{\"anchor\":\"npp\",\"workload\":\"%s\",\"median_us\":%.2f,\"runs\":%d,"
          "\"note\":\"%s\",\"check\":\"%s\",\"ref_mismatches\":\"%d/%d\"}\n",
          w.name.c_str(), r.median_us, runs, JsonEscape(note).c_str(), r.check_ok ? "ok" : "fail",
          r.ref_mismatches, kRefSamples);
      if (!r.check_ok) ++failures;  // a result below its input is not a dilation
    } catch (const std::exception& e) {
      std::fprintf(stderr, "npp_morphology: %s failed: %s\n", w.name.c_str(), e.what());
      std::printf("{\"anchor\":\"npp\",\"workload\":\"%s\",\"error\":\"%s\"}\n", w.name.c_str(),
                  JsonEscape(e.what()).c_str());
      ++failures;
    }
    std::fflush(stdout);
  }
  cudaStreamDestroy(stream);
  return failures == 0 ? 0 : 1;
}
