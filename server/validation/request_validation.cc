// The rules every validator shares (validation_rules.h), and the request parts that several RPCs
// take: handles, image sources, output options, the Upload headers.
#include "server/validation/request_validation.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "cuimg/common/status_macros.h"
#include "server/validation/proto_conversion.h"
#include "server/validation/validation_rules.h"

namespace cuimg {
namespace {

std::string NotIn(std::int64_t value, std::int64_t lo, std::int64_t hi) {
  return absl::StrCat(value, " is not in [", lo, ", ", hi, "]");
}

}  // namespace

absl::Status CheckRange(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return InvalidFieldError(ErrorReason::kValueOutOfRange, field, NotIn(value, lo, hi));
}

absl::Status CheckLimit(absl::string_view field, std::int64_t value, std::int64_t lo,
                        std::int64_t hi, absl::string_view limit, ErrorReason above) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  return InvalidFieldError(value > hi ? above : ErrorReason::kValueOutOfRange, field,
                           absl::StrCat(NotIn(value, lo, hi), " (", limit, ")"));
}

absl::Status CheckDoubleRange(absl::string_view field, double value, double lo_excl, double hi) {
  if (!std::isfinite(value) || value <= lo_excl || value > hi) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                             absl::StrCat(value, " is not in (", lo_excl, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> AsInt(absl::string_view field, std::uint32_t value) {
  if (value > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) {
    return InvalidFieldError(ErrorReason::kValueOutOfRange, field,
                             absl::StrCat(value, " is too large"));
  }
  return static_cast<int>(value);
}

absl::StatusOr<ImageInput> ValidateImage(const v1::Image& image, absl::string_view data,
                                         std::string field, const RequestLimits& limits,
                                         bool partial_data) {
  ImageInput in;
  in.kind = ImageInput::Kind::kInline;
  CUIMG_ASSIGN_OR_RETURN(
      in.type, PixelTypeFromProto(image.pixel_type(), absl::StrCat(field, ".pixel_type")));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit(absl::StrCat(field, ".width"), image.width(), 1, limits.max_side, "max_side"));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit(absl::StrCat(field, ".height"), image.height(), 1, limits.max_side, "max_side"));
  CUIMG_RETURN_IF_ERROR(
      CheckLimit(absl::StrCat(field, ".depth"), image.depth(), 0, limits.max_side, "max_side"));
  CUIMG_RETURN_IF_ERROR(CheckRange(absl::StrCat(field, ".channels"), image.channels(), 0, 4));
  in.extent = Extent{image.width(), image.height(), image.depth() == 0 ? 1 : image.depth()};
  in.channels = image.channels() == 0 ? 1 : static_cast<int>(image.channels());
  const std::int64_t pixels = in.extent.Pixels();
  if (pixels > limits.max_pixels) {
    return InvalidFieldError(
        ErrorReason::kLimitExceeded, field,
        absl::StrCat(in.extent.width, "x", in.extent.height, "x", in.extent.depth, " = ", pixels,
                     " pixels exceeds the server limit max_pixels=", limits.max_pixels));
  }
  const std::int64_t expected =
      pixels * in.channels * static_cast<std::int64_t>(PixelSize(in.type));
  const auto got = static_cast<std::int64_t>(data.size());
  if (partial_data ? got > expected : got != expected) {
    return InvalidFieldError(ErrorReason::kDataSizeMismatch, absl::StrCat(field, ".data"),
                             absl::StrCat(data.size(), " bytes, expected width*height*depth*",
                                          "channels*", PixelSize(in.type), " = ", expected));
  }
  const v1::Spacing& sp = image.spacing();
  for (const auto& [name, value] : {std::pair<const char*, double>{"x_mm", sp.x_mm()},
                                    {"y_mm", sp.y_mm()},
                                    {"z_mm", sp.z_mm()}}) {
    if (!std::isfinite(value) || value < 0) {
      return InvalidFieldError(ErrorReason::kValueOutOfRange,
                               absl::StrCat(field, ".spacing.", name),
                               absl::StrCat(value, " is not finite and >= 0"));
    }
  }
  in.bytes = data;
  in.field = std::move(field);
  in.spacing = sp;
  return in;
}

std::string PixelTypeField(const ImageInput& input) {
  switch (input.kind) {
    case ImageInput::Kind::kInline:
      return absl::StrCat(input.field, ".pixel_type");
    case ImageInput::Kind::kSharedMemory:
      return absl::StrCat(input.field, ".image.pixel_type");
    case ImageInput::Kind::kFrames:
      // The decoded type follows the frames' bits and pixel representation.
      return absl::StrCat(input.field, ".pixel_module.bits_allocated");
    case ImageInput::Kind::kHandle:
    case ImageInput::Kind::kEncoded:
      break;
  }
  return input.field;
}

absl::Status ValidateHandle(absl::string_view handle, absl::string_view field) {
  if (handle.empty() || handle.size() > 128) {
    return InvalidFieldError(ErrorReason::kInvalidFormat, field,
                             absl::StrCat("must be 1 to 128 characters, got ", handle.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ImageInput> ValidateImageSource(const v1::ImageSource& source,
                                               absl::string_view field, const RequestLimits& limits,
                                               DetachedPixels pixels) {
  switch (source.source_case()) {
    case v1::ImageSource::kImage:
      return ValidateImage(source.image(), pixels.value_or(source.image().data()),
                           absl::StrCat(field, ".image"), limits, false);
    case v1::ImageSource::kHandle: {
      CUIMG_RETURN_IF_ERROR(ValidateHandle(source.handle(), absl::StrCat(field, ".handle")));
      ImageInput in;
      in.kind = ImageInput::Kind::kHandle;
      in.handle = source.handle();
      in.field = absl::StrCat(field, ".handle");
      return in;
    }
    case v1::ImageSource::kEncoded: {
      if (source.encoded().empty()) {
        return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat(field, ".encoded"),
                                 "is empty");
      }
      ImageInput in;
      in.kind = ImageInput::Kind::kEncoded;
      in.bytes = source.encoded();
      in.field = absl::StrCat(field, ".encoded");
      return in;
    }
    case v1::ImageSource::kSharedMemory: {
      const v1::SharedMemoryImage& shm = source.shared_memory();
      const std::string prefix = absl::StrCat(field, ".shared_memory");
      CUIMG_RETURN_IF_ERROR(ValidateHandle(shm.region(), absl::StrCat(prefix, ".region")));
      if (!shm.has_image()) {
        return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat(prefix, ".image"),
                                 "is required");
      }
      if (!shm.image().data().empty()) {
        return InvalidFieldError(ErrorReason::kInvalidCombination,
                                 absl::StrCat(prefix, ".image.data"),
                                 "must be empty (the pixels are in the region)");
      }
      // The shape's rules are an inline image's; only the bytes live elsewhere.
      CUIMG_ASSIGN_OR_RETURN(ImageInput in,
                             ValidateImage(shm.image(), "", absl::StrCat(prefix, ".image"), limits,
                                           /*partial_data=*/true));
      in.kind = ImageInput::Kind::kSharedMemory;
      in.handle = shm.region();
      in.offset = shm.offset();
      in.field = prefix;
      return in;
    }
    case v1::ImageSource::kDicomFrames:
      return ValidateDicomFrames(source.dicom_frames(), absl::StrCat(field, ".dicom_frames"),
                                 limits);
    case v1::ImageSource::SOURCE_NOT_SET:
      break;
  }
  return InvalidFieldError(ErrorReason::kFieldRequired, absl::StrCat(field, ".source"),
                           "one of image, handle, encoded, shared_memory or dicom_frames is "
                           "required");
}

absl::StatusOr<OutputSpec> ValidateOutputOptions(const v1::OutputOptions& output,
                                                 absl::string_view field) {
  if (output.omit_data() && !output.keep_resident()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".omit_data"),
                             "requires keep_resident (the result would be discarded)");
  }
  if (output.ttl_seconds() != 0 && !output.keep_resident()) {
    return InvalidFieldError(ErrorReason::kInvalidCombination, absl::StrCat(field, ".ttl_seconds"),
                             "only meaningful with keep_resident");
  }
  OutputSpec spec;
  spec.keep_resident = output.keep_resident();
  spec.omit_data = output.omit_data();
  spec.ttl_seconds = output.ttl_seconds();
  CUIMG_RETURN_IF_ERROR(ValidateFrameEncoding(output, field, &spec));
  if (output.has_shared_memory()) {
    if (output.keep_resident()) {
      return InvalidFieldError(ErrorReason::kInvalidCombination,
                               absl::StrCat(field, ".shared_memory"),
                               "not with keep_resident (the result goes to one place)");
    }
    CUIMG_RETURN_IF_ERROR(ValidateHandle(output.shared_memory().region(),
                                         absl::StrCat(field, ".shared_memory.region")));
    spec.shared_memory_region = output.shared_memory().region();
    spec.shared_memory_offset = output.shared_memory().offset();
  }
  return spec;
}

absl::Status RefuseSharedMemoryOutput(const OutputSpec& output, absl::string_view rpc) {
  if (output.shared_memory_region.empty()) return absl::OkStatus();
  return InvalidFieldError(ErrorReason::kInvalidCombination, "output.shared_memory",
                           absl::StrCat(rpc,
                                        " returns its results inline or resident; only Morphology "
                                        "writes to shared memory"));
}

absl::StatusOr<ImageInput> ValidateUploadHeader(const v1::Image& image,
                                                const RequestLimits& limits) {
  return ValidateImage(image, image.data(), "image", limits, true);
}

}  // namespace cuimg
