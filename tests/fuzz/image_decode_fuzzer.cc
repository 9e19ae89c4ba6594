// libFuzzer target: the server's PNG/JPEG decoders (libpng, TurboJPEG) and the header probe that
// admission trusts. Whatever the bytes, decoding returns a status; when it succeeds, the image
// has exactly the size and layout the probe announced (admission sized it from that), and the
// strip-parallel JPEG decode (the server's) gives the same status and pixels as the serial one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cuimg/codec/decode_threads.h"
#include "cuimg/codec/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::Span<const std::uint8_t> bytes(data, size);
  cuimg::DecodeLimits limits;
  limits.max_pixels = 1 << 22;  // 4 MP: fuzzing explores formats, not memory
  limits.max_side = 1 << 14;
  absl::StatusOr<cuimg::ImageView> probe = cuimg::ProbeImage(bytes);
  absl::StatusOr<cuimg::Image> image = cuimg::DecodeImage(bytes, limits);
  static cuimg::DecodeThreads threads(3);
  absl::StatusOr<cuimg::Image> in_strips = cuimg::DecodeImage(bytes, limits, &threads);
  if (image.status() != in_strips.status() ||
      (image.ok() && (image->size_bytes() != in_strips->size_bytes() ||
                      std::memcmp(image->bytes(), in_strips->bytes(), image->size_bytes()) != 0))) {
    std::fprintf(stderr, "strip decoding disagrees with the serial decode\n");
    std::abort();
  }
  if (!image.ok()) return 0;
  if (!probe.ok() || probe->extent != image->extent() || probe->channels != image->channels() ||
      probe->type != image->type()) {
    std::fprintf(stderr, "probe disagrees with the decoded image (probe %s)\n",
                 probe.ok() ? "ok" : std::string(probe.status().message()).c_str());
    std::abort();
  }
  return 0;
}
