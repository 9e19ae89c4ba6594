#include "client/io/image_file.h"

#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/io/atomic_output.h"
#include "client/io/tiff_file.h"
#include "cuimg/codec/image_codec.h"
#include "cuimg/common/status_macros.h"

namespace cuimg {

absl::StatusOr<std::vector<std::uint8_t>> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  // In one read of the size the file has: a byte at a time, a 157 MB volume took 0.3 s.
  std::vector<std::uint8_t> bytes;
  in.seekg(0, std::ios::end);
  if (const std::streamoff size = in ? std::streamoff(in.tellg()) : -1; size > 0 && in.seekg(0)) {
    bytes.resize(static_cast<std::size_t>(size));
    in.read(reinterpret_cast<char*>(bytes.data()), size);
    bytes.resize(static_cast<std::size_t>(in.gcount()));
  } else {
    in.clear();
    in.seekg(0);  // fails on a pipe, which has not moved
    in.clear();
  }
  // What the size did not tell (a pipe, a file that grew).
  if (!in.eof()) bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), {});
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  return bytes;
}

absl::Status WriteFileBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  return WriteAtomically(path, OutputKind::kFile, [&](const std::string& temp) {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return absl::PermissionDeniedError(absl::StrCat(temp, ": cannot create"));
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();  // flushes: a failure shows here, not in the destructor
    if (!out) return absl::DataLossError(absl::StrCat(temp, ": write failed"));
    return absl::OkStatus();
  });
}

absl::StatusOr<Image> ReadImageFile(const std::string& path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".tif") || absl::EndsWith(lower, ".tiff")) return ReadTiff(path);
  CUIMG_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadFileBytes(path));
  absl::StatusOr<Image> image = DecodeImage(bytes);
  if (!image.ok()) {
    return absl::Status(image.status().code(), absl::StrCat(path, ": ", image.status().message()));
  }
  return image;
}

absl::Status WriteImageFile(const std::string& path, const ImageView& image) {
  const std::string lower = absl::AsciiStrToLower(path);
  absl::StatusOr<std::vector<std::uint8_t>> bytes;
  if (absl::EndsWith(lower, ".png")) {
    bytes = EncodePng(image);
  } else if (absl::EndsWith(lower, ".jpg") || absl::EndsWith(lower, ".jpeg")) {
    bytes = EncodeJpeg(image);
  } else if (absl::EndsWith(lower, ".tif") || absl::EndsWith(lower, ".tiff")) {
    return WriteTiff(path, image);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unknown extension (use .png, .jpg or .tif)"));
  }
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(), absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteFileBytes(path, *bytes);
}

}  // namespace cuimg
