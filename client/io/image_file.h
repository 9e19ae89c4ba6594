// Image files for the client, chosen by extension: .png, .jpg/.jpeg, .tif/.tiff.
#ifndef CUIMG_CLIENT_IO_IMAGE_FILE_H_
#define CUIMG_CLIENT_IO_IMAGE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cuimg/common/image.h"

namespace cuimg {

absl::StatusOr<std::vector<std::uint8_t>> ReadFileBytes(const std::string& path);
// Through WriteAtomically (atomic_output.h): `path` holds all of `bytes` or is left as it was.
absl::Status WriteFileBytes(const std::string& path, const std::vector<std::uint8_t>& bytes);

// Reads a PNG or JPEG (8- or 16-bit; colour as BGR) or a one-channel TIFF (8/16-bit, f32).
absl::StatusOr<Image> ReadImageFile(const std::string& path);
// Writes by extension: .png (U8/U16), .jpg/.jpeg (U8), .tif/.tiff (any type, one channel).
absl::Status WriteImageFile(const std::string& path, const ImageView& image);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_IMAGE_FILE_H_
