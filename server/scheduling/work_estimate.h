// Work estimates: how much computing a validated request will take, counted before it is
// admitted, so that a request whose work could never be reasonable is refused instead of holding
// a worker (and a device) for hours. Bytes are inflight_estimate.h's business; this is time.
//
// The unit is one elementary operation per pixel (a min/max, a multiply-add, a lookup) of the
// algorithm the backend runs, so it follows each backend's plan: the CPU reference reads every
// member of a structuring element, the CUDA kernels read one or two lookups per element row
// (chords) or three per axis for boxes (van Herk/Gil-Werman). Measured on one core of the
// 2-core development machine, shared with other builds (CPU backend,
// --cpu_threads_per_request=1): dilations of 640x640 by a 61x61 ellipse (1.2e9 units), 512x512
// by 31x31 (1.9e8) and 1024x1024 by 15x15 (1.8e8) took 4.0, 0.49 and 0.71 s: 2.6 to 4.0 ns per
// unit (an idle core does about 1 ns: test_faults.py's 640x640 61x61 dilation takes about a
// second). The CUDA kernels do 10^3 or more times as many units per second.
#ifndef CUIMG_SERVER_WORK_ESTIMATE_H_
#define CUIMG_SERVER_WORK_ESTIMATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/gradient_types.h"
#include "cuimg/kernels/hog_types.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/kernels/pyramid_types.h"

namespace cuimg {

// Whose algorithm the units count.
enum class WorkModel { kCpuReference, kCudaKernels };

// The model of a backend by its name (Backend::name(): "cpu" or "cuda").
WorkModel WorkModelOf(absl::string_view backend_name);

// A morphology chain on an image or volume of `extent`: per primitive pass (PrimitivePassCount:
// compound steps and iterations expanded), pixels x the element's cost per pixel in `model`,
// plus one unit per pixel for each compound step's difference, plus each segmentation step's
// worst case (SegmentationStepWork). Never overflows (double).
double MorphologyWork(const Extent& extent, const std::vector<MorphologyStep>& steps,
                      WorkModel model);
// The global part of a segmentation step (its element's passes are MorphologyWork's) on the worst
// input, an adversarial maze included: reconstruction (fill_holes, reconstruct_*, open_rec,
// close_rec, hmax, hmin) as the CPU reference runs it, two raster sweeps reading half the
// neighbours each, then at most two queue entries a pixel, each ordered in log2(pixels) steps
// and reading every neighbour, whatever the geodesic paths (reconstruction_reference.h: O(N log
// N)); the mask steps as labelling (LabelWork); threshold one unit a pixel. The CUDA kernels are
// counted the same way until their plans say their worst case.
double SegmentationStepWork(const Extent& extent, const MorphologyStep& step);
// Connected-component labelling with statistics: a union-find pass reading the earlier half of
// each pixel's neighbours, the roots' compression and numbering, and the statistics pass (more
// with an intensity image).
double LabelWork(const Extent& extent, const LabelSpec& spec, bool intensity);
// Gradients: a row and a column pass of kernel_length taps, two outputs each, per pixel.
double GradientWork(const Extent& extent, const GradientSpec& spec);
// A pyramid: four taps per output pixel over `levels`.
double PyramidWork(const std::vector<PyramidLevel>& levels);
// Detection over `geometry` with a model of `descriptor_size` weights: each window's dot product,
// and per level pixel the gradient votes and block histograms (about 64 units).
double DetectWork(const DetectGeometry& geometry, int descriptor_size);
// Deform: every control point's Bernstein weight for every vertex (three coordinates), and the
// normals' cross products (a few units per triangle).
double DeformWork(std::uint64_t vertices, std::uint64_t triangles, std::size_t control_points);

// OK when `work` is at most `max_work` (0: no cap); else RESOURCE_EXHAUSTED naming the estimate
// and the flag. The refusal is for good: the same request can never fit.
absl::Status CheckRequestWork(double work, double max_work);

// Grouping (GroupRectangles) compares every pair of hits: more than `max_hits` hits (0: no cap)
// with grouping on is INVALID_ARGUMENT naming hit_threshold and the flag, before any grouping.
absl::Status CheckGroupedHits(std::size_t hits, const DetectSpec& spec, std::size_t max_hits);

}  // namespace cuimg

#endif  // CUIMG_SERVER_WORK_ESTIMATE_H_
