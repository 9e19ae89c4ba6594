#include "server/image_input.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"

namespace cuimg {

absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, const v1::ImageSource& source,
                                           absl::string_view identity, ResidentStore& store,
                                           const RequestLimits& limits, StageTimes* times) {
  ResolvedImage out;
  switch (input.kind) {
    case ImageInput::Kind::kInline:
      out.view = ImageView{input.type, input.extent, input.channels,
                           const_cast<char*>(input.bytes.data())};
      out.spacing = source.image().spacing();
      return out;
    case ImageInput::Kind::kHandle: {
      absl::StatusOr<std::shared_ptr<const StoredImage>> stored = store.Get(identity, input.handle);
      if (!stored.ok()) {
        return absl::Status(stored.status().code(),
                            absl::StrCat(input.field, ": ", stored.status().message()));
      }
      out.resident = *std::move(stored);
      out.view = out.resident->image.view();
      out.spacing = out.resident->spacing;
      return out;
    }
    case ImageInput::Kind::kEncoded:
      break;
  }
  const auto start = std::chrono::steady_clock::now();
  DecodeLimits decode_limits;
  decode_limits.max_pixels = limits.max_pixels;
  decode_limits.max_side = limits.max_side;
  const auto* data = reinterpret_cast<const std::uint8_t*>(input.bytes.data());
  absl::StatusOr<Image> decoded = DecodeImage(absl::MakeConstSpan(data, input.bytes.size()),
                                              decode_limits);
  if (!decoded.ok()) {
    // A file over the limits is the caller's input, like any other bad field.
    return absl::InvalidArgumentError(absl::StrCat(input.field, ": ", decoded.status().message()));
  }
  out.decoded = std::make_unique<Image>(*std::move(decoded));
  out.view = out.decoded->view();
  times->decode_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace cuimg
