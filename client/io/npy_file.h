// NumPy .npy files (format versions 1.0-3.0, as numpy.lib.format documents them): one-channel
// images of shape (H, W) and volumes of shape (D, H, W), dtypes u1, u2, i2, f4 of either byte
// order, C order. Written as version 1.0, little-endian, C order, the header padded so the data
// starts at a multiple of 64 bytes, as np.save does.
#ifndef CUIMG_CLIENT_IO_NPY_FILE_H_
#define CUIMG_CLIENT_IO_NPY_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cuimg/common/image.h"

namespace cuimg {

// INVALID_ARGUMENT, naming `name`, for anything else: Fortran order, other dtypes or ranks, a
// header or data size that does not add up.
absl::StatusOr<Image> ParseNpy(absl::Span<const std::uint8_t> bytes, const std::string& name);
// INVALID_ARGUMENT for more than one channel (a colour (H, W, C) array would read back as a
// volume).
absl::StatusOr<std::vector<std::uint8_t>> EncodeNpy(const ImageView& image);

}  // namespace cuimg

#endif  // CUIMG_CLIENT_IO_NPY_FILE_H_
