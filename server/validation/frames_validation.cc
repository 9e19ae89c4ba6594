// ImageSource.dicom_frames and OutputOptions.frame_encoding: a volume sent as DICOM frames is
// checked from its pixel module alone (the decoded image's type and shape are known before any
// frame is decoded, so admission and every RPC's shape checks treat it as an inline image).
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/validation_rules.h"

namespace cuimg {
namespace {

absl::StatusOr<Photometric> PhotometricFromProto(v1::PhotometricInterpretation p,
                                                 absl::string_view field) {
  switch (p) {
    case v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME1:
      return Photometric::kMonochrome1;
    case v1::PHOTOMETRIC_INTERPRETATION_MONOCHROME2:
      return Photometric::kMonochrome2;
    case v1::PHOTOMETRIC_INTERPRETATION_UNSPECIFIED:
      return InvalidFieldError(ErrorReason::kFieldRequired, field,
                               "is required (MONOCHROME1 or MONOCHROME2)");
    default:
      return InvalidFieldError(ErrorReason::kUnknownEnumValue, field,
                               absl::StrCat(static_cast<int>(p), " is not a known value"));
  }
}

constexpr double kMaxRescale = 2147483648.0;

}  // namespace

absl::StatusOr<ImageInput> ValidateDicomFrames(const v1::DicomFrames& source, std::string field,
                                               const RequestLimits& limits) {
  auto frames = std::make_shared<FrameVolume>();
  CUIMG_ASSIGN_OR_RETURN(frames->syntax,
                         FrameSyntaxFromUid(source.transfer_syntax_uid(),
                                            absl::StrCat(field, ".transfer_syntax_uid")));
  const std::string module_field = absl::StrCat(field, ".pixel_module");
  if (!source.has_pixel_module()) {
    return InvalidFieldError(ErrorReason::kFieldRequired, module_field, "is required");
  }
  const v1::DicomPixelModule& m = source.pixel_module();
  // The decoded image's sides are the server's to limit, beyond what DICOM allows.
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(module_field, ".rows"), m.rows(), 1,
                                   std::min<std::int64_t>(limits.max_side, 65535), "max_side"));
  CUIMG_RETURN_IF_ERROR(CheckLimit(absl::StrCat(module_field, ".columns"), m.columns(), 1,
                                   std::min<std::int64_t>(limits.max_side, 65535), "max_side"));
  FrameDescription& d = frames->description;
  d.rows = static_cast<int>(m.rows());
  d.columns = static_cast<int>(m.columns());
  CUIMG_ASSIGN_OR_RETURN(d.samples_per_pixel,
                         AsInt(absl::StrCat(module_field, ".samples_per_pixel"),
                               m.samples_per_pixel() == 0 ? 1 : m.samples_per_pixel()));
  CUIMG_ASSIGN_OR_RETURN(d.bits_allocated,
                         AsInt(absl::StrCat(module_field, ".bits_allocated"), m.bits_allocated()));
  CUIMG_ASSIGN_OR_RETURN(d.bits_stored,
                         AsInt(absl::StrCat(module_field, ".bits_stored"),
                               m.bits_stored() == 0 ? m.bits_allocated() : m.bits_stored()));
  CUIMG_ASSIGN_OR_RETURN(
      d.planar_configuration,
      AsInt(absl::StrCat(module_field, ".planar_configuration"), m.planar_configuration()));
  d.is_signed = m.pixel_signed();
  CUIMG_ASSIGN_OR_RETURN(
      d.photometric,
      PhotometricFromProto(m.photometric_interpretation(),
                           absl::StrCat(module_field, ".photometric_interpretation")));
  CUIMG_RETURN_IF_ERROR(ValidateFrameDescription(d, module_field));

  const std::string frames_field = absl::StrCat(field, ".frames");
  if (source.frames().empty()) {
    return InvalidFieldError(ErrorReason::kFieldRequired, frames_field,
                             "at least one frame is required");
  }
  CUIMG_RETURN_IF_ERROR(
      CheckLimit(frames_field, source.frames_size(), 1, limits.max_side, "max_side"));
  // Each frame decodes on its own, as a PNG or JPEG does: max_decoded_pixels bounds a frame; the
  // volume they make is bounded as every volume is (a 512x512x300 CT is 79 M pixels, over the
  // 64 M of max_decoded_pixels, and must not be refused for arriving as frames).
  const Extent extent{d.columns, d.rows, source.frames_size()};
  const std::int64_t frame_pixels = std::int64_t{d.columns} * d.rows;
  if (frame_pixels > limits.max_decoded_pixels) {
    return InvalidFieldError(ErrorReason::kLimitExceeded, field,
                             absl::StrCat(d.columns, "x", d.rows, " = ", frame_pixels,
                                          " decoded pixels a frame exceeds the server limit "
                                          "max_decoded_pixels=",
                                          limits.max_decoded_pixels));
  }
  if (extent.Pixels() > limits.max_pixels) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, field,
        absl::StrCat(extent.width, "x", extent.height, "x", extent.depth, " = ", extent.Pixels(),
                     " decoded pixels exceeds the server limit max_pixels=", limits.max_pixels));
  }
  frames->stored_values = source.stored_values();
  for (int i = 0; i < source.frames_size(); ++i) {
    const v1::DicomFrame& f = source.frames(i);
    const std::string at = absl::StrCat(frames_field, "[", i, "]");
    if (f.data().empty()) {
      return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat(at, ".data"), "is empty");
    }
    frames->frames.push_back(absl::MakeConstSpan(
        reinterpret_cast<const std::uint8_t*>(f.data().data()), f.data().size()));
    if (frames->stored_values) continue;
    for (const auto& [name, value] :
         {std::pair<const char*, double>{"rescale_slope", f.rescale_slope()},
          {"rescale_intercept", f.rescale_intercept()}}) {
      // DICOM's DS values hold at most 16 characters; the bound keeps every product exact.
      if (!std::isfinite(value) || std::abs(value) > kMaxRescale) {
        return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(at, ".", name),
                                 absl::StrCat(value, " is not finite and within +-2^31"));
      }
    }
    frames->slopes.push_back(f.rescale_slope() == 0 ? 1 : f.rescale_slope());
    frames->intercepts.push_back(f.rescale_intercept());
  }
  const v1::Spacing& sp = source.spacing();
  for (const auto& [name, value] : {std::pair<const char*, double>{"x_mm", sp.x_mm()},
                                    {"y_mm", sp.y_mm()},
                                    {"z_mm", sp.z_mm()}}) {
    if (!std::isfinite(value) || value < 0) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange,
                               absl::StrCat(field, ".spacing.", name),
                               absl::StrCat(value, " is not finite and >= 0"));
    }
  }
  ImageInput in;
  in.kind = ImageInput::Kind::kFrames;
  in.type = FrameVolumeType(*frames);
  in.extent = extent;
  in.channels = 1;
  in.field = std::move(field);
  in.spacing = sp;
  in.frames = std::move(frames);
  return in;
}

absl::Status ValidateFrameEncoding(const v1::OutputOptions& output, absl::string_view field,
                                   OutputSpec* spec) {
  switch (output.frame_encoding()) {
    case v1::FRAME_ENCODING_UNSPECIFIED:
      return absl::OkStatus();
    case v1::FRAME_ENCODING_HTJ2K_LOSSLESS:
      break;
    default:
      return InvalidFieldError(
          ErrorReason::kUnknownEnumValue, absl::StrCat(field, ".frame_encoding"),
          absl::StrCat(static_cast<int>(output.frame_encoding()), " is not a known value"));
  }
  if (output.keep_resident() || output.has_shared_memory()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination,
                             absl::StrCat(field, ".frame_encoding"),
                             "not with keep_resident or shared_memory (encoded results are "
                             "returned inline)");
  }
  spec->frame_encoding = FrameSyntax::kHtj2kLossless;
  return absl::OkStatus();
}

absl::Status RefuseFrameEncoding(const OutputSpec& output, absl::string_view rpc) {
  if (output.frame_encoding == FrameSyntax::kNative) return absl::OkStatus();
  return InvalidFieldError(ErrorReason::kInvalidCombination, "output.frame_encoding",
                           absl::StrCat(rpc,
                                        " returns raw pixels; only Morphology encodes its "
                                        "results"));
}

absl::Status CheckFrameEncodable(const OutputSpec& output, PixelType type) {
  if (output.frame_encoding == FrameSyntax::kNative || type != PixelType::kF32) {
    return absl::OkStatus();
  }
  return InvalidFieldError(ErrorReason::kInvalidCombination, "output.frame_encoding",
                           "an f32 result cannot be encoded as HTJ2K (u8, u16 and i16 can)");
}

}  // namespace cuimg
