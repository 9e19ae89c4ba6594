// Launchers of the morphology kernels (internal to cuimg_kernels). Each is asynchronous on
// `stream` and checks its launch.
#ifndef CUIMG_KERNELS_SRC_MORPHOLOGY_KERNELS_H_
#define CUIMG_KERNELS_SRC_MORPHOLOGY_KERNELS_H_

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "cuimg/common/image.h"
#include "element_plan.h"

namespace cuimg::internal {

// out = erosion/dilation of `in` by one band of chords; with `accumulate`, out = min/max(out,
// that). `chords` is the device copy of the plan's chord table. `in` and `out` must not overlap.
template <typename T>
absl::Status LaunchChordBand(const T* in, T* out, const Extent& extent, const ChordBand& band,
                             const int* chords, bool dilate, T border, bool accumulate,
                             cudaStream_t stream);

// out = erosion/dilation of `in` by one nested-rows section (pass.dz == 0); for pass.dz > 0,
// out = min/max(out, that). `in` and `out` must not overlap.
template <typename T>
absl::Status LaunchNestedPass(const T* in, T* out, const Extent& extent, const NestedPass& pass,
                              bool dilate, T border, cudaStream_t stream);

// out = the box pass `pass` of `in` (LaunchBoxXY for pass.xy, else van Herk/Gil-Werman along
// pass.axis). `in` and `out` must not overlap.
template <typename T>
absl::Status LaunchBoxPass(const T* in, T* out, const Extent& extent, const BoxPass& pass,
                           bool dilate, T border, cudaStream_t stream);

// out = min/max of `in` over the pass's length x length_y window (pass.xy), every slice in one
// launch. `in` and `out` must not overlap.
template <typename T>
absl::Status LaunchBoxXY(const T* in, T* out, const Extent& extent, const BoxPass& pass,
                         bool dilate, T border, cudaStream_t stream);

}  // namespace cuimg::internal

#endif  // CUIMG_KERNELS_SRC_MORPHOLOGY_KERNELS_H_
