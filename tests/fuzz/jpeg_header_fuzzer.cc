// libFuzzer target: the JPEG marker walk that routes a file to the GPU decoder (jpeg_header.h).
// Whatever the bytes, the walk returns a status; a file it would give to the GPU decoder must
// have the size and channels that ProbeImage (TurboJPEG's header read, from which admission and
// the GPU decoder's output buffer are sized) announces, or nvJPEG could write past the buffer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "cuimg/codec/image_codec.h"
#include "cuimg/codec/jpeg_header.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const absl::Span<const std::uint8_t> bytes(data, size);
  absl::StatusOr<cuimg::JpegHeader> header = cuimg::ReadJpegHeader(bytes);
  if (!header.ok()) return 0;
  for (bool hardware : {false, true}) {
    if (!cuimg::JpegGpuRefusal(*header, hardware).empty()) continue;
    absl::StatusOr<cuimg::ImageView> probe = cuimg::ProbeImage(bytes);
    if (!probe.ok() || probe->extent.width != header->width ||
        probe->extent.height != header->height || probe->channels != header->components) {
      std::fprintf(stderr, "GPU-routed header %dx%dx%d disagrees with the probe (%s)\n",
                   header->width, header->height, header->components,
                   probe.ok() ? "ok" : std::string(probe.status().message()).c_str());
      std::abort();
    }
  }
  return 0;
}
