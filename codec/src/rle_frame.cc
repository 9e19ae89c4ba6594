// DICOM RLE Lossless (PS3.5 G): a 64-byte header of segment offsets, then one PackBits segment
// per byte of each sample, most significant byte first. Lenient where pydicom is (a run cut
// short by its segment's end copies what is there, bytes past the frame's pixels are ignored, the
// first offset need not be 64), strict where it is (the segment count, a segment that decodes to
// fewer bytes than the frame has pixels).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "frame_internal.h"

namespace cuimg {
namespace {

std::uint32_t ReadLe32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
         (std::uint32_t{p[3]} << 24);
}

// Decodes the PackBits `segment` into `out`, byte k going to out[k * stride], until `count`
// bytes are written or the segment ends. Returns the bytes written.
std::size_t UnpackSegment(absl::Span<const std::uint8_t> segment, std::size_t count,
                          std::size_t stride, std::uint8_t* out) {
  std::size_t in = 0, written = 0;
  while (in < segment.size() && written < count) {
    const int n = static_cast<std::int8_t>(segment[in++]);
    if (n >= 0) {  // n + 1 literal bytes
      std::size_t run = std::min<std::size_t>(static_cast<std::size_t>(n) + 1, segment.size() - in);
      run = std::min(run, count - written);
      for (std::size_t k = 0; k < run; ++k) out[(written + k) * stride] = segment[in + k];
      in += run;
      written += run;
    } else if (n != -128) {  // the next byte 1 - n times; -128 is a no-op
      if (in >= segment.size()) break;
      const std::uint8_t value = segment[in++];
      const std::size_t run =
          std::min<std::size_t>(static_cast<std::size_t>(1 - n), count - written);
      for (std::size_t k = 0; k < run; ++k) out[(written + k) * stride] = value;
      written += run;
    }
  }
  return written;
}

}  // namespace

absl::Status DecodeRleFrame(const FrameDescription& d, absl::Span<const std::uint8_t> frame,
                            absl::Span<std::uint8_t> out) {
  if (frame.size() < 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("an RLE frame of ", frame.size(), " bytes, shorter than its 64-byte header"));
  }
  const int bytes_per_sample = d.bits_allocated / 8;
  const std::uint32_t segments = ReadLe32(frame.data());
  if (segments != static_cast<std::uint32_t>(bytes_per_sample * d.samples_per_pixel)) {
    return absl::InvalidArgumentError(
        absl::StrCat("an RLE header of ", segments, " segments for ", d.bits_allocated,
                     "-bit samples (", bytes_per_sample * d.samples_per_pixel, " expected)"));
  }
  const std::size_t count = static_cast<std::size_t>(d.rows) * d.columns;
  // Each sample's bytes least significant first, then the stored-value rule.
  std::vector<std::uint8_t> raw(count * bytes_per_sample);
  for (std::uint32_t s = 0; s < segments; ++s) {
    const std::size_t begin = ReadLe32(frame.data() + 4 + 4 * s);
    const std::size_t end = s + 1 < segments ? ReadLe32(frame.data() + 8 + 4 * s) : frame.size();
    if (begin < 64 || begin > end || end > frame.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RLE segment ", s, " at bytes [", begin, ", ", end, ") of ", frame.size()));
    }
    // Segment s holds byte (bytes_per_sample - 1 - s) of each little-endian sample.
    const std::size_t written =
        UnpackSegment(frame.subspan(begin, end - begin), count, bytes_per_sample,
                      raw.data() + (bytes_per_sample - 1 - static_cast<int>(s)));
    if (written < count) {
      return absl::InvalidArgumentError(absl::StrCat("RLE segment ", s, " decodes to ", written,
                                                     " bytes for ", count, " pixels"));
    }
  }
  const StoredBits b = StoredBitsOf(d);
  if (bytes_per_sample == 1) {
    StoreSamples(b, raw.data(), count, 0, out);
  } else {
    std::vector<std::uint16_t> words(count);
    for (std::size_t i = 0; i < count; ++i) {
      words[i] = static_cast<std::uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
    }
    StoreSamples(b, words.data(), count, 0, out);
  }
  return absl::OkStatus();
}

}  // namespace cuimg
