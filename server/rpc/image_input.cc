#include "server/rpc/image_input.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

DecodeLimits DecodeLimitsFor(const RequestLimits& limits) {
  DecodeLimits decode;
  decode.max_pixels = std::min(limits.max_pixels, limits.max_decoded_pixels);
  decode.max_side = limits.max_side;
  return decode;
}

absl::Status CheckEncodedShape(const ImageView& shape, absl::string_view field,
                               const RequestLimits& limits) {
  const DecodeLimits decode = DecodeLimitsFor(limits);
  const Extent& e = shape.extent;
  if (e.width > decode.max_side || e.height > decode.max_side) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", e.width, "x", e.height,
                                                   " exceeds the server limit max_side=",
                                                   decode.max_side));
  }
  if (e.Pixels() > decode.max_pixels) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", e.width, "x", e.height, " = ", e.Pixels(),
                     " decoded pixels exceeds the server limit ",
                     limits.max_decoded_pixels <= limits.max_pixels ? "max_decoded_pixels="
                                                                     : "max_pixels=",
                     decode.max_pixels));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> FindRegion(
    const SharedMemoryRegistry* shared_memory, CallScope& call, absl::string_view handle,
    absl::string_view field) {
  if (shared_memory == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": this server does not offer shared memory (--shared_memory)"));
  }
  absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
      shared_memory->Get(call.identity(), handle);
  if (!region.ok()) {
    return absl::Status(region.status().code(),
                        absl::StrCat(field, ": ", region.status().message()));
  }
  call.UseRegion(*region, std::string(field));
  return region;
}

absl::StatusOr<ResolvedImage> ResolveImage(const ImageInput& input, CallScope& call,
                                           ResidentStore& store,
                                           const SharedMemoryRegistry* shared_memory,
                                           const RequestLimits& limits,
                                           DecodeThreads* decode_threads) {
  const std::string& identity = call.identity();
  ResolvedImage out;
  switch (input.kind) {
    case ImageInput::Kind::kInline:
      out.view = ImageView{input.type, input.extent, input.channels,
                           const_cast<char*>(input.bytes.data())};
      out.spacing = input.spacing;
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
    case ImageInput::Kind::kSharedMemory: {
      CUIMG_ASSIGN_OR_RETURN(out.region, FindRegion(shared_memory, call, input.handle,
                                                    absl::StrCat(input.field, ".region")));
      out.view = ImageView{input.type, input.extent, input.channels, nullptr};
      CUIMG_ASSIGN_OR_RETURN(std::uint8_t* data,
                             out.region->Span(input.offset, out.view.Bytes(),
                                              absl::StrCat(input.field, ".offset")));
      out.view.data = data;
      out.spacing = input.spacing;
      return out;
    }
    case ImageInput::Kind::kEncoded:
      break;
  }
  const auto start = std::chrono::steady_clock::now();
  const DecodeLimits decode_limits = DecodeLimitsFor(limits);
  const auto* data = reinterpret_cast<const std::uint8_t*>(input.bytes.data());
  absl::StatusOr<Image> decoded = DecodeImage(absl::MakeConstSpan(data, input.bytes.size()),
                                              decode_limits, decode_threads);
  if (!decoded.ok()) {
    // A file over the limits is the caller's input, like any other bad field.
    return absl::InvalidArgumentError(absl::StrCat(input.field, ": ", decoded.status().message()));
  }
  out.decoded = std::make_unique<Image>(*std::move(decoded));
  out.view = out.decoded->view();
  call.times().decode_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace cuimg
