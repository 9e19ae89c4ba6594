// PNG through libpng's classic API: the simplified API converts 16-bit data to linear light,
// which would alter medical images, so we drive the transforms ourselves.
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "codec_internal.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

struct ReadState {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t pos;
  char error[256];
};

struct WriteState {
  std::vector<std::uint8_t>* out;
  char error[256];
};

void OnError(png_structp png, png_const_charp message) {
  auto* error = static_cast<char*>(png_get_error_ptr(png));
  std::snprintf(error, 256, "%s", message);
  png_longjmp(png, 1);
}

void OnWarning(png_structp, png_const_charp) {}

void ReadFromMemory(png_structp png, png_bytep out, png_size_t length) {
  auto* state = static_cast<ReadState*>(png_get_io_ptr(png));
  if (state->size - state->pos < length) png_error(png, "truncated PNG data");
  std::memcpy(out, state->data + state->pos, length);
  state->pos += length;
}

void WriteToMemory(png_structp png, png_bytep data, png_size_t length) {
  auto* state = static_cast<WriteState*>(png_get_io_ptr(png));
  state->out->insert(state->out->end(), data, data + length);
}

void FlushNothing(png_structp) {}

// Every C++ object the longjmp could bypass is created before setjmp; the function body after
// setjmp only calls libpng.
absl::Status DecodeInto(ReadState* state, const DecodeLimits& limits, Image* image) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, state->error, OnError, OnWarning);
  if (png == nullptr) return absl::ResourceExhaustedError("png_create_read_struct failed");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return absl::ResourceExhaustedError("png_create_info_struct failed");
  }
  std::vector<png_bytep> rows;
  volatile int failure = 0;  // 1 corrupt, 2 too large, 3 bad layout
  if (setjmp(png_jmpbuf(png))) {
    failure = 1;
  } else {
    png_set_read_fn(png, state, ReadFromMemory);
    png_set_user_limits(png, static_cast<png_uint_32>(limits.max_side),
                        static_cast<png_uint_32>(limits.max_side));
    png_read_info(png, info);
    const png_uint_32 width = png_get_image_width(png, info);
    const png_uint_32 height = png_get_image_height(png, info);
    const int bit_depth = png_get_bit_depth(png, info);
    const int color = png_get_color_type(png, info);
    if (static_cast<std::int64_t>(width) * height > limits.max_pixels) {
      failure = 2;
    } else {
      if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
      if (color == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
      if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
      if (color & PNG_COLOR_MASK_ALPHA || png_get_valid(png, info, PNG_INFO_tRNS)) {
        png_set_strip_alpha(png);
      }
      if (bit_depth == 16) png_set_swap(png);  // to little-endian host order
      png_set_bgr(png);
      png_read_update_info(png, info);
      const int channels = png_get_channels(png, info);
      const int depth = png_get_bit_depth(png, info);
      if ((channels != 1 && channels != 3) || (depth != 8 && depth != 16)) {
        failure = 3;
      } else {
        *image = Image(depth == 16 ? PixelType::kU16 : PixelType::kU8, Extent{width, height, 1},
                       channels);
        const std::size_t stride = static_cast<std::size_t>(width) * channels * (depth / 8);
        rows.resize(height);
        for (png_uint_32 y = 0; y < height; ++y) rows[y] = image->bytes() + y * stride;
        png_read_image(png, rows.data());
        png_read_end(png, nullptr);
      }
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  switch (failure) {
    case 0:
      return absl::OkStatus();
    case 2:
      return MakeError(absl::StatusCode::kResourceExhausted, ErrorReason::kLimitExceeded, "",
                       absl::StrCat("PNG image exceeds the limits (", limits.max_pixels,
                                    " pixels, ", limits.max_side, " per side)"));
    case 3:
      return InvalidFieldError(ErrorReason::kUnsupportedEncoding, "", "PNG layout not supported");
    default:
      return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                               absl::StrCat("corrupt PNG: ", state->error));
  }
}

std::uint32_t BigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         p[3];
}

}  // namespace

absl::StatusOr<ImageView> ProbePng(absl::Span<const std::uint8_t> bytes) {
  // Signature (8), then the IHDR chunk: length (4) "IHDR" width (4) height (4) depth (1) colour
  // (1).
  if (bytes.size() < 26 || std::memcmp(bytes.data() + 12, "IHDR", 4) != 0) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "", "corrupt PNG: no IHDR chunk");
  }
  const std::uint32_t width = BigEndian32(bytes.data() + 16);
  const std::uint32_t height = BigEndian32(bytes.data() + 20);
  const int depth = bytes[24];
  const int color = bytes[25];
  if (width == 0 || height == 0 || width > 0x7fffffffu || height > 0x7fffffffu) {
    return InvalidFieldError(ErrorReason::kCorruptEncodedData, "", "corrupt PNG: bad size in IHDR");
  }
  // DecodePng keeps gray as one channel and turns palette/colour into BGR, alpha dropped.
  const bool gray = color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA;
  return ImageView{depth == 16 ? PixelType::kU16 : PixelType::kU8, Extent{width, height, 1},
                   gray ? 1 : 3, nullptr};
}

absl::StatusOr<Image> DecodePng(absl::Span<const std::uint8_t> bytes, const DecodeLimits& limits) {
  ReadState state{bytes.data(), bytes.size(), 0, {0}};
  Image image;
  if (absl::Status s = DecodeInto(&state, limits, &image); !s.ok()) return s;
  return image;
}

absl::StatusOr<std::vector<std::uint8_t>> EncodePng(const ImageView& image) {
  if (image.type != PixelType::kU8 && image.type != PixelType::kU16) {
    return absl::InvalidArgumentError("PNG holds only 8- or 16-bit pixels");
  }
  if (image.extent.depth != 1) return absl::InvalidArgumentError("PNG holds only 2D images");
  int color = 0;
  switch (image.channels) {
    case 1:
      color = PNG_COLOR_TYPE_GRAY;
      break;
    case 3:
      color = PNG_COLOR_TYPE_RGB;
      break;
    case 4:
      color = PNG_COLOR_TYPE_RGB_ALPHA;
      break;
    default:
      return absl::InvalidArgumentError("PNG needs 1, 3 or 4 channels");
  }
  const int depth = image.type == PixelType::kU16 ? 16 : 8;
  const std::size_t stride =
      static_cast<std::size_t>(image.extent.width) * image.channels * (depth / 8);
  std::vector<std::uint8_t> out;
  WriteState state{&out, {0}};
  std::vector<png_bytep> rows(image.extent.height);
  for (std::int64_t y = 0; y < image.extent.height; ++y) {
    rows[y] = static_cast<png_bytep>(image.data) + y * stride;
  }
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, state.error, OnError, OnWarning);
  if (png == nullptr) return absl::ResourceExhaustedError("png_create_write_struct failed");
  png_infop info = png_create_info_struct(png);
  volatile bool failed = false;
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    failed = true;
  } else {
    png_set_write_fn(png, &state, WriteToMemory, FlushNothing);
    png_set_IHDR(png, info, static_cast<png_uint_32>(image.extent.width),
                 static_cast<png_uint_32>(image.extent.height), depth, color, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    if (depth == 16) png_set_swap(png);
    if (image.channels >= 3) png_set_bgr(png);
    png_write_image(png, rows.data());
    png_write_end(png, nullptr);
  }
  png_destroy_write_struct(&png, info != nullptr ? &info : nullptr);
  if (failed) return absl::InternalError(absl::StrCat("PNG encoding failed: ", state.error));
  return out;
}

}  // namespace cuimg
