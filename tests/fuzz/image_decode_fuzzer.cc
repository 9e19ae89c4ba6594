// libFuzzer target: the server's PNG/JPEG decoders (libpng, TurboJPEG) and the header probe that
// admission trusts. Whatever the bytes, decoding returns a status; and when it succeeds, the
// image has exactly the size and layout the probe announced (admission sized it from that).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuimg/codec/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::Span<const std::uint8_t> bytes(data, size);
  cuimg::DecodeLimits limits;
  limits.max_pixels = 1 << 22;  // 4 MP: fuzzing explores formats, not memory
  limits.max_side = 1 << 14;
  absl::StatusOr<cuimg::ImageView> probe = cuimg::ProbeImage(bytes);
  absl::StatusOr<cuimg::Image> image = cuimg::DecodeImage(bytes, limits);
  if (!image.ok()) return 0;
  if (!probe.ok() || probe->extent != image->extent() || probe->channels != image->channels() ||
      probe->type != image->type()) {
    std::fprintf(stderr, "probe disagrees with the decoded image (probe %s)\n",
                 probe.ok() ? "ok" : std::string(probe.status().message()).c_str());
    std::abort();
  }
  return 0;
}
