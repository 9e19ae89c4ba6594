// libFuzzer target: the client's DICOM series reader (DCMTK's dcmdata parser, our header checks
// and functional groups, GDCM's pixel decoders for every transfer syntax: JPEG, JPEG-LS, RLE,
// JPEG 2000, deflate; slice sorting, rescale to i16 or f32). The bytes are 1 to 3 slice files: byte
// 0 picks the count (1 + byte % 3), then every slice but the last is a 4-byte little-endian length
// and that many bytes, and the last slice is the rest. Whatever they hold: a status; a series it
// returns has one file per slice and a volume of exactly the extent it states. The volume bound is
// 2^22 voxels here, so that a header claiming a large compressed image stays inside libFuzzer's
// malloc limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/io/dicom_series.h"
#include "tests/fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cuimg::FuzzTempDir dir;
  if (size < 1) return 0;
  dir.Clear();
  const int slices = 1 + data[0] % 3;
  absl::Span<const std::uint8_t> rest(data + 1, size - 1);
  for (int i = 0; i < slices; ++i) {
    std::size_t length = rest.size();
    if (i + 1 < slices) {
      if (rest.size() < 4) return 0;
      length = std::size_t{rest[0]} | std::size_t{rest[1]} << 8 | std::size_t{rest[2]} << 16 |
               std::size_t{rest[3]} << 24;
      rest.remove_prefix(4);
      if (length > rest.size()) return 0;
    }
    dir.Write(absl::StrCat("slice", i, ".dcm"), rest.subspan(0, length));
    rest.remove_prefix(length);
  }
  cuimg::DicomReadOptions options;
  options.max_voxels = std::int64_t{1} << 22;
  absl::StatusOr<cuimg::DicomSeries> series = cuimg::ReadDicomSeries(dir.path().string(), options);
  if (!series.ok()) return 0;
  const cuimg::Extent& e = series->volume.extent();
  const cuimg::PixelType type = series->volume.type();
  const std::size_t depth = static_cast<std::size_t>(e.depth);
  if ((type != cuimg::PixelType::kI16 && type != cuimg::PixelType::kF32) ||
      !(series->extent == e) || e.depth < 1 || e.Pixels() > options.max_voxels ||
      (!series->multi_frame && e.depth > slices) || series->files.size() != depth ||
      series->frames.size() != depth || series->slopes.size() != depth ||
      series->volume.size_bytes() !=
          static_cast<std::size_t>(e.Pixels()) * cuimg::PixelSize(type)) {
    std::abort();
  }
  return 0;
}
