// libFuzzer target: the client's TIFF reader (libtiff from memory, one-channel pages into an image
// or volume). Whatever the bytes: a status, no allocation past the pixel limit.
#include <cstddef>
#include <cstdint>

#include "client/io/tiff_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)cuimg::ReadTiffBytes(absl::MakeConstSpan(data, size), "fuzz.tiff", std::int64_t{1} << 22);
  return 0;
}
