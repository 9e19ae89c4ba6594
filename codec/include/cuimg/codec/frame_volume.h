// A volume sent as DICOM frames, as the server decodes it: the frames (views of the request's
// bytes), their description and rescales, and the rule that turns each frame's stored values into
// the image's pixels (types.proto, DicomFrames): value = stored * slope + intercept, I16 when every
// slope and intercept is an integer (never clamped), else F32; or the stored values themselves.
#ifndef CUIMG_CODEC_FRAME_VOLUME_H_
#define CUIMG_CODEC_FRAME_VOLUME_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/common/image.h"

namespace cuimg {

struct FrameVolume {
  FrameSyntax syntax = FrameSyntax::kNative;
  FrameDescription description;
  // One per slice: the frame's bytes, which must outlive the volume's use.
  std::vector<absl::Span<const std::uint8_t>> frames;
  // One per slice unless stored_values: the frame's rescale (a slope of 0 already read as 1).
  std::vector<double> slopes;
  std::vector<double> intercepts;
  // Deliver the stored values (U8, U16 or I16, DecodedPixelType), not rescaled ones.
  bool stored_values = false;
};

// The pixel type of the decoded image: the stored values' type, else I16 when every slope and
// intercept is an integer, else F32.
PixelType FrameVolumeType(const FrameVolume& volume);

// Frame `index`'s stored values (`stored`: DecodedPixelType of the description) into `out`, the
// frame's slice of an image of FrameVolumeType: copied for stored_values, else rescaled (I16
// computed exactly in integers, as the integer slope and intercept allow; F32 as the float of the
// double value * slope + intercept, never fused). INVALID_ARGUMENT (VALUE_OUT_OF_RANGE) naming
// `field` when an I16 value falls outside [-32768, 32767]; `out` then holds unspecified values.
absl::Status RescaleFrame(const FrameVolume& volume, int index,
                          absl::Span<const std::uint8_t> stored, void* out,
                          absl::string_view field);

}  // namespace cuimg

#endif  // CUIMG_CODEC_FRAME_VOLUME_H_
