// libFuzzer target: the client's .npy parser. Whatever the bytes: a status; an image it returns
// has exactly the bytes its shape and dtype imply, and survives our writer and the parser again
// unchanged (shape, type, pixels).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "client/io/npy_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  absl::StatusOr<cuimg::Image> image = cuimg::ParseNpy(absl::MakeConstSpan(data, size), "fuzz.npy");
  if (!image.ok()) return 0;
  const cuimg::Extent& e = image->extent();
  if (image->channels() != 1 || image->size_bytes() != static_cast<std::size_t>(e.Pixels()) *
                                                           cuimg::PixelSize(image->type())) {
    std::abort();
  }
  absl::StatusOr<std::vector<std::uint8_t>> encoded = cuimg::EncodeNpy(image->view());
  if (!encoded.ok()) std::abort();
  absl::StatusOr<cuimg::Image> again = cuimg::ParseNpy(*encoded, "again.npy");
  if (!again.ok() || again->type() != image->type() || again->extent() != e ||
      std::memcmp(again->bytes(), image->bytes(), image->size_bytes()) != 0) {
    std::abort();
  }
  return 0;
}
