// TIFF files through libtiff: 8/16-bit gray images and 32-bit float images (gradients), one
// channel; multi-page files hold volumes (one page per slice).
#ifndef CUIMG_CLIENT_IO_TIFF_FILE_H_
#define CUIMG_CLIENT_IO_TIFF_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"

namespace cuimg {

// U8, U16, I16 or F32, one channel; depth > 1 writes one page per slice. Written through
// WriteAtomically (atomic_output.h): whole or not at all.
absl::Status WriteTiff(const std::string& path, const ImageView& image);
// Reads a one-channel TIFF of 8/16-bit (unsigned or signed) or 32-bit float samples; all pages
// of equal size become a volume. INVALID_ARGUMENT when the pages hold more than `max_pixels`
// (checked before the pixels are allocated).
inline constexpr std::int64_t kMaxTiffPixels = std::int64_t{1} << 30;
absl::StatusOr<Image> ReadTiff(const std::string& path, std::int64_t max_pixels = kMaxTiffPixels);
// The same from a file's bytes; `name` labels errors.
absl::StatusOr<Image> ReadTiffBytes(absl::Span<const std::uint8_t> bytes, const std::string& name,
                                    std::int64_t max_pixels = kMaxTiffPixels);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_TIFF_FILE_H_
