// The rules every request validator shares (request_validation.h is the public face): ranges,
// field paths, the uint32 -> int conversion, and the element and step rules that the unary and
// streamed Morphology requests and the Gradient filter fields share. Internal to the validators.
#ifndef CUIMG_SERVER_VALIDATION_RULES_H_
#define CUIMG_SERVER_VALIDATION_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cuimg/common/error.h"
#include "server/validation/element_radius.h"
#include "server/validation/request_validation.h"

namespace cuimg {

// INVALID_ARGUMENT (VALUE_OUT_OF_RANGE) "field: value is not in [lo, hi]" unless
// lo <= value <= hi.
absl::Status CheckRange(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi);
// As CheckRange where `hi` is the server limit `limit` (a ServerOptions field, named in the
// message: "... is not in [1, 16] (max_steps)"): above it the reason is `above` (LIMIT_EXCEEDED,
// or a more specific one such as ELEMENT_TOO_LARGE), below `lo` VALUE_OUT_OF_RANGE.
absl::Status CheckLimit(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi, absl::string_view limit,
                        ErrorReason above = ErrorReason::kLimitExceeded);
// INVALID_ARGUMENT (VALUE_OUT_OF_RANGE) unless `value` is finite and in (lo_excl, hi].
absl::Status CheckDoubleRange(absl::string_view field, double value, double lo_excl, double hi);
// A uint32 field as the int a kernel spec holds; INVALID_ARGUMENT (VALUE_OUT_OF_RANGE) naming
// `field` when it does not fit (the kernel's validator judges the range of what does).
absl::StatusOr<int> AsInt(absl::string_view field, std::uint32_t value);
// An image's header and pixels (`data`: image.data(), or what stands for it, DetachedPixels);
// `partial_data`: fewer bytes than the shape implies are allowed (uploads, shared memory).
absl::StatusOr<ImageInput> ValidateImage(const v1::Image& image, absl::string_view data,
                                         std::string field, const RequestLimits& limits,
                                         bool partial_data);
// Only Morphology writes its result into shared memory: INVALID_ARGUMENT (INVALID_COMBINATION)
// naming output.shared_memory for `rpc` otherwise.
absl::Status RefuseSharedMemoryOutput(const OutputSpec& output, absl::string_view rpc);
// ImageSource.dicom_frames (`field`: "input.dicom_frames"): a kFrames input whose type and
// extent are the decoded image's (types.proto, DicomFrames).
absl::StatusOr<ImageInput> ValidateDicomFrames(const v1::DicomFrames& source, std::string field,
                                               const RequestLimits& limits);
// OutputOptions.frame_encoding into `spec` (`field` names the OutputOptions).
absl::Status ValidateFrameEncoding(const v1::OutputOptions& output, absl::string_view field,
                                   OutputSpec* spec);
// Only Morphology encodes its results: INVALID_ARGUMENT (INVALID_COMBINATION) naming
// output.frame_encoding for `rpc` otherwise.
absl::Status RefuseFrameEncoding(const OutputSpec& output, absl::string_view rpc);
// An F32 result cannot be encoded: INVALID_ARGUMENT (INVALID_COMBINATION) naming
// output.frame_encoding when asked for one.
absl::Status CheckFrameEncodable(const OutputSpec& output, PixelType type);
// The chain of a Morphology request; `prefix` goes before every field name ("" or
// "header.morphology."). Elements in millimetres resolve against `frame` (ElementFrame) and the
// elements as run go to `resolved` when there are any.
absl::StatusOr<std::vector<MorphologyStep>> ValidateMorphologySteps(
    const v1::MorphologyRequest& request, absl::string_view prefix, const RequestLimits& limits,
    const ElementFrame& frame, std::vector<v1::StructuringElement>* resolved);
// The rules of a validated chain that depend on the image it runs on (`type`, `extent`): each
// step's segmentation parameters (ValidateMorphologyStep: its connectivity suits a 2D image or a
// volume, ...), U32 only in steps without an element, border values finite unless F32. `prefix`
// goes before every field name.
absl::Status CheckStepsForImage(const std::vector<MorphologyStep>& steps, PixelType type,
                                const Extent& extent, absl::string_view prefix);
// MorphologyRequest.marker: nullopt when no step reads one and none is given; the validated
// source when a step reads it; INVALID_ARGUMENT naming "marker" when it is missing (FIELD_REQUIRED)
// or given to a chain that does not read it (INVALID_COMBINATION).
absl::StatusOr<absl::optional<ImageInput>> ValidateMarker(const v1::MorphologyRequest& request,
                                                          const RequestLimits& limits);
// The filter fields of a Gradient request (defaults applied; ranges the kernel's); `prefix` goes
// before every field name.
absl::StatusOr<GradientSpec> ValidateGradientFields(const v1::GradientRequest& request,
                                                    absl::string_view prefix);

}  // namespace cuimg

#endif  // CUIMG_SERVER_VALIDATION_RULES_H_
