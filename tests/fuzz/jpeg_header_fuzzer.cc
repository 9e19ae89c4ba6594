// libFuzzer target: the JPEG marker walk that routes a file to the GPU decoder (jpeg_header.h).
// Whatever the bytes, the walk returns a status (ASan/UBSan watch it); where both the walk and
// ProbeImage (TurboJPEG's header read, from which admission and the GPU decoder's output buffer
// are sized) accept a file the walk routes to the GPU, they must read the same size and channels.
// Where TurboJPEG refuses a file the walk accepts (libjpeg is stricter about some segments), the
// server sends it to the CPU decoder, which refuses it (image_input.cc: DecodeOnDevice).
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
    if (!probe.ok()) continue;
    if (probe->extent.width != header->width || probe->extent.height != header->height ||
        probe->channels != header->components) {
      std::fprintf(stderr, "GPU-routed header %dx%dx%d disagrees with the probe's %dx%dx%d\n",
                   header->width, header->height, header->components,
                   static_cast<int>(probe->extent.width), static_cast<int>(probe->extent.height),
                   probe->channels);
      std::abort();
    }
  }
  return 0;
}
