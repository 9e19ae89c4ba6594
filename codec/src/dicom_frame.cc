#include "cuimg/codec/dicom_frame.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "cuimg/common/error.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

struct SyntaxInfo {
  FrameSyntax syntax;
  absl::string_view uid;
  absl::string_view name;
  absl::string_view decoder;
  bool lossless;
};

// In FrameSyntax's order.
constexpr std::array<SyntaxInfo, 13> kSyntaxes = {{
    {FrameSyntax::kNative, "1.2.840.10008.1.2.1", "native", "native", true},
    {FrameSyntax::kRle, "1.2.840.10008.1.2.5", "RLE lossless", "rle", true},
    {FrameSyntax::kJpegBaseline, "1.2.840.10008.1.2.4.50", "JPEG baseline", "ijg", false},
    {FrameSyntax::kJpegExtended, "1.2.840.10008.1.2.4.51", "JPEG extended", "ijg", false},
    {FrameSyntax::kJpegLossless, "1.2.840.10008.1.2.4.57", "JPEG lossless", "ijg", true},
    {FrameSyntax::kJpegLosslessSv1, "1.2.840.10008.1.2.4.70", "JPEG lossless SV1", "ijg", true},
    {FrameSyntax::kJpegLsLossless, "1.2.840.10008.1.2.4.80", "JPEG-LS lossless", "charls", true},
    {FrameSyntax::kJpegLsNearLossless, "1.2.840.10008.1.2.4.81", "JPEG-LS near-lossless", "charls",
     false},
    {FrameSyntax::kJ2kLossless, "1.2.840.10008.1.2.4.90", "JPEG 2000 lossless", "openjpeg", true},
    {FrameSyntax::kJ2k, "1.2.840.10008.1.2.4.91", "JPEG 2000", "openjpeg", false},
    {FrameSyntax::kHtj2kLossless, "1.2.840.10008.1.2.4.201", "HTJ2K lossless", "openjpeg", true},
    {FrameSyntax::kHtj2kLosslessRpcl, "1.2.840.10008.1.2.4.202", "HTJ2K lossless RPCL", "openjpeg",
     true},
    {FrameSyntax::kHtj2k, "1.2.840.10008.1.2.4.203", "HTJ2K", "openjpeg", false},
}};

constexpr std::array<FrameSyntax, kSyntaxes.size()> AllSyntaxes() {
  std::array<FrameSyntax, kSyntaxes.size()> all{};
  for (std::size_t i = 0; i < kSyntaxes.size(); ++i) all[i] = kSyntaxes[i].syntax;
  return all;
}
constexpr std::array<FrameSyntax, kSyntaxes.size()> kAllSyntaxes = AllSyntaxes();

const SyntaxInfo& Info(FrameSyntax syntax) { return kSyntaxes[static_cast<std::size_t>(syntax)]; }

}  // namespace

absl::Span<const FrameSyntax> DecodableFrameSyntaxes() { return kAllSyntaxes; }
absl::string_view FrameSyntaxUid(FrameSyntax syntax) { return Info(syntax).uid; }
absl::string_view FrameSyntaxName(FrameSyntax syntax) { return Info(syntax).name; }
absl::string_view FrameDecoderName(FrameSyntax syntax) { return Info(syntax).decoder; }
bool IsLosslessSyntax(FrameSyntax syntax) { return Info(syntax).lossless; }

absl::StatusOr<FrameSyntax> FrameSyntaxFromUid(absl::string_view uid, absl::string_view field) {
  while (!uid.empty() && (uid.back() == '\0' || uid.back() == ' ')) uid.remove_suffix(1);
  // Implicit VR little endian frames hold the same bytes as explicit VR ones.
  if (uid == "1.2.840.10008.1.2") return FrameSyntax::kNative;
  for (const SyntaxInfo& info : kSyntaxes) {
    if (info.uid == uid) return info.syntax;
  }
  // The UID is client text: quoted only when it looks like a UID, so a log line stays clean.
  const bool printable = uid.size() <= 64 && uid.find_first_not_of("0123456789.") == uid.npos;
  return InvalidFieldError(
      ErrorReason::kUnsupportedEncoding, field,
      absl::StrCat("transfer syntax ", printable ? absl::StrCat("'", uid, "'") : "(not a UID)",
                   " is not one this server decodes"));
}

absl::Status ValidateFrameDescription(const FrameDescription& d, absl::string_view field) {
  const auto in_range = [&](absl::string_view name, int value, int low, int high) -> absl::Status {
    if (value >= low && value <= high) return absl::OkStatus();
    return InvalidFieldError(ErrorReason::kValueOutOfRange, absl::StrCat(field, ".", name),
                             absl::StrCat(value, " is not in [", low, ", ", high, "]"));
  };
  if (absl::Status s = in_range("rows", d.rows, 1, 65535); !s.ok()) return s;
  if (absl::Status s = in_range("columns", d.columns, 1, 65535); !s.ok()) return s;
  if (d.samples_per_pixel != 1) {
    return InvalidFieldError(ErrorReason::kUnsupportedPixelType,
                             absl::StrCat(field, ".samples_per_pixel"),
                             absl::StrCat(d.samples_per_pixel,
                                          " samples per pixel: the server decodes grayscale "
                                          "frames (1 sample per pixel)"));
  }
  if (d.bits_allocated != 8 && d.bits_allocated != 16) {
    return InvalidFieldError(ErrorReason::kUnsupportedPixelType,
                             absl::StrCat(field, ".bits_allocated"),
                             absl::StrCat(d.bits_allocated, " bits allocated: 8 or 16 are taken"));
  }
  if (absl::Status s = in_range("bits_stored", d.bits_stored, 1, d.bits_allocated); !s.ok()) {
    return s;
  }
  return in_range("planar_configuration", d.planar_configuration, 0, 0);
}

PixelType DecodedPixelType(const FrameDescription& d) {
  if (d.is_signed) return PixelType::kI16;
  return d.bits_allocated == 8 ? PixelType::kU8 : PixelType::kU16;
}

std::size_t DecodedFrameBytes(const FrameDescription& d) {
  return static_cast<std::size_t>(d.rows) * static_cast<std::size_t>(d.columns) *
         PixelSize(DecodedPixelType(d));
}

absl::Status DecodeNativeFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                               absl::Span<std::uint8_t> out) {
  const std::size_t count = static_cast<std::size_t>(d.rows) * d.columns;
  const std::size_t bytes = count * (d.bits_allocated / 8);
  // A frame that is the whole Pixel Data value may carry its padding byte (PS3.5 7.1.1).
  if (frame.size() != bytes && !(bytes % 2 == 1 && frame.size() == bytes + 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a native frame of ", frame.size(), " bytes; its description needs ", bytes));
  }
  const StoredBits b = StoredBitsOf(d);
  if (d.bits_allocated == 8) {
    StoreSamples(b, frame.data(), count, 0, out);
    return absl::OkStatus();
  }
  // Little endian whatever the host, a row at a time.
  std::uint16_t row[512];
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min<std::size_t>(512, count - done);
    const std::uint8_t* p = frame.data() + 2 * done;
    for (std::size_t i = 0; i < n; ++i) {
      row[i] = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
    }
    StoreSamples(b, row, n, done, out);
    done += n;
  }
  return absl::OkStatus();
}

bool FrameNeedsSandbox(FrameSyntax syntax, absl::Span<const std::uint8_t> frame) {
  switch (syntax) {
    case FrameSyntax::kJ2kLossless:
    case FrameSyntax::kJ2k:
    case FrameSyntax::kHtj2kLossless:
    case FrameSyntax::kHtj2kLosslessRpcl:
    case FrameSyntax::kHtj2k: {
      // A codestream whose headers do not parse is refused before OpenJPEG sees it.
      absl::StatusOr<J2kSiz> siz = ReadJ2kSiz(frame);
      return siz.ok() && siz->high_throughput;
    }
    case FrameSyntax::kJpegLsLossless:
    case FrameSyntax::kJpegLsNearLossless:
      return true;  // CharLS 2.4.1 loops for minutes over some malformed scans
    default:
      return false;
  }
}

absl::Status DecodeFrame(FrameSyntax syntax, const FrameDescription& d,
                         absl::Span<const std::uint8_t> frame, absl::Span<std::uint8_t> out,
                         absl::string_view field) {
  if (out.size() != DecodedFrameBytes(d)) {
    return absl::InternalError(absl::StrCat(field, ": an output of ", out.size(),
                                            " bytes for a frame of ", DecodedFrameBytes(d)));
  }
  absl::Status s;
  switch (syntax) {
    case FrameSyntax::kNative:
      s = DecodeNativeFrame(d, frame, out);
      break;
    case FrameSyntax::kRle:
      s = DecodeRleFrame(d, frame, out);
      break;
    case FrameSyntax::kJpegBaseline:
    case FrameSyntax::kJpegExtended:
    case FrameSyntax::kJpegLossless:
    case FrameSyntax::kJpegLosslessSv1:
      s = DecodeJpegFrame(d, frame, out);
      break;
    case FrameSyntax::kJpegLsLossless:
    case FrameSyntax::kJpegLsNearLossless:
      s = DecodeJpegLsFrame(d, frame, out);
      break;
    case FrameSyntax::kJ2kLossless:
    case FrameSyntax::kJ2k:
    case FrameSyntax::kHtj2kLossless:
    case FrameSyntax::kHtj2kLosslessRpcl:
    case FrameSyntax::kHtj2k:
      s = DecodeJ2kFrame(d, frame, out);
      break;
  }
  if (s.ok()) return s;
  return InvalidFieldError(
      ErrorReason::kCorruptEncodedData, field,
      absl::StrCat("a ", FrameSyntaxName(syntax), " frame that does not decode: ", s.message()));
}

absl::StatusOr<Image> DecodeFrame(FrameSyntax syntax, const FrameDescription& d,
                                  absl::Span<const std::uint8_t> frame, absl::string_view field) {
  Image image(DecodedPixelType(d), Extent{d.columns, d.rows, 1}, 1, Image::kUninitialized);
  absl::Status s =
      DecodeFrame(syntax, d, frame, absl::MakeSpan(image.bytes(), image.size_bytes()), field);
  if (!s.ok()) return s;
  return image;
}

}  // namespace cuimg
