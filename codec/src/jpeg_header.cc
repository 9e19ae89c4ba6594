#include "cuimg/codec/jpeg_header.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cuimg/common/error.h"

namespace cuimg {
namespace {

constexpr int kSoi = 0xD8, kEoi = 0xD9, kSos = 0xDA, kDht = 0xC4, kDri = 0xDD, kApp14 = 0xEE;
constexpr int kJpg = 0xC8, kDac = 0xCC;

bool IsSof(int m) { return m >= 0xC0 && m <= 0xCF && m != kDht && m != kJpg && m != kDac; }
bool IsRst(int m) { return m >= 0xD0 && m <= 0xD7; }

int Read16(const std::uint8_t* p) { return (p[0] << 8) | p[1]; }

absl::Status Fault(std::size_t offset, absl::string_view what) {
  return InvalidFieldError(ErrorReason::kCorruptEncodedData, "",
                           absl::StrCat("corrupt JPEG at byte ", offset, ": ", what));
}

// The walk's state between segments.
struct Walk {
  JpegHeader header;
  bool frame_seen = false;
  std::array<bool, 4> dc_defined{};
  std::array<bool, 4> ac_defined{};
};

absl::Status ReadFrame(const std::uint8_t* p, int length, std::size_t at, Walk& w) {
  if (w.frame_seen) return Fault(at, "a second frame header");
  if (length < 8) return Fault(at, "frame header too short");
  JpegHeader& h = w.header;
  h.precision = p[0];
  h.height = Read16(p + 1);
  h.width = Read16(p + 3);
  const int n = p[5];
  if (n < 1 || n > 4) return Fault(at, absl::StrCat(n, " components"));
  if (length != 6 + 3 * n) return Fault(at, "frame header length does not match its components");
  if (h.width < 1) return Fault(at, "width 0");
  h.components = n;
  for (int i = 0; i < n; ++i) {
    JpegComponent& c = h.component[i];
    c.id = p[6 + 3 * i];
    c.h = p[7 + 3 * i] >> 4;
    c.v = p[7 + 3 * i] & 15;
    c.quant_table = p[8 + 3 * i];
    if (c.h < 1 || c.h > 4 || c.v < 1 || c.v > 4) return Fault(at, "sampling factor not in 1..4");
    if (c.quant_table > 3) return Fault(at, "quantization table not in 0..3");
  }
  w.frame_seen = true;
  return absl::OkStatus();
}

absl::Status ReadHuffmanTables(const std::uint8_t* p, int length, std::size_t at, Walk& w) {
  int i = 0;
  while (i < length) {
    if (length - i < 17) return Fault(at, "Huffman table header past its segment");
    const int cls = p[i] >> 4;
    const int slot = p[i] & 15;
    if (cls > 1 || slot > 3) return Fault(at, "Huffman table class or slot out of range");
    int symbols = 0;
    for (int k = 1; k <= 16; ++k) symbols += p[i + k];
    if (symbols > 256 || length - i - 17 < symbols)
      return Fault(at, "Huffman table past its segment");
    (cls == 0 ? w.dc_defined : w.ac_defined)[slot] = true;
    i += 17 + symbols;
  }
  return absl::OkStatus();
}

// The scan header.
absl::Status ReadScan(const std::uint8_t* p, int length, std::size_t at, Walk& w) {
  if (!w.frame_seen) return Fault(at, "a scan before the frame header");
  if (length < 1) return Fault(at, "scan header too short");
  const int n = p[0];
  if (n < 1 || n > 4 || length != 4 + 2 * n) return Fault(at, "scan header length");
  JpegHeader& h = w.header;
  // A progressive DC scan needs no AC table, an AC scan no DC table, a DC refinement neither.
  const int ss = p[1 + 2 * n];
  const int se = p[2 + 2 * n];
  const int ah = p[3 + 2 * n] >> 4;
  const bool needs_dc = ss == 0 && ah == 0;
  const bool needs_ac = se > 0;
  for (int i = 0; i < n; ++i) {
    const int id = p[1 + 2 * i];
    bool found = false;
    for (int c = 0; c < h.components; ++c) found |= h.component[c].id == id;
    if (!found) return Fault(at, "a scan names a component the frame lacks");
    const int dc = p[2 + 2 * i] >> 4;
    const int ac = p[2 + 2 * i] & 15;
    // Huffman coding only (arithmetic-coded files are routed by their frame marker).
    if ((needs_dc && (dc > 3 || !w.dc_defined[dc])) ||
        (needs_ac && (ac > 3 || !w.ac_defined[ac]))) {
      h.tables_defined = false;
    }
  }
  ++h.scans;
  return absl::OkStatus();
}

// The MCUs of a single-scan (interleaved) frame, for the restart-marker count.
std::int64_t InterleavedMcus(const JpegHeader& h) {
  int hmax = 1, vmax = 1;
  for (int c = 0; c < h.components; ++c) {
    hmax = std::max(hmax, h.component[c].h);
    vmax = std::max(vmax, h.component[c].v);
  }
  if (h.components == 1) hmax = vmax = 1;  // a single component's MCU is one block
  const std::int64_t mx = (h.width + 8 * hmax - 1) / (8 * hmax);
  const std::int64_t my = (h.height + 8 * vmax - 1) / (8 * vmax);
  return mx * my;
}

// Skips the entropy-coded data from `i`; returns the offset of the marker that ends it, or the
// size when the data runs to the end. Counts restart markers and checks their sequence.
std::size_t SkipEntropyData(absl::Span<const std::uint8_t> b, std::size_t i, Walk& w,
                            std::int64_t* restarts) {
  int expected = 0;
  while (i < b.size()) {
    const void* ff = std::memchr(b.data() + i, 0xFF, b.size() - i);
    if (ff == nullptr) return b.size();
    i = static_cast<const std::uint8_t*>(ff) - b.data();
    if (i + 1 >= b.size()) return b.size();
    const int next = b[i + 1];
    if (next == 0x00) {
      i += 2;
    } else if (next == 0xFF) {
      i += 1;  // fill byte
    } else if (IsRst(next)) {
      if (next - 0xD0 != expected) w.header.restarts_consistent = false;
      expected = (expected + 1) & 7;
      ++*restarts;
      i += 2;
    } else {
      return i;
    }
  }
  return b.size();
}

}  // namespace

absl::StatusOr<JpegHeader> ReadJpegHeader(absl::Span<const std::uint8_t> b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != kSoi) return Fault(0, "no SOI marker");
  Walk w;
  std::size_t i = 2;
  while (true) {
    if (i >= b.size()) return Fault(i, "the file ends before EOI (truncated)");
    if (b[i] != 0xFF) return Fault(i, "expected a marker");
    while (i < b.size() && b[i] == 0xFF) ++i;  // fill bytes
    if (i >= b.size()) return Fault(i, "the file ends before EOI (truncated)");
    const int marker = b[i++];
    const std::size_t at = i - 2;
    if (marker == kEoi) break;
    if (marker == 0x00 || marker == kSoi || IsRst(marker)) {
      return Fault(at, absl::StrFormat("marker 0x%02X outside a scan", marker));
    }
    if (marker == 0x01) continue;  // TEM: no length
    // libjpeg refuses any marker it does not know (JPG, JPGn, DHP, EXP, 0x02-0xBF): so do we, or
    // a file TurboJPEG cannot even probe would be routed to nvJPEG (found by the fuzzer).
    const bool known = IsSof(marker) || marker == kDht || marker == 0xCC /* DAC */ ||
                       marker == kSos || marker == 0xDB /* DQT */ || marker == 0xDC /* DNL */ ||
                       marker == kDri || (marker >= 0xE0 && marker <= 0xEF) /* APPn */ ||
                       marker == 0xFE /* COM */;
    if (!known) return Fault(at, absl::StrFormat("unknown marker 0x%02X", marker));
    if (b.size() - i < 2) return Fault(at, "segment length past the end");
    const int length = Read16(b.data() + i);
    if (length < 2 || b.size() - i < static_cast<std::size_t>(length)) {
      return Fault(at, "segment past the end");
    }
    const std::uint8_t* p = b.data() + i + 2;
    const int n = length - 2;
    i += length;
    if (IsSof(marker)) {
      w.header.sof = marker;
      if (absl::Status s = ReadFrame(p, n, at, w); !s.ok()) return s;
    } else if (marker == kDht) {
      if (absl::Status s = ReadHuffmanTables(p, n, at, w); !s.ok()) return s;
    } else if (marker == kDri) {
      if (n != 2) return Fault(at, "restart interval segment length");
      w.header.restart_interval = Read16(p);
    } else if (marker == kApp14 && n >= 12 && std::memcmp(p, "Adobe", 5) == 0) {
      w.header.adobe_transform = p[11];
    } else if (marker == kSos) {
      if (absl::Status s = ReadScan(p, n, at, w); !s.ok()) return s;
      std::int64_t restarts = 0;
      i = SkipEntropyData(b, i, w, &restarts);
      JpegHeader& h = w.header;
      if (h.scans == 1 && h.restart_interval > 0 && h.height > 0) {
        const std::int64_t intervals =
            (InterleavedMcus(h) + h.restart_interval - 1) / h.restart_interval;
        if (restarts != intervals - 1) h.restarts_consistent = false;
      }
    }
  }
  if (!w.frame_seen) return Fault(i, "no frame header");
  if (w.header.scans == 0) return Fault(i, "no scan");
  return w.header;
}

std::string JpegGpuRefusal(const JpegHeader& h, bool hardware) {
  switch (h.sof) {
    case 0xC0:
    case 0xC1:
      break;
    case 0xC2:
      if (hardware) return "progressive";
      break;
    case 0xC3:
      return "lossless";
    default:
      return h.sof >= 0xC9 ? "arithmetic coding" : "hierarchical";
  }
  if (h.precision != 8) return absl::StrCat(h.precision, "-bit");
  if (h.height < 1) return "height from DNL";
  if (h.components == 4) return "CMYK";
  if (h.components != 1 && h.components != 3) return absl::StrCat(h.components, " components");
  if (h.components == 3) {
    if (h.adobe_transform == 0) return "RGB";
    if (h.component[0].id == 'R' && h.component[1].id == 'G' && h.component[2].id == 'B') {
      return "RGB";
    }
    // Luma carries the largest factors and both chroma planes are 1x1: 4:4:4, 4:2:2, 4:2:0,
    // 4:4:0, 4:1:1, 4:1:0.
    const JpegComponent& y = h.component[0];
    for (int c = 1; c < 3; ++c) {
      if (h.component[c].h != 1 || h.component[c].v != 1) return "sampling";
    }
    if (y.v > 2 || (y.h == 3)) return "sampling";
    if (hardware && y.h == 4) return "sampling 4:1:x";
  }
  if (hardware && h.scans != 1) return "several scans";
  if (!h.tables_defined) return "missing Huffman table";
  if (!h.restarts_consistent) return "restart markers";
  return "";
}

}  // namespace cuimg
