#include "cuimg/codec/j2k_header.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace cuimg {
namespace {

std::uint32_t Read16(const std::uint8_t* p) { return (std::uint32_t{p[0]} << 8) | p[1]; }
std::uint32_t Read32(const std::uint8_t* p) { return (Read16(p) << 16) | Read16(p + 2); }
std::uint64_t Read64(const std::uint8_t* p) {
  return (std::uint64_t{Read32(p)} << 32) | Read32(p + 4);
}

absl::Status Fault(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("JPEG 2000 header: ", what));
}

constexpr std::uint8_t kJp2Signature[12] = {0,   0,   0,    12,   'j',  'P',
                                            ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};

// The contents of the first top-level 'jp2c' box of a JP2 file (ISO 15444-1 I.4).
absl::StatusOr<absl::Span<const std::uint8_t>> Jp2Codestream(absl::Span<const std::uint8_t> b) {
  std::size_t at = 0;
  while (b.size() - at >= 8) {
    std::uint64_t length = Read32(b.data() + at);
    std::size_t header = 8;
    if (length == 1) {
      if (b.size() - at < 16) return Fault("a JP2 box's extended length past the end");
      length = Read64(b.data() + at + 8);
      header = 16;
    } else if (length == 0) {
      length = b.size() - at;  // the last box runs to the end
    }
    if (length < header || length > b.size() - at) return Fault("a JP2 box past the end");
    if (std::memcmp(b.data() + at + 4, "jp2c", 4) == 0) {
      return b.subspan(at + header, static_cast<std::size_t>(length) - header);
    }
    at += static_cast<std::size_t>(length);
  }
  return Fault("a JP2 file without a codestream box");
}

constexpr std::uint32_t kSot = 0xFF90, kSod = 0xFF93, kEoc = 0xFFD9;
constexpr std::uint32_t kCap = 0xFF50, kCod = 0xFF52, kCoc = 0xFF53;

// Walks the marker segments from `at` up to (not past) `stop` (SOT in the main header, SOD in a
// tile-part header), noting HT code blocks: a CAP segment (Part 15 capabilities), or a COD or COC
// whose code-block style has bit 6 (HT) or 7 (mixed) set (ISO 15444-15 A.3). Returns the offset
// of `stop`.
absl::StatusOr<std::size_t> WalkSegments(absl::Span<const std::uint8_t> b, std::size_t at,
                                         std::size_t end, std::uint32_t stop, int components,
                                         J2kSiz* siz) {
  while (true) {
    if (end - at < 2) return Fault("a header cut short");
    const std::uint32_t marker = Read16(b.data() + at);
    if (marker == stop) return at;
    if ((marker >> 8) != 0xFF || marker < 0xFF30) return Fault("a header without its markers");
    if (end - at < 4) return Fault("a header cut short");
    const std::size_t length = Read16(b.data() + at + 2);
    if (length < 2 || length > end - at - 2) return Fault("a header segment past the end");
    const std::uint8_t* p = b.data() + at + 4;  // after the length
    // Where the code-block style is: COD after Scod, SGcod (4) and 3 SPcod bytes; COC after its
    // component index (1 or 2 bytes), Scoc and 3 SPcoc bytes.
    const std::size_t style = marker == kCod   ? 1 + 4 + 3
                              : marker == kCoc ? (components < 257 ? 1 : 2) + 1 + 3
                                               : 0;
    if (marker == kCap) siz->high_throughput = true;
    if (style != 0) {
      if (length - 2 <= style) return Fault("a COD or COC segment too short");
      if ((p[style] & 0xC0) != 0) siz->high_throughput = true;
    }
    at += 2 + length;
  }
}

// Walks the main header from `at` to the first tile-part, then the tile-parts by their lengths
// (Psot), and expects EOC after the last. Some decoders (OpenJPH, and OpenJPEG outside its strict
// mode) decode a codestream cut short as if the missing code blocks were zero, so a truncated
// frame is caught here whichever decoder takes it. Bytes after EOC are ignored (a fragment's
// padding).
absl::Status WalkCodestream(absl::Span<const std::uint8_t> b, std::size_t at, J2kSiz* siz) {
  absl::StatusOr<std::size_t> sot = WalkSegments(b, at, b.size(), kSot, siz->components, siz);
  if (!sot.ok()) return sot.status();
  at = *sot;
  while (b.size() - at >= 2 && Read16(b.data() + at) == kSot) {
    if (b.size() - at < 12 || Read16(b.data() + at + 2) != 10) return Fault("a tile-part header");
    const std::uint32_t length = Read32(b.data() + at + 6);
    const std::size_t end = length == 0 ? b.size() : at + length;
    if (length != 0 && (length < 14 || length > b.size() - at)) {
      return Fault("the codestream is cut short");
    }
    absl::StatusOr<std::size_t> sod = WalkSegments(b, at + 12, end, kSod, siz->components, siz);
    if (!sod.ok()) return sod.status();
    if (length == 0) {
      // The last tile-part runs to EOC.
      for (std::size_t last = b.size(); last >= *sod + 4; --last) {
        if (Read16(b.data() + last - 2) == kEoc) return absl::OkStatus();
      }
      return Fault("the codestream is cut short (no EOC)");
    }
    at = end;
  }
  if (b.size() - at < 2 || Read16(b.data() + at) != kEoc) {
    return Fault("the codestream does not end in EOC after its last tile-part");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<J2kSiz> ReadJ2kSiz(absl::Span<const std::uint8_t> bytes) {
  J2kSiz siz;
  if (bytes.size() >= sizeof kJp2Signature &&
      std::memcmp(bytes.data(), kJp2Signature, sizeof kJp2Signature) == 0) {
    absl::StatusOr<absl::Span<const std::uint8_t>> codestream = Jp2Codestream(bytes);
    if (!codestream.ok()) return codestream.status();
    bytes = *codestream;
    siz.jp2 = true;
  }
  // SOC, then SIZ: marker, Lsiz, Rsiz, 8 sizes of 4 bytes, Csiz, 3 bytes a component.
  constexpr std::size_t kFixed = 2 + 2 + 2 + 2 + 8 * 4 + 2;
  if (bytes.size() < 4 || Read16(bytes.data()) != 0xFF4F) return Fault("no SOC marker");
  if (Read16(bytes.data() + 2) != 0xFF51) return Fault("no SIZ marker after SOC");
  if (bytes.size() < kFixed) return Fault("SIZ past the end");
  const std::uint8_t* p = bytes.data() + 4;
  const std::uint32_t length = Read16(p);
  const std::uint32_t rsiz = Read16(p + 2);
  const std::uint32_t x = Read32(p + 4), y = Read32(p + 8);
  const std::uint32_t x0 = Read32(p + 12), y0 = Read32(p + 16);
  const std::uint32_t tile_w = Read32(p + 20), tile_h = Read32(p + 24);
  const std::uint32_t components = Read16(p + 36);
  if (components < 1 || components > 16384) return Fault("SIZ component count not in 1..16384");
  if (length != 38 + 3 * components) return Fault("SIZ length does not match its components");
  if (bytes.size() < 4 + std::size_t{length}) return Fault("SIZ past the end");
  if (x <= x0 || y <= y0) return Fault("an empty image");
  if (tile_w == 0 || tile_h == 0) return Fault("a tile of size 0");
  siz.width = x - x0;
  siz.height = y - y0;
  siz.components = static_cast<int>(components);
  siz.high_throughput = (rsiz & 0x4000) != 0;
  const std::uint8_t* c = p + 38;
  siz.precision = (c[0] & 0x7F) + 1;
  siz.is_signed = (c[0] & 0x80) != 0;
  if (siz.precision > 38) return Fault("a component of more than 38 bits");
  for (std::uint32_t i = 0; i < components; ++i) {
    if (c[3 * i + 1] != 1 || c[3 * i + 2] != 1) siz.subsampled = true;
    if (c[3 * i + 1] == 0 || c[3 * i + 2] == 0) return Fault("a component subsampled by 0");
  }
  if (absl::Status s = WalkCodestream(bytes, 4 + std::size_t{length}, &siz); !s.ok()) return s;
  return siz;
}

absl::Status CheckJ2kSiz(const J2kSiz& siz, const FrameDescription& d) {
  if (siz.width != static_cast<std::uint32_t>(d.columns) ||
      siz.height != static_cast<std::uint32_t>(d.rows)) {
    return absl::InvalidArgumentError(absl::StrCat("the codestream is ", siz.width, "x", siz.height,
                                                   " pixels, the frame's description ", d.columns,
                                                   "x", d.rows));
  }
  if (siz.components != d.samples_per_pixel) {
    return absl::InvalidArgumentError(absl::StrCat("the codestream has ", siz.components,
                                                   " components, the frame's description ",
                                                   d.samples_per_pixel, " samples per pixel"));
  }
  if (siz.subsampled) return absl::InvalidArgumentError("the codestream's component is subsampled");
  if (siz.precision > d.bits_allocated) {
    return absl::InvalidArgumentError(absl::StrCat("the codestream has ", siz.precision,
                                                   "-bit samples, more than bits_allocated ",
                                                   d.bits_allocated));
  }
  return absl::OkStatus();
}

}  // namespace cuimg
