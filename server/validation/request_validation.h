// Validation at the edge: pure functions from request protos to validated jobs (defaults
// applied, the field path kept for messages). Each rule is checked in one place: ranges a kernel
// owns are its validator's (*_types.h Validate*), called here with the request's field path;
// this layer adds only the server's limits (RequestLimits) and the wire's shapes. One file per
// RPC: morphology_, label_, gradient_, pyramid_, detect_, deform_ and volume_stream_validation.cc;
// the shared parts in request_validation.cc and validation_rules.h.
#ifndef CUIMG_SERVER_REQUEST_VALIDATION_H_
#define CUIMG_SERVER_REQUEST_VALIDATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "cuimg/codec/dicom_frame.h"
#include "cuimg/codec/frame_volume.h"
#include "cuimg/common/image.h"
#include "cuimg/kernels/gradient_types.h"
#include "cuimg/kernels/hog_types.h"
#include "cuimg/kernels/mesh.h"
#include "cuimg/kernels/morphology_types.h"
#include "cuimg/kernels/pyramid_types.h"
#include "cuimg/kernels/segmentation_types.h"
#include "cuimg/v1/deform.pb.h"
#include "cuimg/v1/detection.pb.h"
#include "cuimg/v1/gradient.pb.h"
#include "cuimg/v1/label.pb.h"
#include "cuimg/v1/morphology.pb.h"
#include "cuimg/v1/pyramid.pb.h"
#include "cuimg/v1/streaming.pb.h"
#include "cuimg/v1/types.pb.h"
#include "server/server_options.h"
#include "server/state/model_registry.h"

namespace cuimg {

// An input image as the request names it; byte views point into the request message, which must
// outlive the job.
struct ImageInput {
  enum class Kind { kInline, kHandle, kEncoded, kSharedMemory, kFrames };
  Kind kind = Kind::kInline;
  // kInline: the pixels' description and bytes. kEncoded: `bytes` holds the PNG/JPEG file.
  // kSharedMemory: the description; the pixels are at `offset` in region `handle`.
  PixelType type = PixelType::kU8;
  Extent extent;
  int channels = 1;
  absl::string_view bytes;
  // kHandle: the resident object's handle. kSharedMemory: the region's handle.
  std::string handle;
  std::uint64_t offset = 0;
  // The field path, for messages about the resolved image ("input.image", "input.encoded").
  std::string field;
  // kInline, kSharedMemory, kFrames: the image's spacing (the results carry it on).
  v1::Spacing spacing;
  // kFrames: the frames; `type` and `extent` are the decoded image's (I16 or F32 rescaled, or the
  // stored values' type), known before anything is decoded.
  std::shared_ptr<const FrameVolume> frames;
};

struct OutputSpec {
  // Results as DICOM frames in this encoding (OutputOptions.frame_encoding); kNative: raw pixels.
  FrameSyntax frame_encoding = FrameSyntax::kNative;
  bool keep_resident = false;
  bool omit_data = false;
  std::uint32_t ttl_seconds = 0;
  // The result's pixels go to region `shared_memory_region` at `shared_memory_offset` (empty:
  // inline).
  std::string shared_memory_region;
  std::uint64_t shared_memory_offset = 0;
};

// True when the input's pixel type and size are known from the request alone (inline,
// shared-memory and DICOM-frame images); a handle's come from the store, an encoded file's from
// its header.
inline bool KnownShape(const ImageInput& input) {
  return input.kind == ImageInput::Kind::kInline || input.kind == ImageInput::Kind::kSharedMemory ||
         input.kind == ImageInput::Kind::kFrames;
}
// The request field that sets the input's pixel type: "input.image.pixel_type" (inline),
// "input.shared_memory.image.pixel_type", or the handle's field for a resident object.
std::string PixelTypeField(const ImageInput& input);
// The shape (data null) of a KnownShape input.
inline ImageView ShapeOf(const ImageInput& input) {
  return ImageView{input.type, input.extent, input.channels, nullptr};
}

struct MorphologyJob {
  ImageInput input;
  std::vector<MorphologyStep> steps;
  OutputSpec output;
  // The elements as run, one per step, when some element was given in millimetres
  // (MorphologyResponse.resolved_elements); empty otherwise.
  std::vector<v1::StructuringElement> resolved_elements;
  // The input is a resident handle and some element is in millimetres: `steps` stays empty until
  // ResolveMorphologyOnResident has the object's spacing.
  bool steps_await_spacing = false;
  // The seed of the reconstruction steps (MorphologyRequest.marker); set exactly when a step
  // reads it (UsesMarker).
  absl::optional<ImageInput> marker;
};

// The inline image's pixels when they arrived beside the request message (wire_pixels.h): they
// stand for input.image.data, which is then empty. nullopt: the message holds its own.
using DetachedPixels = absl::optional<absl::string_view>;

// A resident object's or shared-memory region's handle as a request names it: 1 to 128
// characters, else INVALID_ARGUMENT naming `field`. Every RPC that takes a handle checks it here
// first, so that none looks up (or echoes back) what the others refuse.
absl::Status ValidateHandle(absl::string_view handle, absl::string_view field);

// `field` names the ImageSource in messages, e.g. "input".
absl::StatusOr<ImageInput> ValidateImageSource(const v1::ImageSource& source,
                                               absl::string_view field, const RequestLimits& limits,
                                               DetachedPixels pixels = absl::nullopt);

absl::StatusOr<OutputSpec> ValidateOutputOptions(const v1::OutputOptions& output,
                                                 absl::string_view field);

absl::StatusOr<MorphologyJob> ValidateMorphologyRequest(const v1::MorphologyRequest& request,
                                                        const RequestLimits& limits,
                                                        DetachedPixels pixels = absl::nullopt);

// Completes a job that awaits its resident input's spacing (steps_await_spacing): validates the
// request's steps against `spacing` and the input's `extent`, as ValidateMorphologyRequest does
// for inputs that carry their spacing. No-op for other jobs.
absl::Status ResolveMorphologyOnResident(const v1::MorphologyRequest& request,
                                         const v1::Spacing& spacing, const Extent& extent,
                                         const RequestLimits& limits, MorphologyJob* job);

// Checks a resolved (inline, decoded or resident) image against Morphology's needs: one channel;
// the steps' rules that depend on the image (CheckStepsForImage: connectivity for 2D or 3D, U32
// only without elements, finite border values unless F32); and a marker of known shape
// (CheckMarkerShape). Validation calls it for inputs of known shape, admission for resident
// ones, and the run for every input once resolved.
absl::Status CheckMorphologyInput(const ImageView& image, const MorphologyJob& job);
// INVALID_ARGUMENT (SHAPE_MISMATCH) naming `field` unless `marker` is one channel of `image`'s
// pixel type and size.
absl::Status CheckMarkerShape(const ImageView& marker, const ImageView& image,
                              absl::string_view field);

// The first message of an Upload stream: an image header whose data may be only the first part
// (at most the full size). Returns the validated header with `bytes` = the data present.
absl::StatusOr<ImageInput> ValidateUploadHeader(const v1::Image& image,
                                                const RequestLimits& limits);

struct LabelJob {
  ImageInput input;
  LabelSpec spec;
  // LabelRequest.intensity, when given.
  absl::optional<ImageInput> intensity;
  OutputSpec output;
};

absl::StatusOr<LabelJob> ValidateLabelRequest(const v1::LabelRequest& request,
                                              const RequestLimits& limits,
                                              DetachedPixels pixels = absl::nullopt);
// A resolved input for Label: one channel, and a connectivity that suits its dimensionality; an
// intensity image of known shape must be one channel of its size (CheckLabelIntensity).
// Validation calls it for inputs of known shape, admission for resident ones, the run for all.
absl::Status CheckLabelInput(const ImageView& image, const LabelJob& job);
// INVALID_ARGUMENT (SHAPE_MISMATCH) naming "intensity" unless `intensity` is one channel (any
// pixel type) of `image`'s size.
absl::Status CheckLabelIntensity(const ImageView& intensity, const ImageView& image);

struct GradientJob {
  ImageInput input;
  GradientSpec spec;
  OutputSpec output;
};

absl::StatusOr<GradientJob> ValidateGradientRequest(const v1::GradientRequest& request,
                                                    const RequestLimits& limits,
                                                    DetachedPixels pixels = absl::nullopt);
// A resolved input for Gradient: one channel.
absl::Status CheckGradientInput(const ImageView& image, const GradientJob& job);

struct PyramidJob {
  ImageInput input;
  PyramidSpec spec;
  // The request asked for the input's own type (resolved once the input is known).
  bool output_input_type = false;
  OutputSpec output;
};

absl::StatusOr<PyramidJob> ValidatePyramidRequest(const v1::PyramidRequest& request,
                                                  const RequestLimits& limits,
                                                  DetachedPixels pixels = absl::nullopt);
// A resolved input for Pyramid: one channel, 2D; sets the output type and checks the level list.
absl::Status CheckPyramidInput(const ImageView& image, PyramidJob* job);

struct DetectJob {
  ImageInput input;
  // The loaded model the request names (the default when it names none); owned by the
  // registry, which outlives every request.
  const HogModel* model = nullptr;
  // Defaults applied; gamma_correction is the model's when the request leaves it unset.
  DetectSpec spec;
};

// Finds the model first: any name that is not loaded in `models` (one with a path in it too) is
// NOT_FOUND naming "model", before the other fields are read, and nothing is looked up on disk.
absl::StatusOr<DetectJob> ValidateDetectRequest(const v1::DetectPedestriansRequest& request,
                                                const RequestLimits& limits,
                                                const ModelRegistry& models,
                                                DetachedPixels pixels = absl::nullopt);
// A resolved input for DetectPedestrians: a 2D U8 image with 1, 3 or 4 channels.
absl::Status CheckDetectInput(const ImageView& image, const DetectJob& job);

// A mesh as the request names it; the view points into the request message.
struct MeshInput {
  enum class Kind { kInline, kHandle };
  Kind kind = Kind::kInline;
  MeshView view;
  std::string handle;
};

struct DeformJob {
  MeshInput mesh;
  Lattice lattice;
  DeformOutputs outputs = DeformOutputs::kPositionsAndNormals;
  OutputSpec output;
};

absl::StatusOr<DeformJob> ValidateDeformRequest(const v1::DeformRequest& request,
                                                const RequestLimits& limits);

// The mesh of an Upload's first message: counts within the limits and data no longer than they
// imply (the stream may carry the rest). Coordinates and indices are checked once complete.
absl::Status ValidateUploadMeshHeader(const v1::Mesh& mesh, const RequestLimits& limits);

// A streamed volume (ProcessVolumeStream): the whole volume's shape and one operation.
struct VolumeStreamJob {
  enum class Op { kMorphology, kGradient };
  Op op = Op::kMorphology;
  PixelType type = PixelType::kU8;
  Extent extent;  // the whole volume; depth >= 1
  v1::Spacing spacing;
  std::vector<MorphologyStep> steps;  // kMorphology
  // kMorphology with elements in millimetres: as MorphologyJob's.
  std::vector<v1::StructuringElement> resolved_elements;
  GradientSpec gradient;  // kGradient
  // kMorphology whose chain reads a marker: a resident handle or a shared-memory image (never
  // inline: the header is parsed into a message that the slabs reuse).
  absl::optional<ImageInput> marker;
};

// The header of a ProcessVolumeStream call: the volume (one channel, data empty) and exactly one
// operation with the unary request's rules, its `input` and `output` unset. Fields are named from
// the stream message ("header.morphology.steps[0].element.width").
absl::StatusOr<VolumeStreamJob> ValidateVolumeStreamHeader(const v1::VolumeStreamHeader& header,
                                                           const RequestLimits& limits);

}  // namespace cuimg

#endif  // CUIMG_SERVER_REQUEST_VALIDATION_H_
