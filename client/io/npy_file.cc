#include "client/io/npy_file.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace cuimg {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLength = 6;
// Larger volumes than this are refused before allocation (the same bound as TIFF input).
constexpr std::int64_t kMaxPixels = std::int64_t{1} << 30;

absl::Status Bad(const std::string& name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": not a supported .npy file: ", why));
}

// The value of 'key' in the header's Python dict literal, as text: "'<i2'", "False", "(3, 4)".
// The header is np.save's repr of a dict with exactly these three keys, so a small scanner is
// enough; anything it does not recognise is refused rather than guessed.
bool FindValue(absl::string_view header, absl::string_view key, absl::string_view* value) {
  const std::string quoted = absl::StrCat("'", key, "'");
  std::size_t at = header.find(quoted);
  if (at == absl::string_view::npos) return false;
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(header.substr(at + quoted.size()));
  if (!absl::ConsumePrefix(&rest, ":")) return false;
  rest = absl::StripLeadingAsciiWhitespace(rest);
  std::size_t end;
  if (absl::StartsWith(rest, "(")) {
    end = rest.find(')');
    if (end == absl::string_view::npos) return false;
    ++end;
  } else if (absl::StartsWith(rest, "'")) {
    end = rest.find('\'', 1);
    if (end == absl::string_view::npos) return false;
    ++end;
  } else {
    end = std::min(rest.find(','), rest.find('}'));
    if (end == absl::string_view::npos) return false;
  }
  *value = absl::StripAsciiWhitespace(rest.substr(0, end));
  return true;
}

void SwapBytes(std::uint8_t* data, std::size_t count, std::size_t size) {
  for (std::size_t i = 0; i < count; ++i) std::reverse(data + i * size, data + (i + 1) * size);
}

const char* Descr(PixelType type) {
  switch (type) {
    case PixelType::kU8:
      return "|u1";
    case PixelType::kU16:
      return "<u2";
    case PixelType::kI16:
      return "<i2";
    case PixelType::kU32:
      return "<u4";
    case PixelType::kF32:
      break;
  }
  return "<f4";
}

}  // namespace

absl::StatusOr<Image> ParseNpy(absl::Span<const std::uint8_t> bytes, const std::string& name) {
  if (bytes.size() < kMagicLength + 4 || std::memcmp(bytes.data(), kMagic, kMagicLength) != 0) {
    return Bad(name, "no \\x93NUMPY magic");
  }
  const int major = bytes[6];
  std::size_t header_length, header_start;
  if (major == 1) {
    header_length = bytes[8] | (bytes[9] << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Bad(name, "truncated header");
    header_length = bytes[8] | (bytes[9] << 8) | (std::size_t{bytes[10]} << 16) |
                    (std::size_t{bytes[11]} << 24);
    header_start = 12;
  } else {
    return Bad(name, absl::StrCat("format version ", major));
  }
  if (bytes.size() < header_start + header_length) return Bad(name, "truncated header");
  const absl::string_view header(reinterpret_cast<const char*>(bytes.data()) + header_start,
                                 header_length);

  absl::string_view descr, fortran, shape_text;
  if (!FindValue(header, "descr", &descr) || !FindValue(header, "fortran_order", &fortran) ||
      !FindValue(header, "shape", &shape_text)) {
    return Bad(name, "header lacks descr, fortran_order or shape");
  }
  if (fortran != "False") return Bad(name, "Fortran order (save a C-contiguous array)");
  if (descr.size() != 5) return Bad(name, absl::StrCat("dtype ", descr));
  const char order = descr[1];
  const absl::string_view kind = descr.substr(2, 2);
  PixelType type;
  if (kind == "u1") {
    type = PixelType::kU8;
  } else if (kind == "u2") {
    type = PixelType::kU16;
  } else if (kind == "i2") {
    type = PixelType::kI16;
  } else if (kind == "f4") {
    type = PixelType::kF32;
  } else if (kind == "u4") {
    type = PixelType::kU32;  // label images
  } else {
    return Bad(name, absl::StrCat("dtype ", descr, " (u1, u2, i2, f4 or u4)"));
  }
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    return Bad(name, absl::StrCat("dtype ", descr));
  }

  absl::string_view inner = shape_text;
  if (!absl::ConsumePrefix(&inner, "(") || !absl::ConsumeSuffix(&inner, ")")) {
    return Bad(name, "shape is not a tuple");
  }
  std::vector<std::int64_t> shape;
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    std::int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1 || v > 65536) {
      return Bad(name, absl::StrCat("shape ", shape_text, ": each axis in [1, 65536]"));
    }
    shape.push_back(v);
  }
  if (shape.size() != 2 && shape.size() != 3) {
    return Bad(name, absl::StrCat("shape ", shape_text, " (expected (H, W) or (D, H, W))"));
  }
  const Extent extent =
      shape.size() == 2 ? Extent{shape[1], shape[0], 1} : Extent{shape[2], shape[1], shape[0]};
  if (extent.Pixels() > kMaxPixels) return Bad(name, "more than 2^30 pixels");

  // The data's size is checked before anything is allocated: a header may claim any shape.
  const std::size_t data_start = header_start + header_length;
  const std::size_t need = static_cast<std::size_t>(extent.Pixels()) * PixelSize(type);
  if (bytes.size() - data_start != need) {
    return Bad(name,
               absl::StrCat(bytes.size() - data_start, " data bytes, shape and dtype need ", need));
  }
  Image image(type, extent);
  std::memcpy(image.bytes(), bytes.data() + data_start, image.size_bytes());
  if (order == '>') SwapBytes(image.bytes(), extent.Pixels(), PixelSize(type));
  return image;
}

absl::StatusOr<std::vector<std::uint8_t>> EncodeNpy(const ImageView& image) {
  if (image.channels != 1) {
    return absl::InvalidArgumentError(
        ".npy output holds one-channel images and volumes (write colour as .png or .tif)");
  }
  const Extent& e = image.extent;
  const std::string shape = e.depth > 1
                                ? absl::StrCat("(", e.depth, ", ", e.height, ", ", e.width, ")")
                                : absl::StrCat("(", e.height, ", ", e.width, ")");
  std::string header = absl::StrCat("{'descr': '", Descr(image.type),
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
  // Pad with spaces and end with '\n' so magic + version + length + header is a multiple of 64.
  const std::size_t unpadded = kMagicLength + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');

  std::vector<std::uint8_t> out(kMagic, kMagic + kMagicLength);
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<std::uint8_t>(header.size() & 0xff));
  out.push_back(static_cast<std::uint8_t>(header.size() >> 8));
  out.insert(out.end(), header.begin(), header.end());
  const auto* data = static_cast<const std::uint8_t*>(image.data);
  out.insert(out.end(), data, data + image.Bytes());  // x86 and our hosts are little-endian
  return out;
}

}  // namespace cuimg
