// libFuzzer target: the client's NRRD reader (Teem's parser and decoders behind our checks). The
// bytes are one .nrrd file. Whatever they hold: a status; a volume it returns is within the
// reader's bounds, its spacing finite and >= 0, and it survives our writer and the reader again
// unchanged (sizes, type, pixels).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "client/io/nrrd_file.h"
#include "tests/fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cuimg::FuzzTempDir dir;
  dir.Clear();
  const std::string path = dir.Write("in.nrrd", absl::MakeConstSpan(data, size));
  absl::StatusOr<cuimg::NrrdVolume> volume = cuimg::ReadNrrd(path);
  if (!volume.ok()) return 0;
  const cuimg::Image& image = volume->image;
  const cuimg::Extent& e = image.extent();
  if (image.channels() != 1 || e.width < 1 || e.height < 1 || e.depth < 1 ||
      e.Pixels() > (std::int64_t{1} << 30)) {
    std::abort();
  }
  for (double s : {volume->spacing.x_mm, volume->spacing.y_mm, volume->spacing.z_mm}) {
    if (!(std::isfinite(s) && s >= 0)) std::abort();
  }
  const std::string copy = (dir.path() / "copy.nrrd").string();
  if (!cuimg::WriteNrrd(copy, image.view(), volume->spacing, cuimg::NrrdEncoding::kRaw).ok()) {
    std::abort();
  }
  absl::StatusOr<cuimg::NrrdVolume> again = cuimg::ReadNrrd(copy);
  if (!again.ok() || again->image.type() != image.type() || again->image.extent() != e ||
      std::memcmp(again->image.bytes(), image.bytes(), image.size_bytes()) != 0) {
    std::abort();
  }
  return 0;
}
