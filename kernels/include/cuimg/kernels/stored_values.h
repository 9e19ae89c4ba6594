// DICOM frames' stored-value rule (codec/dicom_frame.h) on the GPU: what a GPU decoder wrote in
// the codestream's own sample type becomes the frame's decoded values, as the CPU decoders give
// them.
#ifndef CUIMG_KERNELS_STORED_VALUES_H_
#define CUIMG_KERNELS_STORED_VALUES_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "cuimg/common/pixel_type.h"

namespace cuimg {

// out[i] = ((in[i] & mask) ^ sign) - sign for i < count: the low bits `mask` keeps, read as
// two's complement when `sign` is their top bit (0 for unsigned values), converted to out_type.
// Contract:
// - in_type and out_type are U8, U16 or I16 (INVALID_ARGUMENT otherwise); `mask` is 2^k - 1 for
//   some k in 1..16 and `sign` is 0 or 2^(k-1), so every result fits I16, and U16 or U8 when
//   `sign` is 0 and k is at most 16 or 8 (the caller picks out_type so: the frame's decoded type).
// - `in` and `out` are device pointers to `count` elements; they may be the same buffer only
//   when the two types have the same size. No workspace.
// - Asynchronous on `stream`: the caller synchronizes. One launch (none for count 0).
absl::Status StoreValuesOnDevice(const void* in, PixelType in_type, void* out, PixelType out_type,
                                 std::int64_t count, std::uint32_t mask, std::int32_t sign,
                                 cudaStream_t stream);

// The rescale of DICOM frames (codec/frame_volume.h's RescaleFrame, every frame at once): frame f
// (of `frames`, each `frame_pixels` stored values of in_type U8, U16 or I16 in `in`) becomes
// out_type I16 or F32 in `out`:
// - I16: in * slopes[f] + intercepts[f] in 64-bit integers (the caller's slopes and intercepts
//   hold integers, as FrameVolumeType requires for I16); the lowest frame with a value outside
//   [-32768, 32767] goes to *bad_frame (atomicMin; the caller sets it to `frames` first, and the
//   values of such a frame are unspecified).
// - F32: the float of double(in) * slope + intercept, product and sum each rounded (no fused
//   multiply-add), as the host computes it: the same bits.
// `slopes`, `intercepts` and `bad_frame` are device pointers; `in` and `out` do not overlap.
// INVALID_ARGUMENT for other types. Asynchronous on `stream`; one launch (none for no pixels).
absl::Status RescaleFramesOnDevice(const void* in, PixelType in_type, void* out, PixelType out_type,
                                   std::int64_t frame_pixels, int frames, const double* slopes,
                                   const double* intercepts, int* bad_frame, cudaStream_t stream);

}  // namespace cuimg

#endif  // CUIMG_KERNELS_STORED_VALUES_H_
