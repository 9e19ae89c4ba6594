// libFuzzer target: the client's NIfTI-1/NIfTI-2 reader (nifticlib's header parser and our checks,
// types, scaling and transforms). Byte 0 picks the name: odd .nii.gz (the rest is read through
// zlib), even .nii; the rest is the file. Whatever it holds: a status; a volume it returns has
// exactly the bytes its extent and type imply, and survives our writer and the reader again with
// the same pixels, spacing and transforms.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "client/io/nifti_file.h"
#include "tests/fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const cuimg::FuzzTempDir dir;
  if (size < 1) return 0;
  dir.Clear();
  const std::string path =
      dir.Write(data[0] % 2 ? "in.nii.gz" : "in.nii", absl::MakeConstSpan(data + 1, size - 1));
  constexpr std::int64_t kMaxVoxels = std::int64_t{1} << 22;
  absl::StatusOr<cuimg::NiftiVolume> volume = cuimg::ReadNifti(path, kMaxVoxels);
  if (!volume.ok()) return 0;
  const cuimg::Image& image = volume->image;
  const cuimg::Extent& e = image.extent();
  if (image.channels() != 1 || e.Pixels() < 1 || e.Pixels() > kMaxVoxels ||
      image.size_bytes() != static_cast<std::size_t>(e.Pixels()) * cuimg::PixelSize(image.type())) {
    std::abort();
  }
  const std::string out = (dir.path() / "out.nii").string();
  if (!cuimg::WriteNifti(out, image.view(), volume->spacing, volume->geometry, &volume->transforms)
           .ok()) {
    return 0;  // e.g. a spacing nifticlib will not write; never a crash
  }
  absl::StatusOr<cuimg::NiftiVolume> again = cuimg::ReadNifti(out, kMaxVoxels);
  if (!again.ok() || again->image.type() != image.type() || again->image.extent() != e ||
      std::memcmp(again->image.bytes(), image.bytes(), image.size_bytes()) != 0 ||
      again->transforms.qform_code != volume->transforms.qform_code ||
      again->transforms.sform_code != volume->transforms.sform_code) {
    std::abort();
  }
  return 0;
}
